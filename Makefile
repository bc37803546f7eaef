# syncagent — see README.md. `make demo` to see it work, `make test` to check it.
SWIFT ?= swift
BIN := $(CURDIR)/.build/release/syncagent
export SYNCAGENT := $(BIN)

.PHONY: all deps build test unit e2e bench demo soak clean

all: build

# A fresh machine may lack libgit2's headers, pkg-config, git itself, or the servers the hub tests
# start (sshd from openssh-server, lighttpd for smart HTTP): install them (as root).
DEB_PACKAGES := libgit2-dev pkg-config git openssh-server openssh-client lighttpd
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "run 'sudo apt-get install -y$$missing' first" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

build: deps
	$(SWIFT) build -c release

unit: deps
	$(SWIFT) test

e2e: build
	bash e2e/run.sh

test: unit e2e

bench: build
	bash bench/run.sh

demo: build
	bash Samples/demo.sh

# The long randomized convergence run (e2e/convergence.py): SEED, ROUNDS, DEVICES (3..5) and
# TOPOLOGY (mesh|star) come from make variables or the environment. A failing seed belongs in
# e2e/convergence-seeds.txt, which `make e2e` replays (e2e/test_convergence.sh).
soak: build
	python3 e2e/convergence.py --binary $(BIN) --seed $${SEED:-$$(date +%s)} --rounds $${ROUNDS:-20} \
		--devices $${DEVICES:-4} --topology $${TOPOLOGY:-mesh}

clean:
	rm -rf .build

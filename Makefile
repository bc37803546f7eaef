# syncagent — see README.md. `make demo` to see it work, `make test` to check it.
SWIFT ?= swift
BIN := $(CURDIR)/.build/release/syncagent
export SYNCAGENT := $(BIN)

.PHONY: all deps build test unit e2e bench demo demo-apps soak soak-transfer clean install uninstall man

all: build

# A fresh machine may lack libgit2's headers, pkg-config, git itself, or the servers the hub tests
# start (sshd from openssh-server, lighttpd for smart HTTP, gitolite3): install them (as root).
DEB_PACKAGES := libgit2-dev libdeflate-dev libssl-dev pkg-config git openssh-server openssh-client lighttpd gitolite3 fuse3 python3-pyfuse3 strace tmux chromium chromium-driver python3-selenium
deps:
	@missing=""; \
	for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "run 'sudo apt-get install -y$$missing' first" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The agent uses FoundationEssentials only; TOMLKit imports Foundation, which would load Foundation,
# its internationalization and ICU into every agent (~8 MB resident) for nothing. These flags stop
# that import from linking them; a program that does use Foundation (the samples, the manual's
# generator) still gets it, linked as needed.
NO_FOUNDATION := $(foreach lib,Foundation FoundationInternationalization,-Xswiftc -Xfrontend -Xswiftc -disable-autolink-library -Xswiftc -Xfrontend -Xswiftc $(lib)) \
	-Xlinker --as-needed -Xlinker -lFoundation -Xlinker -lFoundationInternationalization

build: deps
	$(SWIFT) build -c release $(NO_FOUNDATION)

# Only the test bundle and what it needs (not the CLI, the agent or the samples) in debug mode.
unit: deps
	$(SWIFT) build --product syncagentPackageTests
	$(SWIFT) test --skip-build

e2e: build
	bash e2e/run.sh

test: unit e2e

# PEERS=1 adds the same workloads through Unison (installed from Debian's packages when missing);
# PEERS=only runs just those. BENCH_SCALE=0.1 for a quick run. See bench/bench.py and bench/peers.py.
bench: build
	bash bench/run.sh

demo: build
	bash Samples/demo.sh

# The sample apps built only on SyncAgentKit: the phone app embeds the agent, the watch app is a
# client of `syncagent run`; a value, a workout and a typed conflict go between them.
demo-apps: build
	bash Samples/demo-apps.sh

# The whole reconciliation table (e2e/reconcile_table.py): every ancestor x phone x watch state at
# one path, absent, files, links, directories, FIFOs and unreadable ones (500 rows), in both merge
# orders (~12 minutes on two loaded cores). `make e2e` runs its short table (test_reconcile_table).
.PHONY: soak-reconcile
soak-reconcile: build
	FULL=1 bash e2e/test_reconcile_table.sh

# The long randomized convergence run (e2e/convergence.py): SEED, ROUNDS, DEVICES (3..5) and
# TOPOLOGY (mesh|star) come from make variables or the environment; then HUB_DEVICES (24) devices
# through one hub for HUB_ROUNDS (8). A failing seed belongs in
# e2e/convergence-seeds.txt, which `make e2e` replays (e2e/test_convergence.sh).
# Then the long transfer matrix (soak-transfer).
soak: build soak-reconcile
	python3 e2e/convergence.py --binary $(BIN) --seed $${SEED:-$$(date +%s)} --rounds $${ROUNDS:-20} \
		--devices $${DEVICES:-4} --topology $${TOPOLOGY:-mesh}
	python3 e2e/convergence.py --binary $(BIN) --seed $${SEED:-$$(date +%s)} --rounds $${HUB_ROUNDS:-8} \
		--devices $${HUB_DEVICES:-24} --topology hub
	$(SOAK_TRANSFER)
	$(SOAK_POWERCUT)

# Power cuts under a running agent (e2e/powercut.py, issue 43): the phone's data and state on cutfs
# (e2e/cutfs.py, a FUSE file system that keeps what a disk keeps across a power cut), CUTS (1000)
# cuts from SEED, MODEL strict (only what is fsynced survives) or journal (ext4's journal). A failing
# seed belongs in e2e/powercut-seeds.txt, which `make e2e` replays (e2e/test_powercut.sh).
# The long run spreads its cuts over five runs (`--mix`: plain, hub + set, journal + set, hub-only +
# set, journal + hub); MODEL=strict or journal runs one model only. Every seed of
# powercut-seeds.txt is replayed first, the long ones marked `soak` too.
SOAK_POWERCUT = SYNCAGENT=$(BIN) POWERCUT_SOAK=1 POWERCUT_PART=all bash e2e/test_powercut.sh && \
	python3 e2e/powercut.py --binary $(BIN) --seed $${SEED:-$$(date +%s)} --cuts $${CUTS:-1000} \
		$$(if [ -n "$${MODEL:-}" ]; then echo --model $$MODEL; else echo --mix; fi) --timeout 120
.PHONY: soak-powercut
soak-powercut: build
	$(SOAK_POWERCUT)

# Phone -> watch over every transport (path, file://, git daemon, ssh, http, hub) with the heaviest
# content on every row: 12,000 random files and big blobs around every limit (~140 MiB), then a
# second heavy batch while the phones pack the first (several minutes). `make e2e` runs the short form.
SOAK_TRANSFER = FULL=1 bash e2e/test_transfer_matrix.sh
soak-transfer: build
	$(SOAK_TRANSFER)

# `make install` (PREFIX, default /usr/local; PREFIX=~/.local for one user; DESTDIR for packaging):
# the binary, the man pages (swift-argument-parser's generate-manual plugin), bash/zsh/fish
# completions (from the binary itself) and the systemd user unit. `make uninstall` removes them.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(DESTDIR)$(PREFIX)/bin
MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
MAN5DIR := $(DESTDIR)$(PREFIX)/share/man/man5
BASHDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
UNITDIR := $(DESTDIR)$(PREFIX)/lib/systemd/user
# swift-argument-parser's plugin writes the pages under .build/plugins (it picks the directory).
# man/finish.py turns them into clean mdoc (no empty lines, examples as literal blocks, a COMMANDS
# and a FILES section in syncagent(1)) under .build/man; man/syncagent.toml.5 is the config page.
man: build
	$(SWIFT) package $(NO_FOUNDATION) generate-manual --configuration release --multi-page >/dev/null
	@dir=$$(dirname "$$(find $(CURDIR)/.build/plugins -path '*GenerateManual*' -name 'syncagent.1' | head -1)"); \
		[ -f "$$dir/syncagent.1" ] || { echo "generate-manual wrote no syncagent.1 under .build/plugins" >&2; exit 1; }; \
		rm -rf $(CURDIR)/.build/man && python3 man/finish.py "$$dir" $(CURDIR)/.build/man

install: man
	install -d "$(BINDIR)" "$(MANDIR)" "$(MAN5DIR)" "$(BASHDIR)" "$(ZSHDIR)" "$(FISHDIR)" "$(UNITDIR)"
	install -m 0755 $(BIN) "$(BINDIR)/syncagent"
	install -m 0755 $(CURDIR)/.build/release/syncagent-web "$(BINDIR)/syncagent-web"
	install -m 0644 $(CURDIR)/.build/man/syncagent*.1 "$(MANDIR)/"
	install -m 0644 man/syncagent.toml.5 "$(MAN5DIR)/"
	$(BIN) --generate-completion-script bash > "$(BASHDIR)/syncagent"
	$(BIN) --generate-completion-script zsh > "$(ZSHDIR)/_syncagent"
	$(BIN) --generate-completion-script fish > "$(FISHDIR)/syncagent.fish"
	sed 's|@BINDIR@|$(PREFIX)/bin|' Samples/syncagent.service > "$(UNITDIR)/syncagent.service"
	@echo "installed syncagent in $(BINDIR); man syncagent; systemd unit: $(UNITDIR)/syncagent.service"

uninstall:
	rm -f "$(BINDIR)/syncagent" "$(BINDIR)/syncagent-web" "$(MANDIR)/syncagent.1" "$(MANDIR)"/syncagent.*.1 "$(MAN5DIR)/syncagent.toml.5" "$(BASHDIR)/syncagent" \
		"$(ZSHDIR)/_syncagent" "$(FISHDIR)/syncagent.fish" "$(UNITDIR)/syncagent.service"

clean:
	rm -rf .build

#!/usr/bin/env bash
# `make bench`: the syncagent benchmark against git add -A && git commit. See bench/bench.py.
# Needs SYNCAGENT (the Makefile exports the release binary's absolute path), python3 and git.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SYNCAGENT:?set SYNCAGENT to the syncagent binary (make bench does)}"
command -v python3 >/dev/null || { echo "bench: python3 is required" >&2; exit 2; }
command -v git >/dev/null || { echo "bench: git is required" >&2; exit 2; }
exec python3 "$here/bench.py" "$@"

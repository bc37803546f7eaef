#!/usr/bin/env bash
# The other half of e2e/test_powercut.sh's runs (POWERCUT_PART=b), so that `make e2e` runs the two
# halves side by side: see test_powercut.sh.
POWERCUT_PART=b exec bash "$(dirname "$0")/test_powercut.sh"

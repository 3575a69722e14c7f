#!/bin/sh
# All tests: the engine's C unit tests, then pytest against the freshly built engine
# in two passes: the tests that may share the CPUs on two workers (pytest-xdist), then
# those that need the machine to themselves, alone (tests/conftest.py ONE_AT_A_TIME).
# Run scripts/setup.sh first (the README's test command does both).
set -eu
cd "$(dirname "$0")/.."
ninja -C build/engine >/dev/null
meson test -C build/engine --print-errorlogs
export RTGAUGE_ENGINE="$PWD/build/engine/src/rtgauge-engine"
shared=0
.venv/bin/python -m pytest -q -n 2 --machine-tests none tests "$@" || shared=$?
alone=0
.venv/bin/python -m pytest -q --machine-tests only tests "$@" || alone=$?
# 5: no test selected in that pass (a -k or a file that lies in the other one)
[ "$shared" -eq 5 ] && [ "$alone" -ne 5 ] && shared=0
[ "$alone" -eq 5 ] && [ "$shared" -ne 5 ] && alone=0
[ "$shared" -ne 0 ] && exit "$shared"
exit "$alone"

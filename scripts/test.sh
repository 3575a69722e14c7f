#!/bin/sh
# All tests: the engine's C unit tests, then pytest against the freshly built engine
# in two passes: the tests that may share the CPUs on three workers (pytest-xdist: they
# mostly wait on runs, servers and boards, so a third worker fills a 2-vCPU machine's
# idle CPU), then those that need the machine to themselves, alone (tests/conftest.py ONE_AT_A_TIME,
# and the tests marked `alone`). The shared pass hands out whole files (--dist loadfile):
# a file's module fixtures (an engine build, a browser, two SSH boards) are made once,
# not once on each worker.
# Run scripts/setup.sh first (the README's test command does both).
# The emulated lab's tests (tests/test_emulab.py, marker emulab: four Debian systems
# booted under qemu-system) run in the alone pass: under 5 min on a 2-vCPU machine with
# the image cache warm, the first run also builds the images as root (docs/lab.md,
# "Where it stands"). `-m "not emulab"` after the command leaves them out; alone:
#   RTGAUGE_ENGINE=build/engine/src/rtgauge-engine .venv/bin/python -m pytest -m emulab tests/test_emulab.py
set -eu
cd "$(dirname "$0")/.."
ninja -C build/engine >/dev/null
meson test -C build/engine --print-errorlogs
export RTGAUGE_ENGINE="$PWD/build/engine/src/rtgauge-engine"
# The tests run `python -m rtgauge` from the source tree hundreds of times; compiled
# once here, its modules are not compiled again by every one of them (where
# PYTHONDONTWRITEBYTECODE is set, as in CI containers, Python never caches them itself).
.venv/bin/python -m compileall -q rtgauge >/dev/null
shared=0
.venv/bin/python -m pytest -q -n 3 --dist loadfile --machine-tests none -m "not emulab" tests "$@" || shared=$?
alone=0
.venv/bin/python -m pytest -q --machine-tests only tests "$@" || alone=$?
# 5: no test selected in that pass (a -k or a file that lies in the other one)
[ "$shared" -eq 5 ] && [ "$alone" -ne 5 ] && shared=0
[ "$alone" -eq 5 ] && [ "$shared" -ne 5 ] && alone=0
[ "$shared" -ne 0 ] && exit "$shared"
exit "$alone"

#!/bin/sh
# All tests: the engine's C unit tests, then pytest against the freshly built engine,
# on two workers (pytest-xdist; tests/conftest.py keeps the ones that need the
# machine to themselves on one worker, one after another).
# Run scripts/setup.sh first (the README's test command does both).
set -eu
cd "$(dirname "$0")/.."
ninja -C build/engine >/dev/null
meson test -C build/engine --print-errorlogs
RTGAUGE_ENGINE="$PWD/build/engine/src/rtgauge-engine" .venv/bin/python -m pytest -q -n 2 --dist loadgroup tests "$@"

#!/bin/sh
# All tests: the engine's C unit tests, then pytest against the freshly built engine.
# Run scripts/setup.sh first (the README's test command does both).
set -eu
cd "$(dirname "$0")/.."
ninja -C build/engine >/dev/null
meson test -C build/engine --print-errorlogs
RTGAUGE_ENGINE="$PWD/build/engine/src/rtgauge-engine" .venv/bin/python -m pytest -q tests "$@"

#!/bin/sh
# All tests: the engine's C unit tests, then pytest against the freshly built engine in
# the four passes of tests/conftest.py (PASSES):
#   background  the tests that start no real-time work, on two pytest-xdist workers, from
#               the start to the end, beside the two passes below. It runs without
#               CAP_SYS_NICE, so a test there that tries to start real-time work fails
#               instead of disturbing a measurement; its output is printed at the end.
#   alone       the tests that need the machine's real-time side to themselves, one
#               after another;
#   shared      then the tests that start real-time work but hold on a loaded machine, on
#               four workers;
#   lab         last, alone: the emulated lab (tests/test_emulab.py, marker emulab: four
#               Debian systems booted under qemu-system; under 5 min on a 2-vCPU machine
#               with the image cache warm, the first run also builds the images as root,
#               docs/lab.md "Where it stands"). `-m "not emulab"` after the command
#               leaves them out. The few tests marked `sole` run here too: they need no
#               other rtgauge command beside them.
# The xdist passes hand out whole files (--dist loadfile): a file's module fixtures (an
# engine build, a browser, two SSH boards) are made once, not once on each worker.
# Arguments go to every pass (a -k or a file that lies in one pass selects nothing in the
# others, which is not a failure). Ctrl-C (or SIGTERM or SIGHUP to this script) stops
# every pass, exit status 130.
# Run scripts/setup.sh --all first (the README's test command does both): the tests need
# the test extra and build/engine, which the main job's `scripts/setup.sh` leaves out.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f build/engine/build.ninja ] || ! .venv/bin/python -c "import pytest, xdist, statsmodels" 2>/dev/null; then
    echo "test: the tests need the test extra and build/engine; run scripts/setup.sh --all first." >&2
    exit 2
fi
ninja -C build/engine >/dev/null
meson test -C build/engine --print-errorlogs
export RTGAUGE_ENGINE="$PWD/build/engine/src/rtgauge-engine"
# The tests run `python -m rtgauge` from the source tree hundreds of times; compiled
# once here, its modules are not compiled again by every one of them (where
# PYTHONDONTWRITEBYTECODE is set, as in CI containers, Python never caches them itself).
.venv/bin/python -m compileall -q rtgauge >/dev/null
# Nor, where it is set, would pytest cache the test modules it rewrites (its assert
# rewriting, about 5 CPU seconds for the suite's 220 modules): every pytest process,
# seven of them, each xdist worker, would do it again. Unset for the passes, the first to
# import a module caches it (in tests/__pycache__, which git ignores) for the others.
unset PYTHONDONTWRITEBYTECODE

out=$(mktemp -d)
pids=""
stop() {
    # Every pytest runs in a session of its own (start, below), so a terminal's Ctrl-C
    # reaches this script alone, as a SIGINT or SIGTERM sent to it does: each is passed on
    # once, as the SIGINT pytest stops cleanly on. Another one while they stop is passed
    # on again (pytest then hurries, as on a second Ctrl-C).
    # shellcheck disable=SC2086
    trap '[ -z "$pids" ] || kill -INT $pids 2>/dev/null || true' INT TERM HUP
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -INT $pids 2>/dev/null || true
    until wait; do :; done
    echo "background pass (stopped):"
    cat "$out/background" 2>/dev/null || true
    rm -rf "$out"
    exit 130
}
trap 'stop' INT TERM HUP
trap 'rm -rf "$out"' EXIT

# pytest in the background, in a session of its own (see stop), with SIGINT at its
# default (a shell without job control starts background commands with it ignored, and
# pytest would then never stop on it). setsid does not fork here: a background command
# of a shell without job control is never a process group leader, so $! is pytest.
# start NICE CMD...: NICE, when not empty, is CMD's nice and its autogroup's (below); the
# process's nice is given relative to the script's, as `nice` takes it, for a kernel
# without autogroup.
start() {
    n=$1
    shift
    [ -z "$n" ] || set -- nice -n "$((n - $(nice)))" "$@"
    # shellcheck disable=SC2016
    env --default-signal=INT setsid sh -c '[ -z "$1" ] || echo "$1" 2>/dev/null >/proc/self/autogroup || true
        shift; exec "$@"' sh "$n" "$@" &
    pid=$!
    pids="$pids $pid"
}
# Each pass ends with its ten slowest tests (setup and call): where the suite's time
# goes, in every run and in CI's log, against the 10-minute target (docs/performance.md).
PYTEST=".venv/bin/python -m pytest -q --durations=10 --durations-min=2"
# Without CAP_SYS_NICE (and with an rtprio limit of 0, which only it could pass) no
# process of the background pass can start real-time work. Where the capability cannot
# be dropped (setpriv missing, or no CAP_SETPCAP), the pass runs as it is, unenforced.
no_rt="prlimit --rtprio=0:0 setpriv --bounding-set -sys_nice --inh-caps -sys_nice --"
[ "$(id -u)" -eq 0 ] || no_rt="prlimit --rtprio=0:0"
if ! $no_rt true 2>/dev/null; then
    no_rt=""
    echo "background pass: CAP_SYS_NICE could not be dropped (prlimit, setpriv); its tests run with it"
fi

# Where it may (root, or an RLIMIT_NICE that allows it), the suite asks for more of the
# CPU than other programs at the script's own nice: the alone pass, the suite's
# sequential critical path (about half a CPU of its own work between waits for its
# measurements), at 15 below it; the background pass at 10 below, the shared one at 5
# below (below). The suite
# is CPU-bound on a 2-CPU machine (about 970 CPU seconds in 9 minutes), so beside another
# program that wants every CPU (`stress-ng --cpu 2`, a build) it would take half the
# CPU and twice as long. Each pass runs in a session of its own (setsid, above), and
# where the kernel groups the fair scheduler by session (autogroup,
# /proc/sys/kernel/sched_autogroup_enabled) a process's nice counts only inside its
# session's group: the group's nice is what weighs against other programs, so it is set
# too (/proc/self/autogroup; with the process's nice alone the suite still took 12 minutes
# beside the hog). Its real-time threads are above every nice anyway. To leave more to
# the other program, start the script niced (`nice -n 10 scripts/test.sh`): both nices
# are relative to the script's. A niced background pass alone (nice 10) was starved
# beside such a load: the whole command several times longer. docs/design.md "Test
# suite time".
# The shared pass runs at only 5 below: its SSH boards are this machine, and a board's
# load runs in a session (an autogroup) of its own at the script's nice, which a pass
# 10 below left under the tenth of a CPU a worker its tests ask of it. rtgauge's own
# loads take rtgauge's group's nice (rtgauge/loads/base.py, keep_group_weight).
# below N: the nice N below the script's (at least -20), or nothing where it may not lower it
below() {
    [ "$(nice -n -1 nice 2>/dev/null)" = "$(($(nice) - 1))" ] || return 0
    b=$(($(nice) - $1))
    [ "$b" -ge -20 ] || b=-20
    echo "$b"
}

# shellcheck disable=SC2086
start "$(below 10)" $no_rt $PYTEST -n 2 --dist loadfile --pass background "$@" >"$out/background" 2>&1
background=$pid
# The engine built without the futex (tests/test_engine_builds.py), beside the alone pass at
# the background pass's weight: the shared pass, whose tests run its primitives at
# real-time priority, then finds it built instead of compiling it (30 s of a worker beside
# `stress-ng --cpu 2`). The test takes the same lock, and builds it where this has not.
start "$(below 10)" flock build/engine-nofutex.lock sh -c '[ -f build/engine-nofutex/build.ninja ] ||
    meson setup build/engine-nofutex engine -Dfutex=disabled >/dev/null
    ninja -C build/engine-nofutex src/rtgauge-engine >/dev/null' >"$out/nofutex" 2>&1
echo "background pass: running beside the others (its output comes at the end)"
# shellcheck disable=SC2086
start "$(below 15)" $PYTEST --pass alone "$@"
alone=0; wait "$pid" || alone=$?
# The background pass, still running, weighs no more than the shared pass from here: the
# shared pass is the critical path now, and at 10 below the background pass took the CPU
# its four workers wait for (beside `stress-ng --cpu 2` the shared pass took 231 s against
# 180 s quiet, the background pass ending 137 s before it). Its group's nice (all its
# workers are in its session, so in its autogroup); nothing where there is no autogroup.
n=$(below 5)
[ -z "$n" ] || echo "$n" 2>/dev/null >"/proc/$background/autogroup" || true
# shellcheck disable=SC2086
start "$n" $PYTEST -n 4 --dist loadfile --pass shared "$@"
shared=0; wait "$pid" || shared=$?
bg=0; wait "$background" || bg=$?
echo "background pass:"
cat "$out/background"
# shellcheck disable=SC2086
start "" $PYTEST --pass lab "$@"
lab=0; wait "$pid" || lab=$?

# 5: no test selected in that pass; the command fails if a pass failed, or if none ran
status=5
for s in "$alone" "$shared" "$bg" "$lab"; do
    [ "$s" -eq 5 ] && continue
    [ "$status" -eq 5 ] && status=0
    [ "$s" -ne 0 ] && [ "$status" -eq 0 ] && status=$s
done
exit "$status"

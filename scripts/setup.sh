#!/bin/sh
# Set up rtgauge on a Debian machine (docs/install.md says what each part is for).
#   scripts/setup.sh        what the main job needs (`rtgauge run` on this machine): the
#                           Debian packages it uses and a virtual environment in .venv
#                           with the core install (`pip install .`: pip builds the C
#                           engine into the package).
#   scripts/setup.sh --all  everything: also the packages of the optional parts (boards
#                           over SSH, other architectures, the emulated lab, PostgreSQL)
#                           and of the tests, the test extra (`pip install '.[test]'`,
#                           which holds every other extra), and a standalone Meson build
#                           of the engine in build/engine for its C unit tests.
# Safe to run again: it only installs what is missing.
set -eu
cd "$(dirname "$0")/.."

ALL=0
for a in "$@"; do
    case "$a" in
        --all) ALL=1 ;;
        *) echo "setup: unknown argument '$a'; it takes --all (everything, for the tests) or nothing (the main job)." >&2
           exit 2 ;;
    esac
done

# The main job: a compiler and pkg-config to build the engine (pip fetches Meson and ninja
# for its own build), Python's venv, stress-ng for the load conditions, cyclictest
# (rt-tests) for the cross-check, util-linux and procps (taskset, chrt, ps, sysctl),
# iproute2 and ping for the network load conditions, libtracefs for the latency split.
PACKAGES="build-essential pkg-config python3 python3-venv python3-dev \
stress-ng rt-tests util-linux procps iproute2 iputils-ping libtracefs-dev libtraceevent-dev"
# --all: Meson and ninja for build/engine, jitterdebugger (its import test), PostgreSQL,
# Chromium and a Java runtime (the report's browser and HTML-checker tests), libseccomp
# (a test denies sockets with it), the cross compilers and qemu-user (engines for other
# architectures), OpenSSH and netcat (SSH targets and their tests), strace (the test that
# --help never acts), qemu-system, mmdebstrap, arch-test and kmod (the emulated lab).
if [ "$ALL" -eq 1 ]; then
    PACKAGES="$PACKAGES meson ninja-build jitterdebugger postgresql chromium default-jre-headless libseccomp2 \
gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-riscv64-linux-gnu qemu-user-static \
openssh-server openssh-client netcat-openbsd strace qemu-system-x86 qemu-system-arm mmdebstrap arch-test kmod"
fi

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
        echo "setup: missing Debian packages:$missing; run this script as root (or install them) and try again." >&2
        exit 1
    fi
    echo "setup: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
if [ "$ALL" -eq 0 ]; then
    .venv/bin/python -m pip install -q .
    echo "setup: ready (.venv/bin/rtgauge)"
    exit 0
fi
.venv/bin/python -m pip install -q '.[test]'

if [ ! -f build/engine/build.ninja ]; then
    meson setup build/engine engine >/dev/null
fi
ninja -C build/engine >/dev/null
echo "setup: ready (.venv/bin/rtgauge, build/engine/src/rtgauge-engine)"

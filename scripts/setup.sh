#!/bin/sh
# Set up rtgauge on a Debian machine: the system packages it needs, a virtual
# environment in .venv with rtgauge installed (pip builds the C engine into the
# package), and a standalone Meson build of the engine in build/engine for its C
# unit tests. Safe to run again: it only installs what is missing.
set -eu
cd "$(dirname "$0")/.."

PACKAGES="build-essential meson ninja-build pkg-config python3 python3-venv python3-dev \
stress-ng rt-tests jitterdebugger postgresql util-linux procps iproute2 iputils-ping chromium libseccomp2 \
libtracefs-dev libtraceevent-dev \
gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf gcc-riscv64-linux-gnu qemu-user-static \
openssh-server openssh-client netcat-openbsd strace default-jre-headless \
qemu-system-x86 qemu-system-arm mmdebstrap arch-test kmod"

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
.venv/bin/python -m pip install -q '.[test]'

if [ ! -f build/engine/build.ninja ]; then
    meson setup build/engine engine >/dev/null
fi
ninja -C build/engine >/dev/null
echo "setup: ready (.venv/bin/rtgauge, build/engine/src/rtgauge-engine)"

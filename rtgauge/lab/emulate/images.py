"""The emulated systems' images, built by rtgauge and cached.

One root file system an architecture (Debian 12, mmdebstrap's minbase variant with
openssh-server, stress-ng, rtla, iproute2, kmod and busybox-static, and rt-tests'
programs; a foreign architecture's maintainer scripts run under qemu-user through
binfmt_misc),
and Debian's stock and PREEMPT_RT kernels for it, downloaded by the same apt. Each
system boots its kernel with one initramfs: the whole root file system, then the
kernel's virtio modules (two concatenated newc archives). No disk image: nothing
is written back, so a run leaves no image behind and every boot starts the same.

The cache is ~/.cache/rtgauge/emulab/RECIPE (or $RTGAUGE_EMULAB_CACHE/RECIPE),
RECIPE the hash of everything that goes into the images (suite, mirror, packages,
kernels, the boot files, the lab's keys' kind): a changed recipe builds anew, an
unchanged one costs nothing. The lab's keys (the root login's and the host's) are
made with the images and only the cache holds them."""

from __future__ import annotations

import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import RunFailed, UserError
from rtgauge.lab.emulate import cpio
from rtgauge.lab.emulate.systems import ARCHES, SYSTEMS, Arch, System

CACHE_ENV = "RTGAUGE_EMULAB_CACHE"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ["openssh-server", "stress-ng", "rtla", "iproute2", "kmod", "busybox-static", "libnuma1"]
# rt-tests' files are unpacked (dpkg-deb -x), not installed: its package depends on python3
# for two scripts (hwlatdetect, get_cyclictest_snapshot) rtgauge does not use, and python3's
# maintainer scripts byte-compile its library, under qemu-user for armhf. Its programs need
# only libc and libnuma1.
UNPACKED = ["rt-tests"]
# /usr merged by mmdebstrap's own hook (usr-is-merged installed): else apt resolves
# init-system-helpers' "usrmerge | usr-is-merged" with usrmerge, which brings perl and
# converts the tree with a perl script, under qemu-user for armhf.
HOOK_DIRS = ["/usr/share/mmdebstrap/hooks/merged-usr"]
# what a network boot under qemu needs of the kernel's modules (the rest is built in)
MODULES = ["virtio_pci", "virtio_mmio", "virtio_net"]
EXCLUDE = ["/usr/share/man/*", "/usr/share/doc/*", "/usr/share/locale/*", "/usr/share/info/*"]
BUILD_TIMEOUT_S = 3600

# PID 1 is BusyBox's init: it reaps every orphan (the guard and loads rtgauge
# starts there), keeps sshd running, and powers off cleanly on `busybox poweroff`.
INIT = """#!/bin/sh
exec /bin/busybox init
"""
INITTAB = """::sysinit:/etc/rtgauge/boot.sh
::respawn:/usr/sbin/sshd -D -e
::shutdown:/bin/busybox killall5 -TERM
"""
BOOT = """#!/bin/sh
# rtgauge's emulated lab: mounts, modules, the hostname from the kernel's command
# line (rtgauge.hostname=), and qemu's user-mode network (10.0.2.15, gateway 10.0.2.2)
PATH=/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mkdir -p /run/sshd
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
for m in virtio_pci virtio_mmio virtio_net; do modprobe -q $m; done
name=$(sed -n 's/.*rtgauge.hostname=\\([^ ]*\\).*/\\1/p' /proc/cmdline)
hostname "${name:-rtgauge-emulated}"
echo "${name:-rtgauge-emulated}" > /etc/hostname
printf '%s' "${name:-rtgauge-emulated}" | md5sum | cut -c1-32 > /etc/machine-id
ip link set lo up
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2
"""
SSHD = """PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
HostKey /etc/ssh/ssh_host_ed25519_key
"""
RECIPE_VERSION = 2   # raise when the build itself changes what it makes


def recipe() -> dict:
    return {"version": RECIPE_VERSION, "suite": SUITE, "mirror": MIRROR, "packages": PACKAGES,
            "unpacked": UNPACKED, "hook_dirs": HOOK_DIRS,
            "modules": MODULES, "exclude": EXCLUDE, "init": INIT, "inittab": INITTAB, "boot": BOOT, "sshd": SSHD,
            "arches": {a.debian: {"kernels": a.kernels} for a in ARCHES.values()}, "keys": "ed25519"}


def recipe_hash() -> str:
    return hashlib.sha256(json.dumps(recipe(), sort_keys=True).encode()).hexdigest()[:16]


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "rtgauge" / "emulab"


@dataclass(frozen=True)
class Images:
    """The cache of one recipe."""
    root: Path

    @property
    def keys(self) -> Path:
        return self.root / "keys"

    @property
    def login_key(self) -> Path:
        return self.keys / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.keys / "known_hosts"

    @property
    def host_key_alias(self) -> str:
        return f"rtgauge-emulab-{self.root.name}"

    def system_dir(self, system: System) -> Path:
        return self.root / system.name

    def kernel(self, system: System) -> Path:
        return self.system_dir(system) / "vmlinuz"

    def initrd(self, system: System) -> Path:
        return self.system_dir(system) / "initrd"

    def release(self, system: System) -> str:
        return (self.system_dir(system) / "kernel-release").read_text().strip()

    def built(self, system: System) -> bool:
        return (self.system_dir(system) / ".built").is_file()


def images() -> Images:
    return Images(cache_root() / recipe_hash())


def missing_tools(arches: list[Arch]) -> list[str]:
    need = {"mmdebstrap": "mmdebstrap", "dpkg-deb": "dpkg", "depmod": "kmod", "modprobe": "kmod",
            "ssh-keygen": "openssh-client"}
    if any(a.uname != platform.machine() for a in arches):
        need["arch-test"] = "arch-test"
    out = sorted({pkg for exe, pkg in need.items() if shutil.which(exe) is None})
    if any(a.debian == "armhf" for a in arches) and platform.machine() not in ARCHES["armhf"].uname \
            and not Path("/usr/lib/binfmt.d/qemu-arm.conf").is_file():
        out.append("qemu-user-static")
    return out


def build(systems: list[System], say=print) -> Images:
    """The images of `systems`, built where the cache does not have them."""
    img = images()
    todo = [s for s in systems if not img.built(s)]
    if not todo:
        return img
    if os.geteuid() != 0:
        raise UserError("building the emulated lab's images needs root (mmdebstrap builds a root file system "
                        "owned by root); run it as root once, the images are cached after.")
    missing = missing_tools([s.arch for s in todo])
    if missing:
        raise UserError(f"building the emulated lab's images needs {', '.join(missing)}; install "
                        f"{'them' if len(missing) > 1 else 'it'} (apt-get install {' '.join(missing)}; "
                        "scripts/setup.sh --all does).")
    img.root.mkdir(parents=True, exist_ok=True)
    with open(img.root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)           # held while building: prune() leaves this recipe alone
        with open(img.root / ".lock-keys", "w") as keys:
            fcntl.flock(keys, fcntl.LOCK_EX)
            make_keys(img)
        arches = list(dict.fromkeys(s.arch for s in todo))
        # the architectures build side by side (mmdebstrap mostly waits on downloads and dpkg)
        pool = concurrent.futures.ThreadPoolExecutor(len(arches))
        try:
            for f in [pool.submit(build_locked, img, a, todo, say) for a in arches]:
                f.result()
        except BaseException:
            # Ctrl-C, SIGTERM or a failed architecture: the other's commands end too (their
            # threads then fail and clean up their build directories)
            for proc in list(_running):
                _end_group(proc)
            raise
        finally:
            pool.shutdown(wait=True)
    prune(img.root.parent, keep=img.root)
    return img


def build_locked(img: Images, arch: Arch, todo: list[System], say) -> None:
    # one build an architecture at a time; another process waits here and finds it built
    with open(img.root / f".lock-{arch.debian}", "w") as arch_lock:
        fcntl.flock(arch_lock, fcntl.LOCK_EX)
        flavours = [s for s in todo if s.arch == arch and not img.built(s)]
        if not flavours:
            return
        for stale in img.root.glob(f".build-{arch.debian}-*"):   # a build cut short (killed) before
            remove_build_dir(stale)
        started = time.monotonic()
        say(f"Building the {arch.debian} images ({', '.join(s.name for s in flavours)}); this takes minutes "
            "the first time.")
        build_arch(img, arch, flavours, say)
        took = round(time.monotonic() - started, 1)
        say(f"Built the {arch.debian} images in {took:.0f} s.")
        (img.root / f"build-time-{arch.debian}.json").write_text(
            json.dumps({"seconds": took, "systems": [s.name for s in flavours]}) + "\n")


def make_keys(img: Images) -> None:
    """The lab's own keys: root's login and the systems' host key (known_hosts
    names it by HostKeyAlias, whatever port the system is forwarded to)."""
    if (img.known_hosts).is_file():
        return
    tmp = img.root / f".keys-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o700)
    for name in ("id_ed25519", "host_ed25519"):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"rtgauge-emulab-{name}", "-f", str(tmp / name)])
    kind, key = (tmp / "host_ed25519.pub").read_text().split()[:2]
    (tmp / "known_hosts").write_text(f"{img.host_key_alias} {kind} {key}\n")
    shutil.rmtree(img.keys, ignore_errors=True)
    tmp.rename(img.keys)


def run(cmd: list[str], timeout: float = BUILD_TIMEOUT_S) -> str:
    """cmd's output; it runs in a process group of its own, ended whole when rtgauge
    stops waiting for it (time limit, Ctrl-C): mmdebstrap's dpkg and its chroot
    programs go with it."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    _running.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(proc)
        raise RunFailed(f"`{cmd[0]}` ran past {timeout:.0f} s while building the emulated lab's images.") from None
    except BaseException:
        _end_group(proc)
        raise
    _running.discard(proc)
    if proc.returncode != 0:
        tail = " | ".join((err or out).strip().splitlines()[-4:])
        _running.discard(proc)
        raise RunFailed(f"`{' '.join(cmd[:2])}` failed while building the emulated lab's images: {tail}")
    return out


def remove_build_dir(path: Path) -> None:
    """Remove a build directory, first unmounting what a killed mmdebstrap left
    mounted in its chroot (/proc, /sys, /dev): never delete through a mount."""
    prefix = str(path.resolve()) + "/"
    try:
        with open("/proc/self/mounts") as f:
            points = [line.split()[1].replace("\\040", " ") for line in f]
    except OSError:
        points = []
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    with open("/proc/self/mounts") as f:
        if any(line.split()[1].startswith(prefix) for line in f):
            raise RunFailed(f"{path} still has file systems mounted in it; unmount them (umount -R) and remove it.")
    shutil.rmtree(path, ignore_errors=True)


_running: set[subprocess.Popen] = set()   # the builds' commands now running, in any thread


def _end_group(proc: subprocess.Popen) -> None:
    _running.discard(proc)
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
            return


def build_arch(img: Images, arch: Arch, systems: list[System], say) -> None:
    work = img.root / f".build-{arch.debian}-{os.getpid()}"
    work.mkdir()
    try:
        rootfs, debs = work / "rootfs", work / "debs"
        debs.mkdir()
        metas = " ".join(arch.kernels[s.flavour] for s in systems)
        # The kernels come from the new system's mirror and suite: a hook's apt is the host's binary
        # and mmdebstrap unsets APT_CONFIG for it, so it is given the new system's configuration
        # (else it reads the host's package lists: a host without armhf among its architectures
        # has no armhf kernel in them, "No packages found") and told the architecture.
        a = f"-o APT::Architecture={arch.debian} -o APT::Architectures={arch.debian}"
        apt = 'export APT_CONFIG="$MMDEBSTRAP_APT_CONFIG"'
        hook = (f"{apt} && cd {debs} && apt-get {a} download $(apt-cache {a} depends {metas} "
                "| sed -n 's/.*Depends: \\(linux-image-[0-9].*\\)/\\1/p')")
        unpacked = work / "unpacked"
        unpacked.mkdir()
        unpack = (f"{apt} && cd {unpacked} && apt-get {a} download {' '.join(UNPACKED)} && "
                  "for f in *.deb; do dpkg-deb -x \"$f\" files || exit 1; done && "
                  "for d in bin sbin lib; do [ ! -d files/usr/$d ] || cp -a files/usr/$d \"$1/usr/\" || exit 1; done")
        cmd = ["mmdebstrap", "--variant=minbase", "--mode=root", f"--arch={arch.debian}",
               *(f"--hook-dir={h}" for h in HOOK_DIRS),
               f"--include={','.join(PACKAGES)}", *(f"--dpkgopt=path-exclude={p}" for p in EXCLUDE),
               f"--customize-hook={hook}", f"--customize-hook={unpack}",
               SUITE, str(rootfs), f"deb {MIRROR} {SUITE} main"]
        with foreign_execution(arch):
            run(cmd)
        customise(rootfs, img)
        cpio.write(rootfs, work / "rootfs.cpio")
        remove_build_dir(rootfs)
        for s in systems:
            [deb] = [d for d in debs.glob("linux-image-*.deb")
                     if ("-rt-" in d.name) == s.preempt_rt]
            kernel_images(img, s, deb, work / "rootfs.cpio", work)
            say(f"  {s.name}: Linux {img.release(s)}")
    finally:
        remove_build_dir(work)


def customise(rootfs: Path, img: Images) -> None:
    def put(path: str, text: str, mode: int = 0o644) -> None:
        p = rootfs / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        p.chmod(mode)
    put("/init", INIT, 0o755)
    put("/etc/inittab", INITTAB)
    put("/etc/rtgauge/boot.sh", BOOT, 0o755)
    put("/etc/ssh/sshd_config.d/rtgauge-emulab.conf", SSHD)
    for old in (rootfs / "etc" / "ssh").glob("ssh_host_*"):
        old.unlink()
    put("/etc/ssh/ssh_host_ed25519_key", (img.keys / "host_ed25519").read_text(), 0o600)
    put("/etc/ssh/ssh_host_ed25519_key.pub", (img.keys / "host_ed25519.pub").read_text())
    put("/root/.ssh/authorized_keys", (img.keys / "id_ed25519.pub").read_text(), 0o600)
    (rootfs / "root" / ".ssh").chmod(0o700)
    dev = rootfs / "dev"
    dev.mkdir(exist_ok=True)
    for name, minor in (("console", (5, 1)), ("null", (1, 3))):
        if not (dev / name).exists():
            os.mknod(dev / name, 0o600 | 0o020000, os.makedev(*minor))   # character devices
    for cache in ("var/cache/apt", "var/lib/apt/lists"):
        for p in (rootfs / cache).glob("*"):
            if p.is_file():
                p.unlink()


def kernel_images(img: Images, system: System, deb: Path, rootfs_cpio: Path, work: Path) -> None:
    """The system's kernel and its initramfs: the root file system, then the kernel's virtio modules."""
    kx = work / f"kernel-{system.flavour}"
    run(["dpkg-deb", "-x", str(deb), str(kx)])
    mods = kx / "lib" / "modules"
    [release] = [d.name for d in mods.iterdir() if d.is_dir()]
    run(["depmod", "-b", str(kx), release])
    stage = work / f"modules-{system.flavour}"
    dest = stage / "lib" / "modules" / release
    dest.mkdir(parents=True)
    for name in MODULES:
        p = subprocess.run(["modprobe", "-d", str(kx), "-S", release, "--show-depends", name],
                           capture_output=True, text=True, check=False)
        for line in p.stdout.splitlines():
            if line.startswith("insmod "):
                src = Path(line.split()[1])
                rel = src.relative_to(mods / release)
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)
    for f in ("modules.order", "modules.builtin", "modules.builtin.modinfo"):
        if (mods / release / f).is_file():
            shutil.copy2(mods / release / f, dest / f)
    run(["depmod", "-b", str(stage), release])
    cpio.write(stage / "lib" / "modules", work / f"modules-{system.flavour}.cpio", prefix="usr/lib/modules")
    # the kernel's configuration where Debian keeps it (/boot/config-RELEASE): the doctor reads it there
    boot = work / f"boot-{system.flavour}"
    boot.mkdir()
    shutil.copy2(kx / "boot" / f"config-{release}", boot / f"config-{release}")
    cpio.write(boot, work / f"boot-{system.flavour}.cpio", prefix="boot")
    out = img.system_dir(system)
    shutil.rmtree(out, ignore_errors=True)
    tmp = work / f"out-{system.flavour}"
    tmp.mkdir()
    [vmlinuz] = (kx / "boot").glob("vmlinuz-*")
    shutil.copy2(vmlinuz, tmp / "vmlinuz")
    with open(tmp / "initrd", "wb") as f:
        for part in (rootfs_cpio, work / f"modules-{system.flavour}.cpio", work / f"boot-{system.flavour}.cpio"):
            with open(part, "rb") as src:
                shutil.copyfileobj(src, f, 1 << 20)
    (tmp / "kernel-release").write_text(release + "\n")
    (tmp / ".built").write_text(json.dumps({"deb": deb.name, "release": release}) + "\n")
    tmp.rename(out)
    for d in (kx, stage, boot):
        shutil.rmtree(d)


@contextlib.contextmanager
def foreign_execution(arch: Arch):
    """Run `arch`'s programs here while its root file system is built: binfmt_misc
    mounted and qemu-user registered for it (as rtgauge-ARCH), both undone after
    when this made them."""
    if arch.uname == platform.machine() or arch.debian != "armhf":
        yield
        return
    misc = Path("/proc/sys/fs/binfmt_misc")
    mounted = False
    if not (misc / "register").exists():
        subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(misc)], capture_output=True, check=False)
        mounted = (misc / "register").exists()
        if not mounted:
            raise UserError("binfmt_misc cannot be mounted here, so armhf programs cannot run while the armhf "
                            "image is built; mount it (mount -t binfmt_misc binfmt_misc "
                            "/proc/sys/fs/binfmt_misc) or build on a machine that allows it.")
    entry = misc / "rtgauge-arm"
    registered = False
    already = any(e.is_file() and e.name not in ("register", "status") and _arm_entry(e.read_text(errors="replace"))
                  for e in misc.iterdir())
    try:
        if not already and not entry.exists():
            line = Path("/usr/lib/binfmt.d/qemu-arm.conf").read_text().strip()
            (misc / "register").write_text(line.replace(":qemu-arm:", ":rtgauge-arm:", 1))
            registered = True
        yield
    finally:
        if registered:
            with contextlib.suppress(OSError):
                entry.write_text("-1")
        if mounted and not [e for e in misc.iterdir() if e.name not in ("register", "status")]:
            subprocess.run(["umount", str(misc)], capture_output=True, check=False)


def _arm_entry(text: str) -> bool:
    return text.startswith("enabled") and ("qemu-arm" in text or "arm-binfmt" in text)


def prune(cache: Path, keep: Path) -> None:
    """Images of other recipes are removed: one recipe is the lab's."""
    for d in cache.iterdir():
        if d.is_dir() and d != keep and len(d.name) == 16 and all(c in "0123456789abcdef" for c in d.name):
            with contextlib.suppress(OSError), open(d / ".lock", "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    continue              # in use
                remove_build_dir(d)


def status() -> list[tuple[System, bool]]:
    img = images()
    return [(s, img.built(s)) for s in SYSTEMS.values()]

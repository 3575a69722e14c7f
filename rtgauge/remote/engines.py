"""Engines for other architectures: build rtgauge-engine from rtgauge's own
sources with a shipped Meson cross file (engine/cross/*.ini), cached by the hash
of the sources, and run it under qemu-user on this machine when asked.

One build per (architecture, source hash, compiler): a second call returns the
cached binary at once. Builds are serialised by a file lock, so concurrent
processes (two test sessions, two targets of one architecture) build it once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import UserError

SOURCE_ENV = "RTGAUGE_ENGINE_SRC"
CACHE_ENV = "RTGAUGE_CACHE"


@dataclass(frozen=True)
class Arch:
    """One architecture the engine can be built for."""

    name: str           # rtgauge's name and the cache key: aarch64, armhf, riscv64, x86_64
    triple: str | None  # GNU triple of the cross compiler; None: the native compiler
    package: str | None  # Debian package of the cross compiler
    qemu: str | None    # qemu-user binary that runs it on another machine
    machines: tuple[str, ...]  # what `uname -m` says on such a machine

    @property
    def cross_file(self) -> str | None:
        return f"{self.triple}.ini" if self.triple else None

    @property
    def compiler(self) -> str:
        return f"{self.triple}-gcc" if self.triple else os.environ.get("CC", "cc")


ARCHES: dict[str, Arch] = {a.name: a for a in (
    Arch("aarch64", "aarch64-linux-gnu", "gcc-aarch64-linux-gnu", "qemu-aarch64-static",
         ("aarch64", "arm64")),
    # armv8l: a 32-bit user space on a 64-bit ARM kernel runs armhf code natively
    Arch("armhf", "arm-linux-gnueabihf", "gcc-arm-linux-gnueabihf", "qemu-arm-static",
         ("armv7l", "armv7", "armv8l", "armhf")),
    Arch("riscv64", "riscv64-linux-gnu", "gcc-riscv64-linux-gnu", "qemu-riscv64-static",
         ("riscv64",)),
)}


def host_arch_name() -> str:
    return platform.machine()


def arch_for_machine(machine: str) -> Arch:
    """The Arch whose engine runs on a machine for which `uname -m` says `machine`."""
    if machine == host_arch_name():
        return Arch(machine, None, None, None, (machine,))
    for arch in ARCHES.values():
        if machine in arch.machines:
            return arch
    known = ", ".join(sorted({m for a in ARCHES.values() for m in a.machines} | {host_arch_name()}))
    raise UserError(f"rtgauge cannot build an engine for a {machine} machine (it builds for {known}); "
                    "build one with a Meson cross file (docs/cross.md) and pass it with RTGAUGE_ENGINE.")


def source_dir() -> Path:
    """The engine's sources: $RTGAUGE_ENGINE_SRC, the checkout this package runs
    from, or the copy installed with the package (rtgauge/engine_src)."""
    override = os.environ.get(SOURCE_ENV)
    candidates = [Path(override)] if override else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "engine", here / "engine_src"]
    for c in candidates:
        if (c / "meson.build").is_file() and (c / "src").is_dir():
            return c
    if override:
        raise UserError(f"{SOURCE_ENV}={override} is not the engine's source directory (no meson.build and src/); "
                        "point it at the engine/ folder of rtgauge's sources.")
    raise UserError("the engine's sources are not installed with this rtgauge; reinstall it with `pip install .` "
                    f"from rtgauge's sources, or set {SOURCE_ENV} to their engine/ folder.")


def source_hash(src: Path) -> str:
    """SHA-256 over the relative path and content of every file of the engine's
    sources (meson files, C sources, C tests, cross files)."""
    h = hashlib.sha256()
    for p in sorted(src.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(str(p.relative_to(src)).encode() + b"\0")
            h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def cache_root() -> Path:
    """$RTGAUGE_CACHE, else ~/.cache/rtgauge/engines (XDG_CACHE_HOME honoured)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "rtgauge" / "engines"


def compiler_version(arch: Arch) -> str:
    exe = shutil.which(arch.compiler)
    if exe is None:
        what = f"install the Debian package {arch.package} (scripts/setup.sh --all does)" if arch.package \
            else "install a C compiler (build-essential)"
        raise UserError(f"the compiler {arch.compiler} for {arch.name} engines is not installed; {what}.")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else exe


@dataclass(frozen=True)
class BuiltEngine:
    arch: Arch
    build_dir: Path   # a Meson build directory: `meson test -C build_dir` runs the C unit tests
    key: str          # the cache key: source hash and compiler

    @property
    def binary(self) -> Path:
        return self.build_dir / "src" / "rtgauge-engine"

    def command(self) -> list[str]:
        """How to run it on this machine: directly when native, else under qemu-user."""
        if self.arch.qemu is None:
            return [str(self.binary)]
        return [qemu_path(self.arch), str(self.binary)]


def qemu_path(arch: Arch) -> str:
    exe = shutil.which(arch.qemu or "")
    if exe is None:
        raise UserError(f"{arch.qemu} is not installed, so {arch.name} engines cannot run here; "
                        "install the Debian package qemu-user-static (scripts/setup.sh --all does).")
    return exe


def build(arch: Arch | str, src: Path | None = None, cache: Path | None = None) -> BuiltEngine:
    """The engine for `arch` built from `src`, from the cache when it is there."""
    if isinstance(arch, str):
        if arch not in ARCHES:
            raise UserError(f"unknown architecture {arch!r}; choose one of {', '.join(ARCHES)}.")
        arch = ARCHES[arch]
    src = (src or source_dir()).resolve()
    cache = cache or cache_root()
    h = hashlib.sha256((source_hash(src) + "\0" + compiler_version(arch)).encode()).hexdigest()[:16]
    final = cache / f"{arch.name}-{h}"
    engine = BuiltEngine(arch, final, h)
    stamp = final / ".rtgauge-built"
    if stamp.is_file():
        return engine
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{arch.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file():   # built by another process while we waited
            return engine
        # The stamp is written last: a build cut short is never taken for a cached
        # engine, and is started afresh.
        shutil.rmtree(final, ignore_errors=True)
        setup = ["meson", "setup", str(final), str(src)]
        if arch.cross_file:
            setup[2:2] = ["--cross-file", str(src / "cross" / arch.cross_file)]
        else:   # static like the cross files: the target's C library may be older than ours
            setup[2:2] = ["-Dc_link_args=-static"]
        # the engine alone: its C unit tests are built by `meson test` when asked for
        for cmd in (setup, ["ninja", "-C", str(final), "src/rtgauge-engine"]):
            p = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if p.returncode != 0:
                tail = (p.stdout + p.stderr).strip().splitlines()[-5:]
                raise UserError(f"building the {arch.name} engine failed ({' '.join(cmd[:2])}): "
                                + " | ".join(tail))
        stamp.write_text(f"{compiler_version(arch)}\n")
        prune(cache, arch, keep=final)
    return engine


def prune(cache: Path, arch: Arch, keep: Path, count: int = 3) -> None:
    """Keep the `count` newest builds of `arch` (other checkouts may share the cache)."""
    builds = sorted((d for d in cache.glob(f"{arch.name}-*") if d.is_dir() and d != keep),
                    key=lambda d: d.stat().st_mtime, reverse=True)
    for old in builds[count - 1:]:
        shutil.rmtree(old, ignore_errors=True)

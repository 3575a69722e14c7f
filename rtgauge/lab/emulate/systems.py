"""The emulated systems: an architecture (its Debian root file system) and a
kernel flavour (Debian's stock or PREEMPT_RT kernel), and how qemu boots them."""

from __future__ import annotations

from dataclasses import dataclass

from rtgauge.errors import UserError


@dataclass(frozen=True, eq=False)   # one object an architecture
class Arch:
    debian: str              # Debian's architecture name
    qemu: str                # the qemu-system binary
    machine: list[str]       # -M/-cpu options
    nic: str                 # the virtio network device
    console: str             # the kernel's serial console
    kernels: dict[str, str]  # flavour -> Debian's kernel metapackage
    uname: str               # what `uname -m` says there


ARCHES: dict[str, Arch] = {
    "amd64": Arch("amd64", "qemu-system-x86_64", ["-M", "q35", "-cpu", "qemu64"], "virtio-net-pci", "ttyS0",
                  {"stock": "linux-image-amd64", "rt": "linux-image-rt-amd64"}, "x86_64"),
    # -M virt: QEMU's generic ARM board (device tree "linux,dummy-virt"), a Cortex-A15 like many armhf boards
    "armhf": Arch("armhf", "qemu-system-arm", ["-M", "virt", "-cpu", "cortex-a15"], "virtio-net-device",
                  "ttyAMA0", {"stock": "linux-image-armmp", "rt": "linux-image-rt-armmp"}, "armv7l"),
}


@dataclass(frozen=True)
class System:
    name: str       # amd64, amd64-rt, armhf, armhf-rt
    arch: Arch
    flavour: str    # stock or rt

    @property
    def host(self) -> str:
        """Its SSH Host alias (the lab's ssh_config) and its hostname there."""
        return f"emu-{self.name}"

    @property
    def preempt_rt(self) -> bool:
        return self.flavour == "rt"


SYSTEMS: dict[str, System] = {
    s.name: s for s in (System(f"{a}{'-rt' if f == 'rt' else ''}", ARCHES[a], f)
                        for a in ARCHES for f in ("stock", "rt"))
}


def pick(names: list[str] | None) -> list[System]:
    """The systems named (all four when none are)."""
    if not names:
        return list(SYSTEMS.values())
    out = []
    for n in names:
        if n not in SYSTEMS:
            raise UserError(f"there is no emulated system {n!r}; choose among {', '.join(SYSTEMS)}.")
        if SYSTEMS[n] not in out:
            out.append(SYSTEMS[n])
    return out

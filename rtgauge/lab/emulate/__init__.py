"""An emulated lab: Debian's stock and PREEMPT_RT kernels, amd64 and armhf, booted
under qemu-system (software emulation) as boards reached over SSH on loopback
(docs/lab.md, "An emulated lab"). images.py builds and caches their images,
machines.py boots them and stops them, systems.py names the four systems."""

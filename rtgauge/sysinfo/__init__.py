"""System facts and the doctor: what on this machine stands between it and real-time."""

from rtgauge.sysinfo.checks import run_doctor
from rtgauge.sysinfo.facts import collect_facts

__all__ = ["collect_facts", "run_doctor"]

"""`rtgauge run --resume RUN`: measure on a run that stopped before its end.

A full study profile can take longer than anyone can leave a machine alone (the tire
study: hours). A run that was interrupted (Ctrl-C, SIGTERM), abandoned (rtgauge killed,
the machine rebooted) or failed is measured on from where it stopped, into the same run:

- the profile is the run's own (its stored TOML text), on the same machine (hostname,
  kernel and architecture as stored);
- a job already stored ok and whole (not interrupted, not stopped early by the watchdog)
  is not measured again; a job stored failed, interrupted or stopped early is measured
  again and its earlier measurement removed, so each job is stored once;
- a sweep (the tire study's maps) replays the probes already stored: the search takes
  the same decisions from the same documents and measures only the probes it has not
  (docs/studies.md, "A study over several sittings").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtgauge.errors import UserError
from rtgauge.profiles import parse_profile
from rtgauge.records import Measurement, Run
from rtgauge.store import open_store

RESUMABLE = ("interrupted", "abandoned", "failed")
SWEEP_PROBE_PREFIX = "tire-sweep/"


@dataclass
class Resume:
    run: Run
    done: set = field(default_factory=set)            # (name, round) of jobs stored whole
    drop: list[int] = field(default_factory=list)     # measurement ids measured again
    probes: dict = field(default_factory=dict)        # sweep probe label -> its stored documents, in order

    @property
    def profile_source(self) -> str:
        return str(self.run.extra.get("profile_source") or "")


def whole(m: Measurement) -> bool:
    return bool(m.ok) and not m.stopped_early


def resume_point(run: Run | None, run_id: int, facts: dict, alive_elsewhere: bool) -> Resume:
    """What is left of run RUN_ID to measure on this machine; a UserError (one sentence)
    when it cannot be resumed."""
    if run is None:
        raise UserError(f"there is no run {run_id} to resume in this database; `rtgauge show` lists the runs.")
    if run.status == "running" and alive_elsewhere:
        raise UserError(f"run {run_id} is being measured now by another rtgauge; let it end or stop it first.")
    if run.status not in RESUMABLE + ("complete", "running"):
        raise UserError(f"run {run_id} is {run.status}; only an interrupted, abandoned or failed run, or one with "
                        "jobs stored failed or incomplete, can be resumed.")
    if run.extra.get("origin"):
        raise UserError(f"run {run_id} was imported; only a run measured here can be resumed.")
    for key in ("hostname", "kernel_release", "arch"):
        then, now = run.system.get(key), facts.get(key)
        if then != now:
            raise UserError(f"run {run_id} measured {key.replace('_', ' ')} {then!r}, and this machine has "
                            f"{now!r}: a run is resumed on the system it measured.")
    if (run.system.get("target") or None) != (facts.get("target") or None):
        raise UserError(f"run {run_id} measured another target; resume it with the same --target.")
    if not str(run.extra.get("profile_source") or "").strip():
        raise UserError(f"run {run_id} has no stored profile to resume.")
    out = Resume(run)
    groups: dict[tuple, list[Measurement]] = {}
    for m in run.measurements:
        if m.name.startswith(SWEEP_PROBE_PREFIX) and m.test == "tire":
            doc = m.extra.get("document")
            if whole(m) and isinstance(doc, dict):
                base = m.name.rsplit("/retry", 1)[0] if "/retry" in m.name else m.name
                out.probes.setdefault((base, bool((doc.get("params") or {}).get("stop_on_miss"))), []).append(doc)
            elif m.extra.get("id") is not None:
                out.drop.append(int(m.extra["id"]))
            continue
        if m.test == "tire-sweep":           # the sweep's result: made again from every probe
            if m.extra.get("id") is not None:
                out.drop.append(int(m.extra["id"]))
            continue
        groups.setdefault((m.name, m.round), []).append(m)
    for key, ms in groups.items():
        if all(whole(m) for m in ms):
            out.done.add(key)
        else:
            out.drop += [int(m.extra["id"]) for m in ms if m.extra.get("id") is not None]
    if run.status == "complete" and not out.drop:
        raise UserError(f"run {run_id} is complete with every job stored whole; there is nothing to resume.")
    return out


def remaining(jobs: list, resume: Resume) -> list:
    """The plan's jobs not yet stored whole in the run."""
    return [j for j in jobs if (j.name, j.round) not in resume.done]


def resumed_profile(db: str | None, run_id: int, profile: str | None, interleave: str | None):
    """The profile of the run --resume names (its stored TOML text); refusals in one
    sentence (a --profile or --interleave given beside it, no such run, none stored)."""
    if profile or interleave:
        raise UserError("--resume measures the run's own profile; leave out --profile and --interleave.")
    if run_id < 1:
        raise UserError(f"--resume {run_id}: give a run's id (a whole number from 1), as `rtgauge show` lists.")
    store = open_store(db)
    try:
        run = store.get_run(run_id, documents=False)
    finally:
        store.close()
    if run is None:
        raise UserError(f"there is no run {run_id} to resume in this database; `rtgauge show` lists the runs.")
    source = str(run.extra.get("profile_source") or "")
    if not source.strip():
        raise UserError(f"run {run_id} has no stored profile to resume.")
    return parse_profile(source, f"run {run_id}'s profile ({run.profile})")

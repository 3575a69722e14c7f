"""The run session: what `rtgauge run` sets up around a plan beyond the profile and
undoes after it — CPU partitioning, long-run segments, the load context, tuning (applied
for the run and reverted, also on failure and SIGTERM; a tuning left by a killed run is
recovered), tracefs for threshold traces, and the live view; and the request it is built
from (RunRequest: cli/run.py makes it from its options). plan/lifecycle.py applies it,
plan/execute.py runs the jobs inside it."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rtgauge import stops, tune
from rtgauge.errors import UserError
from rtgauge.loads import LoadContext, need_tool
from rtgauge.loads.partition import plan_partition
from rtgauge.plan import plan_seconds
from rtgauge.plan.execute import RunSettings, parse_duration
from rtgauge.store.urls import sqlite_file
from rtgauge.trace import Tracefs
from rtgauge.trace.live import LiveView
from rtgauge.trace.metrics_file import MetricsFile


@dataclass
class RunRequest:
    """What the user asked `rtgauge run` for, as plain values named as its options are
    (cli/run.py makes one from them; no argparse here). Nothing in it is checked yet: the
    lifecycle's prepare and check stages do that (rtgauge/plan/lifecycle.py)."""
    profile: str | None = None
    duration: str | None = None
    rounds: int | None = None
    interleave: str | None = None
    target: str | None = None
    rt_cpus: str | None = None
    load_cpus: str | None = None
    housekeeping_cpus: str | None = None
    attribute: bool = False
    attribute_threshold_us: float | None = None
    trace_threshold_us: float | None = None
    tuned: bool = False
    rt_throttling_off: bool = False
    load_dir: str | None = None
    allow_netns: bool = False
    allow_fallback: bool = False
    mount_tracefs: bool = True
    resume: int | None = None
    budget_us: float | None = None
    period_us: float | None = None
    miss_rate: float | None = None
    until_verdict: bool = False
    max_time: str = "1h"
    fail_on: list[str] = field(default_factory=list)
    junit: str | None = None
    report: str | None = None
    no_report: bool = False
    json: bool = False
    live: bool = False
    metrics_file: str | None = None
    db: str | None = None
    segment: str = "10m"
    run_id_file: str | None = None
    argv: list[str] = field(default_factory=list)     # the command line, stored with each run


class RunConditions:
    """The run options beyond the profile, checked before anything is stored."""

    def __init__(self, warmup_s: float, *, duration: str | None = None, segment: str | None = None,
                 rt_cpus: str | None = None, load_cpus: str | None = None, housekeeping_cpus: str | None = None,
                 trace_threshold_us: float | None = None, attribute: bool = False,
                 attribute_threshold_us: float | None = None, load_dir: str | None = None,
                 allow_netns: bool = False, tuned: bool = False, rt_throttling_off: bool = False,
                 live: bool = False, metrics_file: str | None = None, mount_tracefs: bool = True, profile=None):
        """The options as `rtgauge run` names them (--duration, --segment, --rt-cpus, ...);
        PROFILE's settings.attribute and attribute_threshold_us where the options do not say."""
        self.warmup_s = warmup_s
        self.duration_s = parse_duration(duration) if duration else None
        self.segment_s = parse_duration(segment or "10m")
        self.partition = plan_partition(rt_cpus, load_cpus, housekeeping_cpus)
        threshold = trace_threshold_us
        if threshold is not None and not 1 <= threshold <= 10**9:
            raise UserError(f"--trace-threshold-us {threshold} is out of range; choose 1 to 1000000000 µs.")
        self.trace_threshold_us = threshold
        attr_threshold = attribute_threshold_us
        if attr_threshold is not None and not 1 <= attr_threshold <= 10**9:
            raise UserError(f"--attribute-threshold-us {attr_threshold} is out of range; choose 1 to 1000000000 µs.")
        if attr_threshold is None and profile is not None:
            attr_threshold = getattr(profile, "attribute_threshold_us", None)
        self.attribute = bool(attribute or attr_threshold is not None
                              or (profile is not None and getattr(profile, "attribute", False)))
        self.attribute_threshold_us = attr_threshold
        if self.attribute and threshold:
            raise UserError("--attribute traces the whole job and --trace-threshold-us stops it at the first "
                            "spike; use one of them.")
        if load_dir and not (Path(load_dir).is_dir() and os.access(load_dir, os.W_OK)):
            raise UserError(f"--load-dir {load_dir} is not a writable directory; give one on the disk to load.")
        self.load_dir = load_dir
        self.allow_netns = bool(allow_netns)
        if self.allow_netns:
            for tool in ("ip", "unshare", "nsenter"):
                need_tool("net", tool)
        self.tuned = bool(tuned)
        self.rt_throttling_off = bool(rt_throttling_off)
        if self.rt_throttling_off and not self.tuned:
            raise UserError("--rt-throttling-off only applies with --tuned; add --tuned or drop it.")
        self.live = bool(live)
        self.metrics_file = None
        if metrics_file is not None:
            self.metrics_file = MetricsFile(metrics_file)
        self.mount_tracefs = bool(mount_tracefs)
        self.target = None      # rtgauge.remote.session.TargetSession: tuning goes there

    def data_dir(self, store) -> str | None:
        """Where the io load writes: --load-dir, else the SQLite database's directory."""
        if self.load_dir:
            return self.load_dir
        url = getattr(store, "_url", None)      # the real path, not the percent-encoded display URL
        path = sqlite_file(url) if url is not None else None
        return str(path.resolve().parent) if path is not None else None

    @contextmanager
    def applied(self, console, request, store, jobs, warmup_s, view):
        """RunSettings for execute(), with tuning applied for the run and reverted after
        (also on failure and SIGTERM) and tracefs mounted where it is needed and missing (unless the user said not to)."""
        def say(text: str) -> None:
            console.print(text)

        settings = RunSettings(warmup_s=warmup_s, partition=self.partition, segment_s=self.segment_s,
                               trace_threshold_us=self.trace_threshold_us, say=say,
                               attribute=self.attribute, attribute_threshold_us=self.attribute_threshold_us,
                               load_ctx=LoadContext(data_dir=self.data_dir(store), allow_netns=self.allow_netns))
        state_path, tuned_here, target_tuning = tune.default_state_path(), False, None
        # until execute() takes SIGTERM over, it must unwind through the finally below
        old_term = signal.signal(signal.SIGTERM, stops.interrupt)
        old_hup = signal.getsignal(signal.SIGHUP)
        if old_hup != signal.SIG_IGN:          # SIGHUP as SIGTERM; ignored under nohup
            signal.signal(signal.SIGHUP, stops.interrupt)
        try:
            if self.trace_threshold_us or self.attribute:
                settings.tracefs = Tracefs.open(self.mount_tracefs)
                if not settings.tracefs.path:
                    say(f"[yellow]{settings.tracefs.note}[/]")
                elif settings.tracefs.mounted_here:
                    say(settings.tracefs.note)
            if self.tuned and self.target is not None:     # there, held and reverted there
                from rtgauge.remote.tune import TargetTuning   # asyncssh, the ssh extra: on a target only
                target_tuning = TargetTuning(self.target, say)
                settings.record["tuned"] = target_tuning.apply()
                say(f"tuned {self.target.address}: {len(settings.record['tuned']['changed'])} setting(s) changed "
                    "for the run, reverted after")
            elif self.tuned:
                recover_stale_tuning(state_path, say)
                if os.path.lexists(state_path):
                    say(f"already tuned (state in {state_path}); leaving the settings as they are")
                    settings.record["tuned"] = {"state": str(state_path), "applied_by": "tune --apply"}
                else:
                    measured = self.partition.rt_cpus if self.partition else tune.online_cpus()[1:]
                    hk = (self.partition.housekeeping_cpus if self.partition and self.partition.housekeeping_cpus
                          else tune.housekeeping_for(measured, tune.online_cpus()))
                    watchdog = plan_seconds(jobs, warmup_s) * 1.2 + 120 if self.rt_throttling_off else None
                    state = tune.apply(state_path, measured, hk, rt_unthrottled_for_s=watchdog,
                                       applied_by="run --tuned")
                    tuned_here = True
                    settings.record["tuned"] = {"changed": [[c["path"], c["before"].strip(), c["new"]]
                                                            for c in state["changes"]],
                                                "refused": state["skipped"], "notes": state["notes"]}
                    say(f"tuned: {len(state['changes'])} setting(s) changed for the run, reverted after")
            if self.live or self.metrics_file is not None:
                settings.live = LiveView(view.live if self.live else None, self.metrics_file, say=say)
            yield settings
        finally:
            try:
                if tuned_here:
                    tune.revert(state_path, root="/")
                    say("tuning reverted")
                if target_tuning is not None and target_tuning.kept is not None:
                    target_tuning.revert()
                    say(f"tuning of {self.target.address} reverted")
            finally:
                signal.signal(signal.SIGTERM, old_term)
                signal.signal(signal.SIGHUP, signal.SIG_DFL if old_hup is None else old_hup)


def recover_stale_tuning(state_path, say) -> None:
    """A tuning left by a `run --tuned` that was killed before it could revert: revert it
    now, so this run starts from the machine's own settings and owns its tuning."""
    try:
        state = tune.read_state(state_path)
    except FileNotFoundError:
        return
    who = tune.stale_owner(state)
    if who:
        tune.revert(state_path, root="/")
        say(f"reverted the tuning left by rtgauge pid {who.get('pid')}, which ended without reverting it")


def stale_tuning_check() -> dict | None:
    """For doctor: a tuning in place that no running rtgauge owns."""
    path = tune.default_state_path()
    try:
        state = tune.read_state(path)
    except FileNotFoundError:
        return None
    except UserError as e:
        return {"name": "tuning", "status": "bad", "value": f"unreadable state {path}",
                "advice": str(e)}
    who = tune.stale_owner(state)
    n = len(state.get("changes", []))
    if who:
        return {"name": "tuning", "status": "bad",
                "value": f"{n} setting(s) tuned by `rtgauge run --tuned` (pid {who.get('pid')}), which ended "
                         "without reverting them; no running rtgauge owns this tuning",
                "advice": f"revert it with `rtgauge tune --revert` (state {path})"}
    if state.get("applied_by", "tune --apply") == "tune --apply":
        return {"name": "tuning", "status": "info", "value": f"{n} setting(s) tuned by `rtgauge tune --apply`",
                "advice": "`rtgauge tune --revert` restores them"}
    return {"name": "tuning", "status": "info", "value": f"{n} setting(s) tuned by a running `rtgauge run --tuned`",
            "advice": "reverted when that run ends"}

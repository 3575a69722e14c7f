"""`run --tuned --target ...`: the tuning of rtgauge/tune applied on the target for
the run and reverted byte for byte, also on failure, Ctrl-C and a lost connection.

What to change is decided here, by rtgauge.tune's own Tuner reading the target's
files (fetched in one read over the connection, rtgauge/remote/facts.py) without
writing them: the same governors, THP and IRQ affinity settings, the same checks of
every path and value (tune.check_change). The target only runs plain shell: one
script writes the values and keeps, in STATE_DIR there (/run: gone at reboot, as the
tuning is), each file's bytes before and a revert.sh that writes them back in reverse
order and compares each file with its bytes before (through a pipe: GNU cmp
takes the size 0 of a /proc file for a difference), removing the state only when
all read back as before.

The tuning is held by a process kept on the target under keep.sh for the run (a
heartbeat a second): when rtgauge ends it, says nothing for SILENCE_S seconds (a lost
connection) or goes away, keep.sh runs revert.sh there. A state left by a keeper that
is gone (killed with its session) is reverted by the next `run --tuned` there.
RT throttling (--rt-throttling-off) is not switched off on a target."""

from __future__ import annotations

import shlex

from rtgauge import tune
from rtgauge.errors import UserError
from rtgauge.remote.facts import remove_tree, tuning_tree
from rtgauge.remote.ssh import ConnectionLost

STATE_DIR = "/run/rtgauge/target-tune"
HOLD = ["sleep", "86400000"]      # ends at SIGINT (a shell loop would go on)
ATEXIT = f"[ -f {STATE_DIR}/revert.sh ] && sh {STATE_DIR}/revert.sh\n"


class PlanningTuner(tune.Tuner):
    """A Tuner that reads a copy of the target's files and records what it would
    write, writing nothing."""

    def set(self, setting, path, value, restore_of=lambda before: before.strip()) -> bool:
        before = self.read_bytes(path)
        if before is None:
            return False
        restore = restore_of(before)
        if restore == value:
            return False
        change = tune.Change(setting, path, before, value, restore)
        tune.check_change(change.to_dict(), self.root)
        self.changes.append(change)
        return True


def plan(root: str) -> tuple[PlanningTuner, list[int], list[int]]:
    online = tune.online_cpus(root)
    measured = online[1:] or online
    housekeeping = tune.housekeeping_for(measured, online)
    tuner = PlanningTuner(root)
    tuner.governors()
    tuner.thp()
    tuner.irq_affinity(housekeeping)
    tuner.notes.append("cpu_dma_latency: held at 0 by the engine during every run; nothing to set")
    return tuner, measured, housekeeping


def apply_script(changes: list[tune.Change], owner_pid: int) -> str:
    """The shell script that tunes the target: state first, then each write."""
    s = STATE_DIR
    lines = ["umask 077", "mkdir -p /run/rtgauge", f"mkdir {s} || {{ echo @busy; exit 3; }}",
             f"echo {owner_pid} > {s}/owner", f"cat > {s}/revert.sh <<'RTGAUGE_END'", revert_script(changes),
             "RTGAUGE_END"]
    for i, c in enumerate(changes):
        p, v = shlex.quote(c.path), shlex.quote(c.new)
        lines.append(f"if cat {p} > {s}/before.{i} 2>/dev/null && printf %s {v} > {p} 2>/dev/null; "
                     f"then : > {s}/done.{i}; echo @done {i}; else echo @skip {i}; fi")
    return "\n".join(lines) + "\n"


def revert_script(changes: list[tune.Change]) -> str:
    s = STATE_DIR
    lines = ["bad=0"]
    for i, c in reversed(list(enumerate(changes))):
        p, r = shlex.quote(c.path), shlex.quote(c.restore)
        lines.append(f"if [ -f {s}/done.{i} ]; then printf %s {r} > {p}; "
                     f"if cat {p} | cmp -s - {s}/before.{i}; then rm -f {s}/done.{i}; "
                     f"else echo @differs {p}; bad=1; fi; fi")
    lines.append(f'[ $bad = 0 ] && rm -rf {s} && echo @reverted')
    lines.append("exit $bad")
    return "\n".join(lines)


class TargetTuning:
    """Tuning of a target for one run: apply(), then revert() (or keep.sh reverts it)."""

    def __init__(self, session, say):
        self.session = session
        self.say = say
        self.kept = None

    def recover_stale(self) -> None:
        """A tuning left there by a run whose keeper is gone: revert it now; one held
        by a running rtgauge is refused."""
        s = STATE_DIR
        out = self.session.sh(f'if [ -d {s} ]; then o=$(cat {s}/owner 2>/dev/null); '
                              f'if [ -n "$o" ] && kill -0 "$o" 2>/dev/null; then echo "@held $o"; '
                              f'elif [ -f {s}/revert.sh ]; then sh {s}/revert.sh; else echo @nostate; fi; fi')
        if out.startswith("@held"):
            raise UserError(f"{self.session.address} is tuned by another running rtgauge (its keeper is pid "
                            f"{out.split()[1]} there); wait for that run to end, or run without --tuned.")
        if "@reverted" in out:
            self.say(f"reverted the tuning left on {self.session.address} by a run that ended without reverting it")
        elif out.strip():
            raise UserError(f"a tuning left on {self.session.address} ({STATE_DIR}) could not be reverted "
                            f"({out.strip().splitlines()[-1]}); check those settings there and remove {STATE_DIR}.")

    def apply(self) -> dict:
        for tool, package in (("setsid", "util-linux"), ("cmp", "diffutils")):
            if not self.session.has(tool):
                raise UserError(f"--tuned cannot run on {self.session.address}: it needs {tool}, which is not "
                                f"installed there; install {package} there (BusyBox has both), or drop --tuned.")
        self.recover_stale()
        root = tuning_tree(self.session.read_files)
        try:
            tuner, measured, housekeeping = plan(root)
        finally:
            remove_tree(root)
        # the keeper first: from here on, a lost connection reverts what was written
        self.kept = self.session.start_kept(lambda d: HOLD, atexit=ATEXIT)
        if not self.kept.pid or not self.session.kept_running(self.kept):
            self._release()
            raise UserError(f"the keeper of the tuning did not start on {self.session.address}; nothing was tuned.")
        out = self.session.sh_input("sh -s", apply_script(tuner.changes, self.kept.pid))
        if "@busy" in out:
            self._release()
            raise UserError(f"{self.session.address} was tuned by another rtgauge a moment ago; run again later.")
        done = {int(line.split()[1]) for line in out.splitlines() if line.startswith("@done ")}
        changed = [c for i, c in enumerate(tuner.changes) if i in done]
        refused = [{"setting": c.setting, "path": c.path, "why": "the target refused the write"}
                   for i, c in enumerate(tuner.changes) if i not in done]
        return {"target": self.session.address, "state": STATE_DIR,
                "changed": [[c.path, c.before.strip(), c.new] for c in changed],
                "refused": tuner.skipped + refused, "notes": tuner.notes,
                "measured_cpus": tune.format_cpu_list(measured),
                "housekeeping_cpus": tune.format_cpu_list(housekeeping)}

    def revert(self) -> None:
        """End the keeper: keep.sh reverts there; a file that does not read back as
        before is an error naming it (the state stays there)."""
        try:
            files = self._release()
        except ConnectionLost:
            self.say(f"[yellow]lost the connection to {self.session.address}: its keeper there reverts the "
                     "tuning by itself within seconds[/]")
            return
        log = files.get("atexit.log", b"").decode(errors="replace")
        if "@reverted" not in log:
            differs = [line.split(" ", 1)[1] for line in log.splitlines() if line.startswith("@differs ")]
            raise UserError(f"the tuning of {self.session.address} was reverted, but "
                            f"{', '.join(differs) or 'some settings'} do not read back as before; the state stays "
                            f"in {STATE_DIR} there.")

    def _release(self) -> dict:
        kept, self.kept = self.kept, None
        return self.session.stop_kept(kept, ()) if kept is not None else {}


def tuning_check(session) -> dict | None:
    """For `doctor --target`: a tuning of rtgauge's in place there, held by a running
    run or left by one whose keeper is gone."""
    s = STATE_DIR
    out = session.sh(f'if [ -d {s} ]; then o=$(cat {s}/owner 2>/dev/null); n=$(ls {s} | grep -c "^done\\.") ; '
                     f'if [ -n "$o" ] && kill -0 "$o" 2>/dev/null; then echo "held $n"; else echo "left $n"; fi; fi')
    words = out.split()
    if len(words) != 2:
        return None
    if words[0] == "held":
        return {"name": "tuning", "status": "info", "value": f"{words[1]} setting(s) tuned by a running "
                "`rtgauge run --tuned --target`", "advice": "reverted when that run ends"}
    return {"name": "tuning", "status": "bad", "value": f"{words[1]} setting(s) tuned by a `rtgauge run --tuned "
            "--target` whose keeper is gone, not reverted", "advice": f"the next `rtgauge run --tuned --target "
            f"{session.address}` reverts them (state {STATE_DIR} there)"}

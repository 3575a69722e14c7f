"""`rtgauge tune --apply | --revert | --status`: set what doctor flags, and undo it exactly."""

from __future__ import annotations

from pathlib import Path

from rtgauge import tune
from rtgauge.errors import UserError
from rtgauge.loads.partition import parse_cpus_option
from rtgauge.report.safe import say
from rtgauge.tune import housekeeping_for, online_cpus


def measured_and_housekeeping(rt_cpus: str | None) -> tuple[list[int], list[int]]:
    online = online_cpus()
    measured = parse_cpus_option("--rt-cpus", rt_cpus, online) if rt_cpus else online[1:]
    if not measured:
        raise UserError("one CPU only: there is no CPU to keep the interrupts away from; nothing to tune "
                        "for isolation (give --rt-cpus on a machine with more CPUs).")
    return measured, housekeeping_for(measured, online)


def print_state(state: dict, verb: str) -> None:
    for c in state.get("changes", []):
        say(f"{verb} {c['path']}: {c['before'].strip()!r} -> {c['new'] if verb == 'set' else c['restore']!r}")
    for s in state.get("skipped", []):
        say(f"left {s.get('path')}: the kernel refused ({s.get('why')})")
    for n in state.get("notes", []):
        say(f"note: {n}")
    if state.get("watchdog"):
        w = state["watchdog"]
        say(f"watchdog pid {w['pid']} restores {w['restores']} = {w['value']} at the latest by its deadline")


def cmd_tune(args) -> int:
    state_path = Path(args.state) if args.state else tune.default_state_path(args.db)
    if args.status:
        try:
            state = tune.read_state(state_path)
        except FileNotFoundError:
            print(f"nothing applied (no {state_path})")
            return 0
        print_state(state, "set")
        who = tune.stale_owner(state)
        if who:
            print(f"stale: applied by `rtgauge run --tuned` (pid {who.get('pid')}), which ended without "
                  "reverting it; `rtgauge tune --revert` restores the settings.")
        return 0
    if args.revert:
        state = tune.revert(state_path, root="/")
        print_state(state, "restored")
        print(f"reverted {len(state['changes'])} setting(s); every file reads back as before.")
        return 0
    if args.rt_throttling_off is not None and not 1 <= args.rt_throttling_off <= 7 * 86400:
        raise UserError("--rt-throttling-off takes the seconds until the watchdog restores it, 1 to 604800.")
    measured, housekeeping = measured_and_housekeeping(args.rt_cpus)
    state = tune.apply(state_path, measured, housekeeping, rt_unthrottled_for_s=args.rt_throttling_off)
    print_state(state, "set")
    print(f"applied {len(state['changes'])} setting(s); state in {state_path}; undo with `rtgauge tune --revert`.")
    return 0

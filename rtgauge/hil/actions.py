"""What `rtgauge hil veth` and `rtgauge hil sustained` do, once rtgauge/hil/command.py has
parsed the line: the loop across a veth pair, and the sustained-rate sweep (kept in the
results store with --store). docs/hil.md."""

from __future__ import annotations

import json
import sys

from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.hil.sustained import SustainedSpec, check_spec, run_sustained, sustained_and_store, sustained_document
from rtgauge.hil.veth import merge, run_veth
from rtgauge.store import open_store
from rtgauge.sysinfo import collect_facts, run_doctor


def veth(options: list[str]) -> int:
    result = run_veth(options)
    if result.errors and not (result.sim and result.device):
        raise UserError("; ".join(e.rstrip(".") for e in result.errors) + ".")
    doc = merge(result)
    print(json.dumps(doc))
    return 0 if doc["ok"] else 1


def sustained(a, sizes: list[int]) -> int:
    """The sweep from the parsed options A (command.sustained_main) and its sizes."""
    spec = check_spec(SustainedSpec(payload=a.payload, sizes=sizes, frames=a.frames, start_us=a.start_us,
                                    min_us=a.min_us, max_us=a.max_us, precision=a.precision,
                                    retries=a.retries, threads=a.threads), "sustained")
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731
    if not a.store:
        print(json.dumps(sustained_document(run_sustained(engine_path(), spec, say))))
        return 0

    facts = collect_facts()
    store = open_store(a.db)
    try:
        run_id = store.begin_run(facts, run_doctor(facts), "hil-sustained", "", sys.argv)
        try:
            doc = sustained_and_store(store, run_id, spec, say)
        except BaseException as e:
            store.finish_run(run_id, "failed", f"{type(e).__name__}: {e}")
            raise
        store.finish_run(run_id, "complete", "hil sustained-rate sweep")
    finally:
        store.close()
    print(json.dumps(doc))
    return 0

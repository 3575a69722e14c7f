"""The engine itself as a tool adapter: the documents rtgauge-engine writes with --out,
run here (`run`) or copied from a board without Python (`import`: one document, or a
directory of them, NAME.json or NAME@CONDITION.json, one new run whose system facts come
from the documents' env)."""

from __future__ import annotations

import re
from pathlib import Path

from rtgauge.catalogue import catalogue
from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.store import validate
from rtgauge.tools.adapter import CONDITION, Adapter, Found, Imported

JOB_NAME = re.compile(r"[^\x00-\x1f\x7f-\x9f/]{1,200}")
DOCUMENTS_MAX = 10_000          # engine documents of one directory (a run's jobs)


def is_engine_document(doc) -> bool:
    return isinstance(doc, dict) and "test" in doc and "schema" in doc and isinstance(doc.get("metrics", {}), dict)


def sniff(found: Found) -> bool:
    """An engine document; or a directory (of documents: the table's last word on one)."""
    return found.is_dir or (found.is_json and is_engine_document(found.data))


def command(job, out_path: str, extra: list[str] = ()) -> list[str]:
    return [engine_path(), job.test, "--out", out_path, *job.engine_args(), *extra]


RT_POLICIES = ("fifo", "rr")


def realtime_priority(job) -> int | None:
    """The job's priority when its policy (given, else the test's default) is real time."""
    opts = catalogue().test(job.test).options
    policy = job.options.get("policy", opts["policy"].default if "policy" in opts else None)
    prio = job.options.get("priority", opts["priority"].default if "priority" in opts else 1)
    return int(prio) if policy in RT_POLICIES else None


def takes_cpus(job) -> bool:
    """Whether the job's test measures on a CPU list (the catalogue says)."""
    info = catalogue().tests.get(job.test)
    return bool(info and info.takes_cpus)


def run_on_target(session, job, stop, limit, on_tick):
    """The engine built for the board, run there by the session (rtgauge/remote)."""
    outcome = session.run_engine([job.test, *job.engine_args()], stop, limit, on_tick)
    return outcome, ["rtgauge-engine", job.test, "--out", "RESULT", *job.engine_args()]


def to_document(raw, job, where: str, status: int, interrupted: bool):
    return raw                  # the contract's own: checked as every tool's is


def facts_from_env(env: dict) -> dict:
    """System facts for a run measured where rtgauge's Python was not: what the
    engine recorded about its system."""
    return {
        "hostname": env.get("hostname"), "machine_id": None, "kernel_release": env.get("kernel"),
        "kernel_version": env.get("kernel_version"), "arch": env.get("machine"), "cpu_model": None,
        "cpus": env.get("online_cpus"), "preempt_model": env.get("preempt_model"),
        "realtime": env.get("realtime_kernel"), "rt_runtime_us": env.get("sched_rt_runtime_us"),
        "rt_period_us": env.get("sched_rt_period_us"),
        "clocksource": {"current": env.get("clocksource")} if env.get("clocksource") else None,
        "facts_source": "engine documents (imported; rtgauge doctor did not run there)",
    }


def documents(paths: list[Path], condition: str) -> tuple[dict, list[tuple[dict, dict]]]:
    if len(paths) > DOCUMENTS_MAX:
        raise UserError(f"{paths[0].parent} holds {len(paths):,} documents, more than one import takes "
                        f"({DOCUMENTS_MAX:,}); import them from smaller directories.")
    docs = []
    budget, total = validate.import_budget(), [validate.FILE_MAX]   # the directory's together: one file's bounds
    for path in paths:
        doc = validate.read_json_file(path, budget, total)
        if not is_engine_document(doc):
            raise UserError(f"{path} is not an engine JSON document (it has no 'schema' and 'test'); "
                            "remove it from the directory or give the file alone.")
        validate.check_engine_document(doc, str(path))
        name = path.stem
        cond = name.split("@", 1)[1] if "@" in name else condition
        if not JOB_NAME.fullmatch(name) or validate._lone_surrogate(name) or not CONDITION.fullmatch(cond):
            raise UserError(f"{validate.shown_place(str(path))} is not named as rtgauge names a document (NAME.json or "
                            "NAME@CONDITION.json: no control characters, a condition of 1 to 64 letters, digits, "
                            "'.', '_', '+' or '-'); rename it.")
        tool = str(doc.get("tool") or "engine")
        env = doc.get("env") if isinstance(doc.get("env"), dict) else {}
        start, end = env.get("run_start_ns"), env.get("run_end_ns")
        job = {"name": name if "@" in name else f"{name}@{cond}", "tool": tool, "test": str(doc["test"]),
               "condition": cond, "reference": tool != "engine", "load": {"condition": cond, "imported": True},
               "started_at": None, "exit_status": None, "command": [],
               "duration_s": (end - start) / 1e9 if isinstance(start, int) and isinstance(end, int) else None}
        docs.append((job, doc))
    identities = {}
    for job, doc in docs:
        env = doc.get("env") or {}
        identities.setdefault((env.get("hostname"), env.get("kernel"), env.get("kernel_version")), []).append(job["name"])
    if len(identities) > 1:
        systems = "; ".join(f"{h or '?'} {k or '?'}: {', '.join(n)}" for (h, k, _), n in identities.items())
        raise UserError(f"the documents come from {len(identities)} systems ({systems}); import each system's "
                        "documents from its own directory.")
    env = next((d.get("env") for _, d in docs if d.get("env")), {}) or {}
    return facts_from_env(env), docs


def read(found: Found, condition: str) -> Imported:
    if found.is_dir:
        paths = sorted(p for p in found.path.iterdir() if p.suffix == ".json" and p.is_file())
        if not paths:
            raise UserError(f"{found.path} holds no .json engine documents; copy the engine's --out files there.")
    else:
        paths = [found.path]
    where = str(found.path)
    facts, docs = documents(paths, condition)
    starts = [d["env"]["run_start_wall"] for _, d in docs
              if isinstance(d.get("env"), dict) and isinstance(d["env"].get("run_start_wall"), str)]
    failed = sum(1 for _, d in docs if d.get("ok") is not True)
    return Imported("engine documents", facts, docs, started=min(starts) if starts else None, paths=paths,
                    what=f"{len(docs)} engine document{'s' if len(docs) != 1 else ''} of "
                         f"{facts.get('hostname') or '?'}",
                    profile_source=f"engine documents from {where}",
                    note=f"imported {len(docs)} engine documents from {where}" + (f", {failed} not ok" if failed else ""))


ADAPTER = Adapter("engine", sniff, read, command=command, to_document=to_document,
                  realtime_priority=realtime_priority, fallback_option="allow-fallback", takes_cpus=takes_cpus,
                  run_on_target=run_on_target, records_command_line=True)

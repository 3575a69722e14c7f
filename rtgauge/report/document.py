"""A stored run as a document: `show RUN --json` and `run --json` print it (the run with
its analyses: tire model, pWCET, host stalls, published studies, tire cost, and the
rating). Below the command line so both commands write it with one function."""

from __future__ import annotations

import json
import sys

from rtgauge.analysis.pwcet import measurement_pwcet
from rtgauge.analysis.run.headline import headline
from rtgauge.analysis.run.marks import marks_json
from rtgauge.analysis.run.rows import is_latency_measurement
from rtgauge.analysis.run.tire import tire_summary
from rtgauge.analysis.studies.conclusions import check_conclusions
from rtgauge.analysis.studies.published import published_verdicts, studies_json
from rtgauge.analysis.studies.tirecost import run_cost_model
from rtgauge.records import Measurement, Run
from rtgauge.report.stalls import stalls_json


def run_document(run: Run) -> dict:
    """A stored run as `show RUN --json` (and `run --json`) print it: the run with its
    analyses (tire model, pWCET, host stalls, published studies, tire cost). The
    analyses read the records; the run is written as a document once, here."""
    tire = tire_summary(run)      # what the report draws of the tire model: maps, limits, curves
    cost = run_cost_model(run)
    pwcet = {id(m): results for m, results in pwcet_results(run)}
    published = published_json(run)
    doc = run.to_dict()
    if any(tire.values()):
        doc.setdefault("analysis", {})["tire"] = tire
    for m, shown in zip(run.measurements, doc.get("measurements", [])):
        shown.update(marks_json(m))
        if id(m) in pwcet:
            shown["pwcet"] = [r.to_json() for r in pwcet[id(m)]]
        stalls = stalls_json(m)
        if stalls is not None:
            shown["host_stalls"] = stalls
    extra = {"published": published, **({"tire_cost": cost} if cost else {})}
    return dict(doc, **extra)


def published_json(run: Run) -> dict:
    """What the report shows of the published evaluations for this run: each study's
    rows with the measurement placed beside them (or why not), and the behaviour
    verdicts beside the published ones (rtgauge/analysis/studies/published.py)."""
    verdicts = [dict(v, cells={str(k): c for k, c in v["cells"].items()}) for v in published_verdicts([run])]
    studied = studies_json([run])
    checks = check_conclusions([run], {st["source"] for st in studied})
    return {"studies": studied, "verdicts": verdicts, "conclusions": [c.to_json() for c in checks]}


def rating_json(run: Run) -> dict:
    r = headline(run)["rating"]
    return {"stars": r.stars, "class": r.klass, "rated": not r.flags, "flags": r.flags, "reasons": r.reasons,
            "unrated_class": r.unrated_class}



def pwcet_results(run: Run) -> list[tuple[Measurement, list]]:
    """(measurement, [Pwcet of the whole run]) per latency measurement that stored
    per-window maxima."""
    out = []
    for m in run.measurements:
        if is_latency_measurement(m) and m.ok is not False:
            results = measurement_pwcet(m)
            if results:
                out.append((m, results))
    return out


def print_json(data) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")

"""The kind of each metric of a document being stored (distribution, scalar, series):
what the engine's catalogue declares (`rtgauge-engine --list --json`, rtgauge/catalogue.py)
for an engine measurement, so the store files a metric by its declaration, not by
guessing from its keys.

The keys decide (`codec.shape_kind`) only for what no catalogue describes: another
tool's document (cyclictest, rtla, jitterdebugger cross-checks and imports), rtgauge's
own Python-side measurements (tire-sweep, hil-sustained), and a metric or test this
engine does not declare (an imported document of another engine version). The
engine's declared kinds and the shapes it emits agree (tests/test_engine_catalogue.py,
"emitted metrics are declared"), so both paths file an engine metric the same way."""

from __future__ import annotations

from rtgauge.catalogue import TestInfo, catalogue
from rtgauge.store.codec import shape_kind

# the catalogue's metric kinds the store has columns for
KINDS = ("distribution", "scalar", "series")


def declared_test(job: dict, doc: dict) -> TestInfo | None:
    """The catalogue's description of an engine measurement's test; None for another
    tool's document and for a test the engine does not have."""
    if str(job.get("tool") or "engine") != "engine":
        return None
    return catalogue().tests.get(str(job.get("test") or doc.get("test") or ""))


def metric_kind(info: TestInfo | None, name: str, metric: dict) -> str:
    """The kind the catalogue declares for metric NAME (or NAME#i) of test INFO, else
    the kind its keys show."""
    declared = info.metric_for(name) if info is not None else None
    return declared.kind if declared is not None and declared.kind in KINDS else shape_kind(metric)

"""cyclictest's -h/--histfile histogram (also what `rtgauge export --format cyclictest`
writes) as a tool adapter, for `import` only: rtgauge runs cyclictest with --json. The
layout's reader and writer are cyclictest's (rtgauge/tools/cyclictest.py); a block
becomes one measurement, named by its "# rtgauge measurement NAME@CONDITION" line where
an export wrote one."""

from __future__ import annotations

import re

from rtgauge.errors import UserError
from rtgauge.store import validate
from rtgauge.tools import cyclictest
from rtgauge.tools.adapter import CONDITION, Adapter, Found, Imported, foreign_job, no_facts


def sniff(found: Found) -> bool:
    return found.is_text and (b"# Histogram" in found.head or b"# rtgauge measurement " in found.head)


def read(found: Found, condition: str) -> Imported:
    where = str(found.path)
    text = validate.read_text_file(found.path)
    try:
        blocks = cyclictest.parse_histfile(text, where)
        docs = []
        for i, block in enumerate(blocks):
            label = block["label"] or ("cyclictest" if len(blocks) == 1 else f"cyclictest-{i + 1}")
            name, _, cond = label.partition("@")
            name = re.sub(r"[^A-Za-z0-9._+-]", "-", name)[:64] or "cyclictest"
            cond = cond if CONDITION.fullmatch(cond or "") else condition
            docs.append((foreign_job(name, cond, "cyclictest", []), cyclictest.document_of_histfile(block)))
    except ValueError as e:
        raise UserError(f"{where} is not a cyclictest histfile rtgauge reads: {e}; give the file cyclictest's "
                        "-h/--histfile wrote, unchanged.") from None
    for _, doc in docs:
        validate.check_engine_document(doc, where)
    names = [job["name"] for job, _ in docs]
    if len(set(names)) != len(names):
        raise UserError(f"{where} holds two histograms named the same ({names}); give each a distinct "
                        "'# rtgauge measurement NAME@CONDITION' line.")
    return Imported("cyclictest histfile", no_facts("none: a cyclictest histfile records no system facts"), docs,
                    f"{len(docs)} histogram{'s' if len(docs) != 1 else ''}; the layout has no system facts, "
                    "interval or start time")


ADAPTER = Adapter("histfile", sniff, read)

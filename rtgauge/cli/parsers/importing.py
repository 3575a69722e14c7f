"""`rtgauge import`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/importing.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

from rtgauge.cli.common import add_db_option


def register(sub) -> None:
    p = sub.add_parser("import", help="import results measured elsewhere",
                       description="Store runs from an rtgauge JSON export, another rtgauge SQLite database, "
                       "a directory of engine JSON documents (a board without Python), cyclictest's "
                       "--json file or -h/--histfile histogram, rtla timerlat hist output, jitterdebugger's "
                       "results (results.json or its -o directory), or stress-ng's log of a --cyclic run. Each run keeps its original start time and "
                       "its origin; a run imported before is not stored twice.")
    p.add_argument("source", metavar="FILE|DIR|-", help="export file, database file, engine document or directory "
                   "of them, cyclictest --json file or histfile, rtla timerlat hist output, jitterdebugger results.json or "
                   "its -o directory, stress-ng --cyclic log; - reads standard input")
    add_db_option(p)
    p.add_argument("--condition", default="idle",
                   help="load condition of engine documents whose name does not say it (NAME@CONDITION.json) "
                   "and of cyclictest, rtla, jitterdebugger and stress-ng files; 1 to 64 letters, digits, '.', '_', '+' or '-' (default idle)")

"""rtgauge's modules, and its packages (cli, plan, hil, analysis, ...), import one
another without a cycle, and only look down a declared order of layers. Read from the
source with ast: every import statement, those inside functions included, so an import
that would only run later counts as much as one at the top of a file. A package cycle
(cli -> hil -> cli: cli.run uses hil.sustained while hil.__main__ used cli's error
wrapper) is a cycle even when no single module closes it."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rtgauge"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported(path: Path, name: str, known: set[str]) -> set[str]:
    """The rtgauge modules that the file imports: `from a.b import c` is a.b.c when that
    is a module, else a.b; relative imports are resolved against the file's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
    return {m for m in out if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imported(path, name, set(mods)) for name, path in mods.items()}


def package_graph(g: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between rtgauge's first-level packages and modules (rtgauge.cli, ...)."""
    def top(m: str) -> str:
        return ".".join(m.split(".")[:2])
    out: dict[str, set[str]] = {}
    for a, bs in g.items():
        out.setdefault(top(a), set()).update(top(b) for b in bs if top(b) != top(a))
    return out


def cycle(g: dict[str, set[str]]) -> list[str] | None:
    try:
        tuple(graphlib.TopologicalSorter(g).static_order())
    except graphlib.CycleError as e:
        return list(e.args[1])
    return None


# The layers, top first: a module may import its own layer and those below it, never one
# above. Measured on the code as it stands (docs/design.md, "Python layers"): the data
# flows engine -> store -> analysis -> report, but the report imports analysis (it asks
# it for the figures), so report sits above analysis; the catalogue and the engine
# binary's locator sit low because analysis and report read the catalogue too.
LAYERS: list[tuple[str, list[str]]] = [
    ("command line", ["rtgauge.__main__", "rtgauge.cli"]),
    ("plan: the plan, its profiles, the run session, a lab of targets",
     ["rtgauge.plan", "rtgauge.profiles", "rtgauge.lab"]),
    ("engine-facing: sweeps, loads, tools, tracing, tuning, remote machines",
     ["rtgauge.hil", "rtgauge.tire", "rtgauge.loads", "rtgauge.tools", "rtgauge.trace", "rtgauge.tune",
      "rtgauge.remote"]),
    ("store", ["rtgauge.store"]),
    ("report", ["rtgauge.report"]),
    ("analysis", ["rtgauge.analysis"]),
    ("engine description and system facts",
     ["rtgauge.catalogue", "rtgauge.enginebin", "rtgauge.sysinfo", "rtgauge.bounds"]),
    ("base", ["rtgauge", "rtgauge.argparsing", "rtgauge.defaults", "rtgauge.config", "rtgauge.units", "rtgauge.errors", "rtgauge.printable", "rtgauge.owner", "rtgauge.published",
              "rtgauge.redact", "rtgauge.safefile", "rtgauge.records",
              "rtgauge.search"]),
]

# Imports that look up, known and each with its reason; none remain today. A new one
# fails the test below; one that is gone must leave this list.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int:
    """The index of the layer the module belongs to (its longest listed prefix)."""
    ranks = {p: i for i, (_, prefixes) in enumerate(LAYERS) for p in prefixes}
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in ranks:
            return ranks[".".join(parts[:n])]
    raise KeyError(module)


def upward_imports(g: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, bs in g.items() for b in bs if layer_of(b) < layer_of(a)}


def test_graph_sees_the_imports():
    """The reader finds what is plainly there (so an empty graph cannot pass the test below)."""
    g = import_graph()
    assert "rtgauge.errors" in g["rtgauge.enginebin"]
    assert "rtgauge.cli.engine" in g["rtgauge.cli"]          # `from rtgauge.cli import ... engine`
    assert "rtgauge.catalogue" in g["rtgauge.analysis.studies.micro"]
    assert g["rtgauge.errors"] == {"rtgauge.printable"}       # the bottom of every layer
    assert g["rtgauge.printable"] == set()


def test_no_import_cycle():
    g = import_graph()
    found = cycle(g)
    assert found is None, "import cycle between modules: " + " -> ".join(found or [])
    found = cycle(package_graph(g))
    assert found is None, "import cycle between packages: " + " -> ".join(found or [])


def test_a_cycle_is_found(tmp_path, monkeypatch):
    """The check itself, on the shape rtgauge had: x.run uses y.s, y.__main__ used x
    (no module cycle, a package cycle); and a plain module cycle through a relative import."""
    pkg = tmp_path / "rtgauge"
    for d in ("x", "y"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "x" / "run.py").write_text("def f():\n    from rtgauge.y import s\n")
    (pkg / "y" / "s.py").write_text("")
    (pkg / "y" / "__main__.py").write_text("from rtgauge.x import run\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    g = import_graph()
    assert g["rtgauge.x.run"] == {"rtgauge.y.s"} and g["rtgauge.y.__main__"] == {"rtgauge.x.run"}
    assert cycle(g) is None
    assert set(cycle(package_graph(g))) == {"rtgauge.x", "rtgauge.y"}
    (pkg / "y" / "s.py").write_text("from ..x import run\n")
    assert set(cycle(import_graph())) == {"rtgauge.x.run", "rtgauge.y.s"}


def test_every_module_has_a_layer():
    unplaced = []
    for m in modules():
        try:
            layer_of(m)
        except KeyError:
            unplaced.append(m)
    assert not unplaced, f"modules in no layer (add their package to LAYERS): {unplaced}"


def test_layers_only_look_down():
    found = upward_imports(import_graph())
    names = {i: name for i, (name, _) in enumerate(LAYERS)}
    new = sorted(found - set(KNOWN_UPWARD))
    assert not new, "imports of a layer above: " + "; ".join(
        f"{a} ({names[layer_of(a)]}) -> {b} ({names[layer_of(b)]})" for a, b in new)
    gone = sorted(set(KNOWN_UPWARD) - found)
    assert not gone, f"known upward imports that are gone (remove them from KNOWN_UPWARD): {gone}"


# A command module (rtgauge/cli/NAME.py) imports the registry (rtgauge/cli/__init__.py)
# and the command line's kit (rtgauge/cli/common.py), never another command module: what
# commands share lives in the layers below (docs/design.md, "A fact decided once ...").
CLI_SHARED = {"rtgauge.cli", "rtgauge.cli.common"}


def command_to_command(g: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, bs in g.items() if a.startswith("rtgauge.cli.")
            for b in bs if b.startswith("rtgauge.cli.") and b not in CLI_SHARED}


def test_command_modules_import_no_other_command_module():
    found = sorted(command_to_command(import_graph()))
    assert not found, "a command module imports another (move what they share below, or to cli/common.py): " + \
        "; ".join(f"{a} -> {b}" for a, b in found)


def test_a_command_importing_another_is_found(tmp_path, monkeypatch):
    """The check itself: cli/a.py importing cli/b.py (even inside a function) is found;
    importing the registry or the kit is not, nor the registry importing a command."""
    pkg = tmp_path / "rtgauge"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("from rtgauge.cli import a\n")
    (pkg / "cli" / "common.py").write_text("")
    (pkg / "cli" / "a.py").write_text("from rtgauge.cli.common import x\nfrom rtgauge import cli\n")
    (pkg / "cli" / "b.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    assert command_to_command(import_graph()) == set()
    (pkg / "cli" / "a.py").write_text("def f():\n    from .b import y\n")
    assert command_to_command(import_graph()) == {("rtgauge.cli.a", "rtgauge.cli.b")}


# analysis' packages, top first (docs/design.md, "analysis/ by concern"): the comparison of
# runs reads the studies and a run's figures, the studies read a run's figures, a run's
# figures read the pWCET, and the pWCET reads the samples file; never the other way.
ANALYSIS_ORDER = ["rtgauge.analysis.compare", "rtgauge.analysis.studies", "rtgauge.analysis.run",
                  "rtgauge.analysis.pwcet", "rtgauge.analysis.samples"]


def analysis_upward(g: dict[str, set[str]]) -> set[tuple[str, str]]:
    def rank(m: str) -> int | None:
        return next((i for i, p in enumerate(ANALYSIS_ORDER) if m == p or m.startswith(p + ".")), None)
    return {(a, b) for a, bs in g.items() for b in bs
            if rank(a) is not None and rank(b) is not None and rank(b) < rank(a)}


def test_analysis_packages_look_down():
    g = import_graph()
    assert "rtgauge.analysis.studies.micro" in g["rtgauge.analysis.compare.regress"]   # edges are seen
    assert not analysis_upward(g)
    # the check itself: the pWCET reading a run's rows would be found
    assert analysis_upward({"rtgauge.analysis.pwcet.fit": {"rtgauge.analysis.run.rows"}}) == {
        ("rtgauge.analysis.pwcet.fit", "rtgauge.analysis.run.rows")}


def test_the_run_session_is_in_the_plan_layer():
    """What moved down stays down: the run session (tuning, tracefs, SIGTERM) is plan,
    the hil command is importable without the command line."""
    g = import_graph()
    assert "rtgauge.plan.session" in g["rtgauge.cli.run"]
    assert {"rtgauge.tune", "rtgauge.trace"} <= g["rtgauge.plan.session"]
    assert not any(m.startswith("rtgauge.cli") for m in g["rtgauge.hil.__main__"] | g["rtgauge.hil.command"])


def test_an_upward_import_is_found(tmp_path, monkeypatch):
    """The check itself: an analysis module importing the store (a layer above it), even
    inside a function, is reported; the store importing analysis (down) is not."""
    pkg = tmp_path / "rtgauge"
    for d in ("analysis", "store"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "store" / "s.py").write_text("from rtgauge.analysis import a\n")
    (pkg / "analysis" / "a.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    assert upward_imports(import_graph()) == set()
    (pkg / "analysis" / "a.py").write_text("def f():\n    from ..store import s\n")
    assert upward_imports(import_graph()) == {("rtgauge.analysis.a", "rtgauge.store.s")}

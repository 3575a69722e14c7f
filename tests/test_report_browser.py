"""The report in a real headless browser (Debian's chromium): it opens from a file,
every section lays out with visible height and drawn plots, the console stays
silent, the page asks the network for nothing, and a screenshot is taken.

Network requests are caught with a local proxy that the browser must use for
everything; the browser's own background traffic (Google update/time hosts) is told
apart from the page's by host. Control pages prove the console scan and the proxy
do catch an error and a request."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from rtgauge.report.html import render
from rtgauge.store import open_store
from test_report_builders import HOSTILE, SYSTEM, full_run_documents, store_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None,
                                reason="chromium is not installed (scripts/setup.sh --all installs it)")
BROWSER_HOSTS = re.compile(r"(google\.com|googleapis\.com|gvt1\.com|gstatic\.com|googleusercontent\.com)(:\d+)?$")
SECTIONS = ("summary", "systems", "latency", "micro", "tire", "method")

PROBE = """<script>
const out = {};
for (const s of document.querySelectorAll('section')) {
  // each plot is drawn twice, for a wide and a narrow screen: the one shown counts
  const svgs = [...s.querySelectorAll('svg')].filter(g => g.getClientRects().length > 0);
  out[s.id] = {height: s.getBoundingClientRect().height, svgs: svgs.length,
               drawn: svgs.filter(g => g.getBoundingClientRect().width > 100 && g.getBBox().height > 50).length};
}
document.body.insertAdjacentHTML('beforeend', '<pre id="probe">' + JSON.stringify(out) + '</pre>');
</script>"""


class Proxy:
    """A proxy that records the first line of every request it gets, and answers nothing."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                line = conn.recv(300).decode("latin-1").split("\r\n")[0]
            except OSError:
                line = ""
            # a connection closed before any byte is not a request (Chromium's speculative
            # preconnect to the proxy, seen once on a loaded machine); anything sent is one
            if line:
                self.requests.append(line)
            conn.close()

    def page_requests(self) -> list[str]:
        out = []
        for line in self.requests:
            parts = line.split()
            target = parts[1] if len(parts) > 1 else line
            host = re.sub(r"^\w+://", "", target).split("/")[0]
            if not BROWSER_HOSTS.search(host):
                out.append(line)
        return out

    def close(self):
        self.sock.close()


def chromium(tmp_path: Path, url: str, *extra: str, proxy: Proxy | None = None) -> subprocess.CompletedProcess:
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr", "--v=0", *extra]
    if proxy:
        args.append(f"--proxy-server=http://127.0.0.1:{proxy.port}")
    return subprocess.run(args + [url], capture_output=True, text=True, timeout=90)


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("browser")
    url = f"sqlite:///{tmp / 'r.db'}"
    a = store_run(url, full_run_documents())
    b = store_run(url, full_run_documents(scale=1.8, misses=4),
                  system=dict(SYSTEM, hostname=HOSTILE, cmdline="quiet </td><img src=x onerror=alert(1)>"))
    with open_store(url) as s:
        html = render([s.get_run(a), s.get_run(b)])
    path = tmp / "report.html"
    path.write_text(html, encoding="utf-8")
    return path


def test_the_checks_catch_a_console_error_and_a_request(tmp_path):
    page = tmp_path / "control.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('probe-error')</script>"
                    "<img src='http://example.invalid/x.png'></body></html>")
    proxy = Proxy()
    try:
        p = chromium(tmp_path, page.as_uri(), "--dump-dom", proxy=proxy)
    finally:
        proxy.close()
    assert any("probe-error" in m for m in console_messages(p.stderr)), p.stderr[-2000:]
    assert any("example.invalid" in r for r in proxy.page_requests()), proxy.requests


def test_report_references_no_network_and_runs_no_script(report):
    html = report.read_text()
    assert not re.search(r"https?://", html)
    assert "<script" not in html.lower()


def test_every_section_renders_without_console_errors_or_requests(report, tmp_path):
    # the probe needs a script, which the report's own policy forbids: measure a copy without it
    probe = tmp_path / "probe.html"
    probe.write_text(re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", report.read_text())
                     .replace("</body>", PROBE + "</body>"))
    proxy = Proxy()
    try:
        p = chromium(tmp_path, probe.as_uri(), "--dump-dom", "--window-size=1400,1200", proxy=proxy)
        q = chromium(tmp_path, report.as_uri(), "--dump-dom", proxy=proxy)
    finally:
        proxy.close()
    assert p.returncode == 0 and q.returncode == 0, p.stderr[-2000:]
    assert proxy.page_requests() == []
    assert console_messages(q.stderr) == [], "the report itself logs nothing"
    # the probe's own page may log nothing either
    assert console_messages(p.stderr) == []
    # the last match: the first is the probe script's own text
    found = json.loads(re.findall(r'<pre id="probe">(\{.*?)</pre>', p.stdout, re.S)[-1])
    assert set(SECTIONS) <= set(found)
    for ident in SECTIONS:
        assert found[ident]["height"] > 60, (ident, found[ident])
    assert found["latency"]["svgs"] >= 8 and found["latency"]["drawn"] == found["latency"]["svgs"]
    assert found["tire"]["drawn"] >= 8
    # the unmodified report renders the same sections, with the hostile host name as text
    for ident in SECTIONS:
        assert f'<section id="{ident}"' in q.stdout
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in q.stdout
    assert "<img src=\"x\"" not in q.stdout


def test_screenshot(report, tmp_path):
    shot = tmp_path / "report.png"
    p = chromium(tmp_path, report.as_uri(), f"--screenshot={shot}", "--window-size=1400,3000")
    assert p.returncode == 0, p.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1400, 3000)
    assert len(data) > 50_000, "a blank page compresses to a few kB; the report does not"

"""What the attribution's end-to-end tests share (tests/test_attribution.py with its
FIFO disturber, tests/test_attribution_storm.py with its IPI storm): `rtgauge run
--attribute` of one latency job on the measured CPU while a disturbance with known
bursts runs, then `show`, `show --json` and the report read back, each checked to
name the disturbance; the caller judges the attribution against its bursts."""

from __future__ import annotations

import json

PROFILE = """
name = "attributed"
[settings]
warmup_s = 0
attribute = true
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = {seconds}
cpus = "{cpu}"
"""


def attributed_run(tmp_path, cpu: int, seconds: float, threshold_us: int, started, ended) -> tuple[dict, list]:
    """The run's stored attribution and the disturbance's bursts. started(): called once
    the run is started (it may block while it disturbs); ended(): called once the run
    has ended, returns the bursts ([start_ns, end_ns] each)."""
    from test_loads import rtgauge_popen
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(seconds=seconds, cpu=cpu))
    db = tmp_path / "r.db"
    run = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report",
                        "--attribute-threshold-us", str(threshold_us))
    try:
        started()
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    bursts = ended()
    assert run.returncode == 0, err
    return read_back(tmp_path, db), bursts


def read_back(tmp_path, db, threshold_from: str = "user") -> dict:
    """The attribution as `show --json` gives it, after `show` and the report are checked
    to carry a "Why it spiked" part after the latency one; its threshold came from
    threshold_from ("user": --attribute-threshold-us; "the job's budget")."""
    from test_loads import rtgauge
    shown = rtgauge("show", "latest", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "Why it spiked" in shown.stdout, shown.stdout
    doc = json.loads(rtgauge("show", "latest", "--db", str(db), "--json").stdout)
    a = doc["measurements"][0]["env"]["attribution"]
    assert a["threshold_from"] == threshold_from and a["spikes"] >= 9, a
    report = tmp_path / "r.html"
    p = rtgauge("report", "latest", "--db", str(db), "-o", str(report))
    assert p.returncode == 0, p.stderr
    html = report.read_text()
    assert html.index("<section id='spikes'") > html.index("<section id='latency'")
    a["_shown"], a["_html"] = shown.stdout, html
    return a


def named_over_bursts(a: dict, bursts: list, name: str, near) -> tuple[int, int]:
    """(spikes over a burst named `name`, spikes over a burst)."""
    injected = [s for s in a["spike_list"] if near(s, bursts, 0)]
    return sum(name in s["cause"] for s in injected), len(injected)

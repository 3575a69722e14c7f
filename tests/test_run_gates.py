"""`rtgauge run` as a CI gate, with the real engine: --fail-on absolute rules, the
verdict against a budget and their exit statuses, --junit files checked with a real
XML parser against the common JUnit schema's constraints, --until-verdict, and the
rating of a short idle-only run ("not rated", its reasons, virtualisation said)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lxml import etree

from conftest import needs_root, rtgauge
from rtgauge.errors import EXIT_GATE_TRIPPED, EXIT_OK, EXIT_UNDECIDED, EXIT_USAGE
from rtgauge.store import open_store

pytestmark = pytest.mark.shared

ROOT = Path(__file__).resolve().parent.parent

PROFILE = """
name = "gate"
[settings]
warmup_s = 0.2
[[jobs]]
name = "latency"
test = "latency"
conditions = {conditions}
cross_check = {cross}
[jobs.options]
interval-us = {interval}
duration-s = {seconds}
priority = 80
histogram = 5000
"""

# The common JUnit XML schema (the Ant / Jenkins layout CI servers read), written down
# here: testsuites > testsuite (name, tests required; counts non-negative integers;
# timestamp ISO 8601 without a zone) > testcase (name required) with at most one of
# skipped / error / failure, whose message and type are optional attributes.
JUNIT_XSD = b"""<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:simpleType name="ISO8601_DATETIME_PATTERN">
    <xs:restriction base="xs:dateTime"><xs:pattern value="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"/></xs:restriction>
  </xs:simpleType>
  <xs:complexType name="problem">
    <xs:simpleContent><xs:extension base="xs:string">
      <xs:attribute name="message" type="xs:string"/><xs:attribute name="type" type="xs:string"/>
    </xs:extension></xs:simpleContent>
  </xs:complexType>
  <xs:complexType name="testcase">
    <xs:choice minOccurs="0" maxOccurs="1">
      <xs:element name="skipped" type="problem"/><xs:element name="error" type="problem"/>
      <xs:element name="failure" type="problem"/>
    </xs:choice>
    <xs:attribute name="name" type="xs:token" use="required"/>
    <xs:attribute name="classname" type="xs:token"/>
    <xs:attribute name="time" type="xs:decimal"/>
  </xs:complexType>
  <xs:complexType name="testsuite">
    <xs:sequence>
      <xs:element name="properties" minOccurs="0"/>
      <xs:element name="testcase" type="testcase" minOccurs="0" maxOccurs="unbounded"/>
      <xs:element name="system-out" type="xs:string" minOccurs="0"/>
      <xs:element name="system-err" type="xs:string" minOccurs="0"/>
    </xs:sequence>
    <xs:attribute name="name" type="xs:token" use="required"/>
    <xs:attribute name="tests" type="xs:nonNegativeInteger" use="required"/>
    <xs:attribute name="failures" type="xs:nonNegativeInteger"/>
    <xs:attribute name="errors" type="xs:nonNegativeInteger"/>
    <xs:attribute name="skipped" type="xs:nonNegativeInteger"/>
    <xs:attribute name="time" type="xs:decimal"/>
    <xs:attribute name="timestamp" type="ISO8601_DATETIME_PATTERN"/>
    <xs:attribute name="hostname" type="xs:token"/>
    <xs:attribute name="id" type="xs:int"/>
    <xs:attribute name="package" type="xs:token"/>
  </xs:complexType>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence><xs:element name="testsuite" type="testsuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="tests" type="xs:nonNegativeInteger"/>
      <xs:attribute name="failures" type="xs:nonNegativeInteger"/>
      <xs:attribute name="errors" type="xs:nonNegativeInteger"/>
      <xs:attribute name="time" type="xs:decimal"/>
    </xs:complexType>
  </xs:element>
</xs:schema>"""


def profile(tmp_path, seconds=2, conditions='["idle"]', cross=False, interval=1000) -> str:
    path = tmp_path / "gate.toml"
    c = '["cyclictest"]' if cross and shutil.which("cyclictest") else "[]"
    path.write_text(PROFILE.format(seconds=seconds, conditions=conditions, cross=c, interval=interval))
    return str(path)


def junit(path) -> etree._Element:
    """The file parsed by a real XML parser and validated against the schema."""
    schema = etree.XMLSchema(etree.fromstring(JUNIT_XSD))
    doc = etree.parse(str(path))
    schema.assertValid(doc)
    root = doc.getroot()
    for suite in root.iter("testsuite"):      # the counts say what the cases say
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in cases)
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in root.iter("testsuite"))
    return root


def test_the_schema_check_rejects_a_broken_junit_file(tmp_path):
    """The validation can fail: counts that are not numbers and a case without a name."""
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuites><testsuite name='x' tests='many'><testcase/></testsuite></testsuites>")
    with pytest.raises(etree.DocumentInvalid):
        junit(bad)


@needs_root
def test_a_broken_rule_exits_3_with_a_junit_case_per_job_and_rule(tmp_path):
    out = tmp_path / "out.xml"
    p = rtgauge("run", "--profile", profile(tmp_path, cross=True), "--db", str(tmp_path / "r.db"), "--no-report",
                "--fail-on", "max_latency>1us", "--fail-on", "max_latency>10s", "--junit", str(out))
    assert p.returncode == EXIT_GATE_TRIPPED, p.stdout + p.stderr
    assert "--fail-on max_latency>1us" in p.stdout and "fail" in p.stdout
    root = junit(out)
    cases = {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}
    jobs = {cls for cls, _ in cases}
    assert any(j.endswith("latency@idle") for j in jobs)
    if shutil.which("cyclictest"):
        assert any(j.endswith("latency@idle/cyclictest") for j in jobs)
    for job in jobs:     # one case per job and rule
        assert cases[(job, "max_latency>1us")].find("failure") is not None
        assert len(cases[(job, "max_latency>10s")]) == 0      # kept: no failure, no error


@needs_root
def test_a_kept_rule_exits_0_and_a_change_rule_is_refused(tmp_path):
    out = tmp_path / "ok.xml"
    prof = profile(tmp_path, seconds=1)
    p = rtgauge("run", "--profile", prof, "--db", str(tmp_path / "r.db"), "--no-report",
                "--fail-on", "max_latency>10s", "--junit", str(out))
    assert p.returncode == EXIT_OK, p.stdout + p.stderr
    root = junit(out)
    assert root.get("failures") == "0" and root.get("errors") == "0" and int(root.get("tests")) >= 1
    p = rtgauge("run", "--profile", prof, "--db", str(tmp_path / "r2.db"), "--no-report",
                "--fail-on", "max_latency>+20%")
    assert p.returncode == EXIT_USAGE and "baseline" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r2.db").exists() or "Run 1" not in p.stdout


@needs_root
def test_a_short_idle_only_run_is_not_rated_and_says_why(tmp_path):
    p = rtgauge("run", "--profile", profile(tmp_path, seconds=4), "--db", str(tmp_path / "r.db"),
                "--report", str(tmp_path / "r.html"))
    assert p.returncode == EXIT_OK, p.stdout + p.stderr
    text = " ".join(p.stdout.split())
    assert "Rating: not rated" in text and "★" not in text
    assert "too short" in text and "idle only" in text
    with open_store(str(tmp_path / "r.db")) as s:
        run = s.get_run(s.latest_run_id()).to_dict()
    virt = run["system"]["virtualization"]
    if virt.get("vm"):      # this VM: said, with what it means for the claim
        assert "virtualised" in text and "bare metal" in text
        assert virt["evidence"]
    html = (tmp_path / "r.html").read_text()
    assert "not rated" in html and "too short" in html


@needs_root
@pytest.mark.alone
def test_until_verdict_measures_more_rounds_until_its_ceiling(tmp_path):
    """A hard budget far above any wake-up, on 1-second rounds: no exceedance, and no
    credible worst case from so few windows, so it stays undecided; --until-verdict
    keeps measuring rounds until --max-time, then exits 4. The period is 200 ms and the
    budget 100 ms: a host stall of this VM (1-12 ms) skips no period and exceeds no
    budget (at 1 ms, a stall skips periods, and a skipped period is a miss at any
    budget: docs/verdict.md). Alone, not shared: a CI run beside the shared pass saw a
    real-time spinner of another test hold the measured CPU for 1.1 s, skipping a period,
    which a hard budget rightly calls a miss (exit 3)."""
    db = tmp_path / "r.db"
    p = rtgauge("run", "--profile", profile(tmp_path, seconds=1, interval=200_000), "--db", str(db),
                "--no-report", "--budget-us", "100000", "--until-verdict", "--max-time", "8s")
    assert p.returncode == EXIT_UNDECIDED, p.stdout + p.stderr
    out = " ".join(p.stdout.split())      # the console wraps long lines
    assert "not enough evidence" in out and "--until-verdict: undecided, measuring round 2" in out
    assert "still undecided" in out
    with open_store(str(db)) as s:
        run = s.get_run(s.latest_run_id()).to_dict()
    rounds = [(m["name"], m.get("round")) for m in run["measurements"]]
    assert any(r == 2 for _, r in rounds) and all("#" not in n for n, _ in rounds), rounds
    # a budget that is broken at once is decided at once: no second round
    p = rtgauge("run", "--profile", profile(tmp_path, seconds=1), "--db", str(db), "--no-report",
                "--budget-us", "1", "--until-verdict", "--max-time", "30s")
    assert p.returncode == EXIT_GATE_TRIPPED, p.stdout + p.stderr
    assert "measuring round 2" not in p.stdout

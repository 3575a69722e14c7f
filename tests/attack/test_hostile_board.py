"""A hostile board (tests/sshlab.py: a real sshd in namespaces, its files replaced by
bind mounts) cannot hurt the host: CPU lists beyond any machine are clipped before they
are expanded, an oversized file is left out, a file cannot forge transfer frames, a
document of the wrong shape or with NaN becomes a failed measurement saying so, and the
host's resident memory stays under the documented bound (docs/design.md, "Bounded
reads"). The same readers serve `doctor --root DIR`, tried here too."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sshlab
from rtgauge.bounds import CPU_NUMBER_MAX, parse_cpu_list
from rtgauge.errors import RunFailed
from rtgauge.plan import Job
from rtgauge.plan.execute import checked_document
from rtgauge.owner import hash_machine_id
from rtgauge.sysinfo.facts import collect_facts
from rtgauge.sysinfo.readers import FILE_READ_MAX, read_bounded
from rtgauge.remote import ssh as remote
from rtgauge.remote.facts import tree_path

REPO = Path(__file__).resolve().parents[2]
PEAK = str(REPO / "tests" / "peak.py")     # the program's own peak, not the worker's (its docstring)
HUGE = "0-4000000000"
FORGED = b"\x1ertgauge-file 5 /proc/cmdline\nAAAAA\n"
# what the host may hold, whatever the board sends (docs/design.md "Bounded reads")
HOST_RSS_BOUND_MB = 512


def test_cpu_lists_are_clipped_before_they_are_expanded():
    assert parse_cpu_list(HUGE) == list(range(CPU_NUMBER_MAX))
    assert parse_cpu_list("4000000000-4000000005") == []
    assert parse_cpu_list("0-3,9999999999999999999999") == [0, 1, 2, 3]      # a part that does not parse
    assert parse_cpu_list("0-7:2/4") == [0, 1, 4, 5]                           # the kernel's group form
    assert parse_cpu_list("all", [0, 1]) == [0, 1] and parse_cpu_list("2-N", [0, 1, 2, 3]) == [2, 3]


def test_one_cpu_list_grammar():
    """Every module reads and writes CPU lists with rtgauge/bounds.py's functions (plan
    and sysinfo had a grammar each): none defines its own, none takes them from another
    module than bounds."""
    import ast
    from pathlib import Path
    package = Path(parse_cpu_list.__code__.co_filename).parent
    own, elsewhere = [], []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef) and node.name in ("parse_cpu_list", "format_cpu_list") \
                    and path.name != "bounds.py":
                own.append(f"{path.relative_to(package)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module != "rtgauge.bounds" and \
                    any(a.name in ("parse_cpu_list", "format_cpu_list") for a in node.names):
                elsewhere.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not own and not elsewhere, (own, elsewhere)


def test_bounded_reads_refuse_large_files_and_fifos(tmp_path):
    big = tmp_path / "cpuinfo"
    big.write_bytes(b"x" * (FILE_READ_MAX + 1))
    assert read_bounded(str(big)) is None
    small = tmp_path / "small"
    small.write_bytes(b"model name: y\n")
    assert read_bounded(str(small)) == b"model name: y\n"
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_bounded(str(fifo)) is None          # returns at once, never waits for a writer
    assert read_bounded("/dev/zero") is None


def fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    cpu = root / "sys/devices/system/cpu"
    cpu.mkdir(parents=True)
    (root / "proc").mkdir()
    (root / "proc/cmdline").write_text(f"isolcpus=managed_irq,{HUGE} nohz_full={HUGE} rcu_nocbs={HUGE}\n")
    for name in ("online", "isolated", "nohz_full"):
        (cpu / name).write_text(HUGE + "\n")
    (root / "proc/cpuinfo").write_bytes(b"model name\t: big\n" * (FILE_READ_MAX // 16))
    return root


def test_doctor_root_with_huge_cpu_lists_stays_small(tmp_path):
    """`rtgauge doctor --root DIR` with isolcpus=0-4000000000 grew to 8 GB; now it answers
    under the host bound (its peak resident memory read from wait4, through tests/peak.py)."""
    root = fake_root(tmp_path)
    facts = collect_facts(str(root))
    assert facts["cpus"] == CPU_NUMBER_MAX and len(facts["isolcpus"]) == CPU_NUMBER_MAX
    assert facts["cpu_model"] is None                           # /proc/cpuinfo over the bound: not read
    peak = tmp_path / "peak"
    proc = subprocess.Popen([sys.executable, PEAK, str(peak), "--", sys.executable, "-m", "rtgauge", "doctor",
                             "--root", str(root), "--json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert int(peak.read_text()) / 1024 < HOST_RSS_BOUND_MB


def test_frames_are_length_framed():
    stream = b"\x1ertgauge-file %d /etc/machine-id\n" % len(FORGED) + FORGED + b"\x1ertgauge-file 2 /a\nok"
    files = remote.parse_frames(stream)
    assert files == {"/etc/machine-id": FORGED, "/a": b"ok"}
    with pytest.raises(RunFailed):
        remote.parse_frames(b"\x1ertgauge-file 10 /a\nshort")
    with pytest.raises(RunFailed):
        remote.parse_frames(b"\x1ertgauge-file x /a\n")
    big = b"\x1ertgauge-file %d /proc/cpuinfo\n" % (FILE_READ_MAX + 1) + b"y" * (FILE_READ_MAX + 1)
    assert remote.parse_frames(big) == {}                      # cut there at the bound: left out


def test_a_board_file_lands_only_inside_the_tree(tmp_path):
    assert tree_path(str(tmp_path), "/") is None
    assert tree_path(str(tmp_path), "/proc/../../etc/passwd") is None
    assert tree_path(str(tmp_path), "proc/cmdline") is None
    assert tree_path(str(tmp_path), "/proc//cmdline") is None
    assert tree_path(str(tmp_path), "/proc/cmdline") == tmp_path / "proc" / "cmdline"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    if sshlab.available():
        pytest.skip(sshlab.available())
    d = tmp_path_factory.mktemp("hostile")
    (d / "cmdline").write_text(f"isolcpus={HUGE} nohz_full={HUGE} quiet\n")
    (d / "online").write_text(HUGE + "\n")
    (d / "machine-id").write_bytes(FORGED)
    (d / "cpuinfo").write_bytes(b"model name\t: hostile\n" * (FILE_READ_MAX // 10))
    lab = sshlab.start(prelude=f"mount --bind {d / 'cmdline'} /proc/cmdline && "
                               f"mount --bind {d / 'online'} /sys/devices/system/cpu/online && "
                               f"mount --bind {d / 'machine-id'} /etc/machine-id && "
                               f"mount --bind {d / 'cpuinfo'} /proc/cpuinfo")
    yield lab
    sshlab.stop(lab)


def env_of(lab) -> dict:
    e = dict(os.environ, HOME=str(lab.home), PYTHONPATH=str(REPO),
             RTGAUGE_CACHE=os.environ.get("RTGAUGE_CACHE") or str(REPO / "build" / "cross"))
    e.pop("SSH_AUTH_SOCK", None)
    return e


def test_doctor_of_a_hostile_board(hostile):
    """The board's cmdline and cpu/online say 4 billion CPUs, its machine-id holds a
    forged frame, its /proc/cpuinfo is over the bound: the doctor answers, clipped, the
    machine id is the hash of the forged bytes (content, not a frame), cpuinfo is absent,
    and the host's peak memory stays under the bound."""
    proc = subprocess.Popen([sys.executable, "-m", "rtgauge", "doctor", "--target", "ssh://board", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env_of(hostile))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    facts = json.loads(out)["facts"]
    assert facts["cpus"] == CPU_NUMBER_MAX
    assert len(facts["nohz_full"]) <= CPU_NUMBER_MAX
    assert facts["cmdline"].startswith(f"isolcpus={HUGE}")        # the forged frame did not replace it
    assert facts["machine_id"] == hash_machine_id(FORGED.decode().strip())
    assert facts["cpu_model"] is None


def test_doctor_memory_bound_on_a_hostile_board(hostile, tmp_path):
    peak = tmp_path / "peak"
    proc = subprocess.Popen([sys.executable, PEAK, str(peak), "--", sys.executable, "-m", "rtgauge", "doctor",
                             "--target", "ssh://board"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO, env=env_of(hostile))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()
    assert int(peak.read_text()) / 1024 < HOST_RSS_BOUND_MB


def board_document(lab, script: str) -> remote.RemoteRun:
    """A 'tool' on the board whose document (doc.json) is whatever `script` writes to $1."""
    old = dict(os.environ)
    os.environ.update(HOME=str(lab.home))
    os.environ.pop("SSH_AUTH_SOCK", None)
    try:
        async def go():
            async with remote.SshTarget(remote.parse("ssh://board")) as t:
                return await t.run_tool(lambda out: ["sh", "-c", script, "sh", out], time_limit_s=60)
        return asyncio.run(go())
    finally:
        os.environ.clear()
        os.environ.update(old)


JOB = Job(name="lat", tool="engine", test="latency", condition="idle")


@pytest.mark.parametrize("content,fragment", [
    ("[1,2,3]", "not a valid engine document"),
    ('{"schema": 1, "test": "latency", "metrics": {"ti": {"max": NaN}}}', "not a number rtgauge stores"),
    ("[" * 5000 + "]" * 5000, "nests deeper"),
    ('{"schema": 1, "test": "latency", "metrics": {"ti": {"count": 1180591620717411303424}}}', "64 bits"),
    ("\x1ertgauge-file 3 /x\nabc", "not valid JSON"),
])
def test_hostile_documents_become_one_sentence(hostile, content, fragment):
    run = board_document(hostile, f"printf '%s' '{content}' > \"$1\"")
    doc = checked_document(JOB, run.document, "the board's document", run.status, False) \
        if run.document is not None else None
    sentence = (doc or {}).get("error") or run.stderr
    assert fragment in sentence, sentence
    if doc is not None:
        assert doc["ok"] is False and doc["metrics"] == {}


# -- a 64 MiB hostile document through the whole path from a board ---------------------------

WHOLE_PATH = """
import asyncio, sys
sys.path.insert(0, {root!r})
from rtgauge.plan import Job
from rtgauge.plan.execute import checked_document
from rtgauge.remote import ssh as remote
script = sys.argv[1]

async def go():
    async with remote.SshTarget(remote.parse("ssh://board")) as t:
        return await t.run_tool(lambda out: ["sh", "-c", script, "sh", out], time_limit_s=300)

run = asyncio.run(go())
doc = (checked_document(Job(name="lat", tool="engine", test="latency", condition="idle"), run.document,
                        "the board's document", run.status, False) if run.document is not None else {{}})
print(doc.get("ok"), ((doc.get("error") or "") + " " + (run.stderr or ""))[:300])
"""


@pytest.mark.parametrize("shape", ["empty-threads", "one-key-objects"])
def test_a_64_mib_hostile_board_document_stays_under_the_host_bound(hostile, tmp_path, shape):
    """Issue 34's case end to end: the board writes a hostile document just under the
    64 MiB a board's document may be (5 million empty env.threads entries and more), the
    host reads it over SSH (the transfer's buffer included) and checks it: one sentence,
    and the host's peak resident set, read from wait4 through tests/peak.py, under the documented 512 MB."""
    from rtgauge.store import validate
    n = validate.DOCUMENT_MAX - 100
    data = {"empty-threads": lambda: b'{"schema":1,"test":"latency","env":{"threads":[' + b"{}," * (n // 3) + b"{}]}}",
            "one-key-objects": lambda: b'{"schema":1,"test":"latency","params":{"x":[' + b'{"a":0},' * (n // 8)
            + b"0]}}"}[shape]()
    assert n - 100 <= len(data) <= validate.DOCUMENT_MAX
    source = tmp_path / "hostile.json"
    source.write_bytes(data)
    del data
    script = f'cat {source} > "$1"'          # the board's file system is this machine's, in namespaces
    peak = tmp_path / "peak"
    proc = subprocess.Popen([sys.executable, PEAK, str(peak), "--", sys.executable, "-c",
                             WHOLE_PATH.format(root=str(REPO)), script],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env_of(hostile))
    out, err = (b.decode() for b in proc.communicate(timeout=600))
    assert proc.returncode == 0, err
    peak_mb = int(peak.read_text()) / 1024
    # refused in one sentence, before it is parsed (no document), or by the check after
    assert out.split()[0] in ("None", "False") and "more than a document may hold" in out, out
    assert "Traceback" not in out + err, err
    assert peak_mb < HOST_RSS_BOUND_MB, (shape, peak_mb)
    print(f"{shape}: host peak {peak_mb:.0f} MB")

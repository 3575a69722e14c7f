"""HIL loop vs a plain UDP ping-pong (`python3 bench/hil.py`, root).

The round trip of the engine's `hil` loop (payload none) on loopback and through a
veth pair between two network namespaces, beside a minimal C ping-pong with the
same socket options (1 MiB receive buffer, SO_TIMESTAMPNS on the echo side), the
same period, CPUs, policy and priority: the difference is what rtgauge's own
bookkeeping (timestamps, sequence checks, arrays, ppoll-based device) adds.
The cases are interleaved for several rounds; the section "## HIL loop" of
docs/performance.md is rewritten with the medians over rounds and, per round paired
with the ping-pong of the same round, what the loop adds (median, 95 % interval).
With --engine-before PATH another build (e.g. the engine before a change) runs in
the same rounds, so the two builds are compared under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import paired_shift, shift_text, write_section  # noqa: E402
from rtgauge.enginebin import engine_path  # noqa: E402
from rtgauge.hil.veth import DEVICE_IP, SIM_IP, VethPair, merge, run_veth  # noqa: E402

SECTION = "HIL loop"
PRIO = 80

# The baseline: `pp echo IP PORT CPU` answers every datagram with 48 bytes;
# `pp ping IP PORT CPU PERIOD_US N BYTES` sends N frames at absolute deadlines,
# blocks for each reply, and prints the round trips (ns), one a line.
PINGPONG_C = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static long long now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static void rt(int cpu){cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);sched_setaffinity(0,sizeof s,&s);
 struct sched_param p={.sched_priority=80};sched_setscheduler(0,SCHED_FIFO,&p);mlockall(MCL_CURRENT|MCL_FUTURE);}
int main(int c,char**v){
 if(c<4)return 2;
 int fd=socket(AF_INET,SOCK_DGRAM,0),buf=1<<20,on=1;setsockopt(fd,SOL_SOCKET,SO_RCVBUF,&buf,sizeof buf);
 struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(atoi(v[3]))};inet_pton(AF_INET,v[2],&a.sin_addr);
 char b[2048]={0};
 if(!strcmp(v[1],"echo")){rt(atoi(v[4]));setsockopt(fd,SOL_SOCKET,SO_TIMESTAMPNS,&on,sizeof on);
  struct timeval tv={20,0};setsockopt(fd,SOL_SOCKET,SO_RCVTIMEO,&tv,sizeof tv);
  if(bind(fd,(void*)&a,sizeof a))return 1;
  for(;;){struct sockaddr_in f;char ctl[256];struct iovec io={b,sizeof b};
   struct msghdr m={.msg_name=&f,.msg_namelen=sizeof f,.msg_iov=&io,.msg_iovlen=1,.msg_control=ctl,.msg_controllen=sizeof ctl};
   if(recvmsg(fd,&m,0)<0)return 0; sendto(fd,b,48,0,(void*)&f,m.msg_namelen);}}
 rt(atoi(v[4]));long long per=atoll(v[5])*1000,n=atoll(v[6]);int bytes=atoi(v[7]);
 struct timeval tv={0,200000};setsockopt(fd,SOL_SOCKET,SO_RCVTIMEO,&tv,sizeof tv);
 if(connect(fd,(void*)&a,sizeof a))return 1;
 long long *r=calloc(n,sizeof *r),d=now()+100000000LL;
 for(long long k=0;k<n;k++,d+=per){struct timespec t={d/1000000000LL,d%1000000000LL};
  clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&t,NULL);long long s=now();send(fd,b,bytes,0);
  r[k]=recv(fd,b,sizeof b,0)>0?now()-s:-1;}
 for(long long k=0;k<n;k++)printf("%lld\n",r[k]);return 0;}
"""


def build_pingpong(tmp: Path) -> str:
    src, exe = tmp / "pp.c", tmp / "pp"
    src.write_text(PINGPONG_C)
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    return str(exe)


def pct(values: list[int], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(q * len(v) + 0.5) - 1))]


def summarise(rts: list[int]) -> dict:
    ok = [r for r in rts if r >= 0]
    return {"p50": pct(ok, 0.5), "p99": pct(ok, 0.99), "max": max(ok), "lost": len(rts) - len(ok)}


def baseline(pp: str, frames: int, period_us: int, cpus: tuple[int, int], pair: VethPair | None) -> dict:
    ip, port = (SIM_IP, "47100") if pair else ("127.0.0.1", "47101")
    echo_cmd = [pp, "echo", ip, port, str(cpus[1])]
    ping_cmd = [pp, "ping", ip, port, str(cpus[0]), str(period_us), str(frames), "64"]
    echo = pair.spawn(0, echo_cmd) if pair else subprocess.Popen(echo_cmd, stdout=subprocess.PIPE,
                                                                 stderr=subprocess.PIPE, text=True)
    time.sleep(0.2)
    ping = pair.spawn(1, ping_cmd) if pair else subprocess.Popen(ping_cmd, stdout=subprocess.PIPE,
                                                                 stderr=subprocess.PIPE, text=True)
    out, _ = ping.communicate(timeout=frames * period_us / 1e6 + 60)
    echo.kill()
    echo.wait()
    return summarise([int(x) for x in out.split()])


def engine_case(exe: str, frames: int, period_us: int, cpus: tuple[int, int], veth: bool) -> dict:
    opts = ["--frames", str(frames), "--period-us", str(period_us), "--priority", str(PRIO)]
    if veth:
        doc = merge(run_veth(opts + ["--device-cpu", str(cpus[0]), "--sim-cpu", str(cpus[1])], engine=exe))
    else:
        p = subprocess.run([exe, "hil", *opts, "--device-cpu", str(cpus[0]), "--sim-cpu", str(cpus[1])],
                           capture_output=True, text=True, timeout=frames * period_us / 1e6 + 60)
        doc = json.loads(p.stdout)
    m = doc["metrics"]
    return {"p50": m["round_trip"]["p50"], "p99": m["round_trip"]["p99"], "max": m["round_trip"]["max"],
            "lost": m["lost_frames"]["value"], "ti_p50": m["ti"]["p50"], "ts_p50": m["ts"]["p50"]}


def before_engines(specs: list[str]) -> dict[str, str] | str:
    """{label: path} from --engine-before [LABEL=]PATH values, or the sentence saying what is wrong."""
    out: dict[str, str] = {}
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep:
            label, path = "before" if not out else f"before {len(out) + 1}", spec
        if not os.access(path, os.X_OK):
            return f"--engine-before {spec}: {path} is not an executable engine; build it first."
        out[label] = path
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=5000)
    ap.add_argument("--period-us", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--cpus", help="DEVICE,SIM CPUs (default 0,1); e.g. 0,0 when CPU 1 is busy")
    ap.add_argument("--transports", default="loopback,veth", help="loopback, veth or both (default)")
    ap.add_argument("--engine-before", metavar="[LABEL=]PATH", action="append", default=[],
                    help="another engine build measured in the same rounds (repeatable; LABEL names it, "
                         "default 'before')")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/hil.py needs root (SCHED_FIFO, network namespaces).", file=sys.stderr)
        return 2
    transports = [t for t in a.transports.split(",") if t]
    if not transports or set(transports) - {"loopback", "veth"}:
        print(f"--transports '{a.transports}' is not a list of loopback and veth; give e.g. loopback,veth.",
              file=sys.stderr)
        return 2
    befores = before_engines(a.engine_before)
    if isinstance(befores, str):
        print(befores, file=sys.stderr)
        return 2
    engines = {"hil": engine_path(), **{f"hil {label}": path for label, path in befores.items()}}
    cpus = tuple(int(c) for c in a.cpus.split(",")) if a.cpus else (0, 1 % (os.cpu_count() or 1))
    results: dict[str, list[dict]] = {}
    for t in transports:
        results[f"pingpong {t}"] = []
        for name in engines:
            results[f"{name} {t}"] = []
    with tempfile.TemporaryDirectory() as tmp:
        pp = build_pingpong(Path(tmp))
        for r in range(a.rounds):
            for t in transports:
                if t == "veth":
                    with VethPair() as pair:
                        results["pingpong veth"].append(baseline(pp, a.frames, a.period_us, cpus, pair))
                else:
                    results["pingpong loopback"].append(baseline(pp, a.frames, a.period_us, cpus, None))
                for name, exe in engines.items():
                    results[f"{name} {t}"].append(engine_case(exe, a.frames, a.period_us, cpus, t == "veth"))
            print(f"round {r + 1}: " + ", ".join(f"{k} p50 {v[-1]['p50'] / 1000:.1f} us"
                                                  for k, v in results.items()), file=sys.stderr)

    def med(case: str, key: str) -> float:
        return statistics.median(x[key] for x in results[case])

    def series(case: str) -> list[float]:
        return [x["p50"] / 1000 for x in results[case]]

    load1 = os.getloadavg()[0]
    lines = [
        f"`python3 bench/hil.py{' --engine-before ...' if a.engine_before else ''}` "
        f"({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load average {load1:.2f} at the "
        f"end, {platform.node()}, kernel "
        f"{platform.release()}, {os.cpu_count()} CPUs): round trip of {a.frames:,} frames at "
        f"{a.period_us} us, device on CPU {cpus[0]}, simulation / echo on CPU {cpus[1]}, SCHED_FIFO "
        f"{PRIO}, medians over {a.rounds} interleaved rounds. The baseline is a minimal C UDP "
        "ping-pong with the same socket options; the difference is rtgauge's own cost.",
        "",
        "| case | round trip p50 (us) | p99 (us) | max (us) | lost |",
        "|---|---|---|---|---|",
    ]
    for case in results:
        lines.append(f"| {case} | {med(case, 'p50') / 1000:.1f} | {med(case, 'p99') / 1000:.1f} | "
                     f"{med(case, 'max') / 1000:.1f} | {int(med(case, 'lost'))} |")
    for t in transports:
        for name in engines:
            case = f"{name} {t}"
            added = paired_shift(series(case), series(f"pingpong {t}"))
            lines.append("")
            lines.append(f"{case}: Ti p50 {med(case, 'ti_p50') / 1000:.1f} us, Ts p50 "
                         f"{med(case, 'ts_p50') / 1000:.2f} us (payload none); added over the "
                         f"ping-pong at p50 (per round, paired): {shift_text(added, ' us')}.")
        for label in befores:
            change = paired_shift(series(f"hil {t}"), series(f"hil {label} {t}"))
            lines.append("")
            lines.append(f"hil {t}, this build minus {label} at p50 (per round, paired): "
                         f"{shift_text(change, ' us')}.")
    body = "\n".join(lines)
    print(body)
    if not a.no_write:
        write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())

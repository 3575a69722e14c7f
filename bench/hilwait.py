"""How a thread waiting for a datagram learns of it (`python3 bench/hilwait.py`, root).

Why the HIL device has a receiver thread (docs/design.md): a sender on one CPU sends
a datagram every millisecond over loopback; the receiver, on another CPU, waits for
each with a method chosen in turn frame by frame (so the machine's load falls on
every method alike) and stamps it when it has the datagram in hand. The figure is
that instant minus the kernel's receive stamp (SO_TIMESTAMPNS, both on
CLOCK_REALTIME). Methods: a blocking recvmsg (the bare ping-pong, and the device's
receiver now); ppoll with a timeout then recvmsg (the device's former wait: until
the next send instant); ppoll without a timeout then recvmsg (the poll alone). The
section "## HIL: waiting for a reply" of docs/performance.md is rewritten unless
--no-write.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import paired_shift, shift_text, write_section  # noqa: E402

SECTION = "HIL: waiting for a reply"
METHODS = ["blocking recvmsg", "ppoll with a timeout, then recvmsg", "ppoll without a timeout, then recvmsg"]

# `wait N PORT RXCPU TXCPU`: prints, per frame, "method delay_ns".
WAIT_C = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static long long ns(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
static void rt(int cpu){cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);sched_setaffinity(0,sizeof s,&s);
 struct sched_param p={.sched_priority=80};sched_setscheduler(0,SCHED_FIFO,&p);}
int main(int c,char**v){
 if(c<5)return 2;
 int n=atoi(v[1]);mlockall(MCL_CURRENT|MCL_FUTURE);
 struct sockaddr_in a={.sin_family=AF_INET,.sin_port=htons(atoi(v[2]))};inet_pton(AF_INET,"127.0.0.1",&a.sin_addr);
 int fd=socket(AF_INET,SOCK_DGRAM,0),on=1;setsockopt(fd,SOL_SOCKET,SO_TIMESTAMPNS,&on,sizeof on);
 if(bind(fd,(void*)&a,sizeof a))return 1;
 struct timeval tv={1,0};setsockopt(fd,SOL_SOCKET,SO_RCVTIMEO,&tv,sizeof tv);
 pid_t ch=fork();
 if(ch==0){rt(atoi(v[4]));int s=socket(AF_INET,SOCK_DGRAM,0);connect(s,(void*)&a,sizeof a);char b[64]={0};
  long long d=ns(CLOCK_MONOTONIC)+200000000LL;
  for(int k=0;k<n;k++,d+=1000000){struct timespec t={d/1000000000LL,d%1000000000LL};
   clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&t,NULL);send(s,b,64,0);}
  return 0;}
 rt(atoi(v[3]));struct pollfd p={fd,POLLIN,0};
 for(int k=0;k<n;k++){int m=k%3;char b[256],ctl[256];struct iovec io={b,sizeof b};
  struct msghdr h={.msg_iov=&io,.msg_iovlen=1,.msg_control=ctl,.msg_controllen=sizeof ctl};
  ssize_t got;struct timespec to={0,5000000};
  if(m==0)got=recvmsg(fd,&h,0);
  else{ppoll(&p,1,m==1?&to:NULL,NULL);got=recvmsg(fd,&h,MSG_DONTWAIT);}
  long long now=ns(CLOCK_REALTIME);struct cmsghdr*cm=CMSG_FIRSTHDR(&h);
  if(got>0&&cm&&cm->cmsg_type==SCM_TIMESTAMPNS){struct timespec ts;memcpy(&ts,CMSG_DATA(cm),sizeof ts);
   printf("%d %lld\n",m,now-(ts.tv_sec*1000000000LL+ts.tv_nsec));}}
 kill(ch,SIGKILL);return 0;}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=6000, help="datagrams a round (a third per method)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpus", default="0,1", help="RECEIVER,SENDER CPUs (default 0,1)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/hilwait.py needs root (SCHED_FIFO).", file=sys.stderr)
        return 2
    rx, tx = a.cpus.split(",")
    p50: dict[int, list[float]] = {m: [] for m in range(len(METHODS))}
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "wait"
        (Path(tmp) / "wait.c").write_text(WAIT_C)
        subprocess.run(["cc", "-O2", "-o", str(exe), str(Path(tmp) / "wait.c")], check=True)
        for r in range(a.rounds):
            out = subprocess.run([str(exe), str(a.frames), str(47900 + r), rx, tx], capture_output=True,
                                 text=True, timeout=a.frames / 1000 + 60).stdout
            by: dict[int, list[int]] = {m: [] for m in p50}
            for line in out.split("\n"):
                if line:
                    m, d = line.split()
                    by[int(m)].append(int(d))
            for m, values in by.items():
                values.sort()
                p50[m].append(values[len(values) // 2] / 1000)
            print(f"round {r + 1}: " + ", ".join(f"{p50[m][-1]:.2f}" for m in p50), file=sys.stderr)
    lines = [
        f"`python3 bench/hilwait.py` ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load average "
        f"{os.getloadavg()[0]:.2f} at the end, {platform.node()}, kernel {platform.release()}, "
        f"{os.cpu_count()} CPUs): receiver on CPU {rx}, sender on CPU {tx}, SCHED_FIFO 80, one datagram "
        f"a millisecond over loopback, the waiting method chosen in turn frame by frame, {a.frames:,} "
        f"datagrams a round, {a.rounds} rounds. Delay = the receiver holding the datagram − the "
        "kernel's receive stamp.",
        "",
        "| waiting method | delay p50 (us), median of rounds | more than a blocking recvmsg (per round) |",
        "|---|---|---|",
    ]
    for m, name in enumerate(METHODS):
        extra = "" if m == 0 else shift_text(paired_shift(p50[m], p50[0]), " us", "{:+.2f}")
        lines.append(f"| {name} | {statistics.median(p50[m]):.2f} | {extra} |")
    lines += ["", "The HIL device waited with the second method until its receiver thread took the first "
              "(docs/design.md)."]
    body = "\n".join(lines)
    print(body)
    if not a.no_write:
        write_section(SECTION, body)
    return 0


if __name__ == "__main__":
    sys.exit(main())

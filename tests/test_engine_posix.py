"""The POSIX-only engine (meson -Dposix_only=true, docs/porting.md): it builds,
imports no Linux-only symbol (an allow list of POSIX and C names checked against
`nm -D --undefined-only`, with the default build as the control that the check
catches Linux calls), opens no /proc or /sys file of its own, lists the tests
that need Linux as unavailable with the reason, refuses CPU pinning, and runs
the tests that remain -- on this 2-CPU machine latency and the application
tests; on a uniprocessor (the process confined to CPU 0 by taskset, in a mount
namespace where the system says one CPU is online) the one-CPU tests too, with
the deliberately wrong mutex still showing its inversions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import engine_variant, needs_root


needs_meson = pytest.mark.skipif(not (shutil.which("meson") and shutil.which("ninja")),
                                 reason="needs meson and ninja to build the engine")
needs_nm = pytest.mark.skipif(not shutil.which("nm"), reason="needs nm (binutils)")

# What the POSIX-only build must leave out, and why (portable.c).
NEEDS_PROC = {"pi", "mut-arc"}
NEEDS_ONE_CPU = {"switch", "sem", "message", "preempt", "mutex", "deadlock-break", "shuffle", "thread",
                 "thr-new", "thr-rr", "hartstone", "spin", "tick", "sem-lck", "sem-rel"}
EVERYWHERE = {"latency", "overhead", "tire", "hil"}

# POSIX.1-2008 (with its XSI option) and ISO C functions the engine may call.
POSIX_SYMBOLS = set("""
abort accept access aligned_alloc atexit atof atoi atol bind calloc clock_getres clock_gettime
clock_nanosleep clock_settime close connect dup dup2 exit _exit fclose fcntl fdopen feof ferror fflush
fgets fileno fopen fprintf fputc fputs fread free freeaddrinfo fscanf fstat fsync fwrite getaddrinfo getenv
geteuid getpid getppid getrlimit getrusage getsockname getsockopt gettimeofday inet_ntop inet_pton
isatty kill localtime_r lseek malloc memchr memcmp memcpy memmove memset mkdir mlock mlockall mmap
mq_close mq_getattr mq_open mq_receive mq_send mq_timedreceive mq_timedsend mq_unlink munlockall munmap
nanosleep open open_memstream pclose perror pipe poll popen printf pselect pthread_attr_destroy
pthread_attr_init pthread_attr_setdetachstate pthread_attr_setinheritsched pthread_attr_setschedparam
pthread_attr_setschedpolicy pthread_attr_setstacksize pthread_barrier_destroy pthread_barrier_init
pthread_barrier_wait pthread_cancel pthread_cond_broadcast pthread_cond_destroy pthread_cond_init
pthread_cond_signal pthread_cond_timedwait pthread_cond_wait pthread_condattr_destroy
pthread_condattr_init pthread_condattr_setclock pthread_create pthread_detach pthread_equal
pthread_exit pthread_getschedparam pthread_getspecific pthread_join pthread_key_create pthread_kill
pthread_mutex_destroy pthread_mutex_init pthread_mutex_lock pthread_mutex_timedlock
pthread_mutex_trylock pthread_mutex_unlock pthread_mutexattr_destroy pthread_mutexattr_init
pthread_mutexattr_setprioceiling pthread_mutexattr_setprotocol pthread_mutexattr_settype pthread_once
pthread_self pthread_setcancelstate pthread_setschedparam pthread_setschedprio pthread_setspecific
pthread_sigmask pthread_spin_destroy pthread_spin_init pthread_spin_lock pthread_spin_trylock
pthread_spin_unlock pthread_testcancel puts qsort raise read realloc recv recvfrom recvmsg rename
sched_get_priority_max sched_get_priority_min sched_getparam sched_getscheduler sched_rr_get_interval
sched_setparam sched_setscheduler sched_yield select sem_close sem_destroy sem_getvalue sem_init
sem_open sem_post sem_timedwait sem_trywait sem_unlink sem_wait send sendmsg sendto setsockopt
shutdown sigaction sigaddset sigdelset sigemptyset sigfillset sigismember signal sigprocmask sigtimedwait
sigwait snprintf socket sprintf sscanf stat strchr strcmp strcspn strdup strerror strerror_r strlen
strncmp strncpy strndup strrchr strspn strstr strtod strtok_r strtol strtoll strtoul strtoull sysconf
time timer_create timer_delete timer_getoverrun timer_settime uname unlink usleep vfprintf vsnprintf write lstat
acos asin atan atan2 ceil cos exp fabs floor fmax fmod llround nearbyint log log10 lround pow round sin sqrt tan
""".split())

# How glibc implements some of those names at the ABI: errno, <ctype.h>, large
# files, SIGRTMIN, scanf, _FORTIFY_SOURCE, program start, TLS and C++/TM hooks.
GLIBC_ABI = {
    "__errno_location": "errno", "__ctype_b_loc": "isdigit()...", "__ctype_tolower_loc": "tolower",
    "__ctype_toupper_loc": "toupper", "__libc_current_sigrtmin": "SIGRTMIN",
    "__libc_current_sigrtmax": "SIGRTMAX", "__libc_start_main": "startup", "__cxa_finalize": "startup",
    "__cxa_atexit": "startup", "__gmon_start__": "startup", "_ITM_deregisterTMCloneTable": "startup",
    "_ITM_registerTMCloneTable": "startup", "__tls_get_addr": "_Thread_local",
    "__stack_chk_fail": "stack protector", "__assert_fail": "assert",
}
LFS_OR_C99 = {"fopen64": "fopen", "fcntl64": "fcntl", "getrlimit64": "getrlimit", "open64": "open",
              "lseek64": "lseek", "mmap64": "mmap", "fstat64": "fstat", "stat64": "stat", "lstat64": "lstat",
              "__isoc99_sscanf": "sscanf", "__isoc99_fscanf": "fscanf", "__isoc23_strtol": "strtol",
              "__isoc23_strtoll": "strtoll", "__isoc23_sscanf": "sscanf"}

# Linux (GNU) calls the default build makes and the POSIX-only one must not.
LINUX_ONLY = {"syscall", "sem_clockwait", "pthread_clockjoin_np", "pthread_setaffinity_np",
              "pthread_attr_setaffinity_np", "pthread_getaffinity_np", "sched_getaffinity",
              "sched_getcpu", "prctl", "ppoll", "sincos"}


@pytest.fixture(scope="module")
def posix_build() -> Path:
    if not (shutil.which("meson") and shutil.which("ninja")):
        pytest.skip("needs meson and ninja to build the engine")
    return engine_variant("posix", "-Dposix_only=true")


@pytest.fixture(scope="module")
def posix_engine(posix_build) -> Path:
    return posix_build / "src" / "rtgauge-engine"


def imports(binary: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def outside_posix(names: set[str]) -> set[str]:
    return {n for n in names if n not in POSIX_SYMBOLS and n not in GLIBC_ABI
            and LFS_OR_C99.get(n) not in POSIX_SYMBOLS}


def run(engine: Path, *args: str, up: bool = False, timeout: float = 120) -> tuple[int, dict, str]:
    cmd = [str(engine), *args]
    if up:
        cmd = uniprocessor(cmd)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {}, p.stderr


def uniprocessor(cmd: list[str]) -> list[str]:
    """cmd confined to CPU 0, in a mount namespace whose /sys says one CPU is online
    (glibc's sysconf(_SC_NPROCESSORS_ONLN) reads that file)."""
    script = ('set -e; f=$(mktemp); echo 0 > "$f"; mount --bind "$f" /sys/devices/system/cpu/online; '
              'rm -f "$f"; exec taskset -c 0 "$@"')
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "up", *cmd]


def can_fake_uniprocessor() -> bool:
    if os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("taskset")):
        return False
    p = subprocess.run(uniprocessor(["getconf", "_NPROCESSORS_ONLN"]), capture_output=True, text=True)
    return p.returncode == 0 and p.stdout.strip() == "1"


needs_uniprocessor = pytest.mark.skipif(not can_fake_uniprocessor(),
                                        reason="needs root, unshare and taskset to run as on one CPU")


@needs_nm
def test_imports_only_posix_symbols(posix_engine):
    names = imports(posix_engine)
    assert names, "nm found no imports"
    assert not outside_posix(names), f"not POSIX: {sorted(outside_posix(names))}"
    assert not names & LINUX_ONLY


@needs_nm
def test_the_check_catches_the_linux_build(engine_bin):
    """Control: the default build imports Linux calls, and the allow list rejects them."""
    caught = outside_posix(imports(Path(engine_bin)))
    assert {"syscall", "pthread_setaffinity_np", "sem_clockwait", "sched_getaffinity"} <= caught


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_opens_no_proc_or_sys_file_of_its_own(posix_engine, engine_bin):
    def opened(engine: str) -> set[str]:
        with tempfile.NamedTemporaryFile("r") as log:
            subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,access,stat,newfstatat,statx",
                            "-o", log.name, engine, "latency", "--duration-s", "0.1", "--policy", "other",
                            "--no-mlock"], capture_output=True, check=True, timeout=60)
            return {part.split('"')[1] for part in log.read().splitlines() if '"' in part}
    kernel = lambda paths: {p for p in paths if p.startswith(("/proc", "/sys", "/dev"))}
    # glibc's own sysconf(_SC_NPROCESSORS_ONLN / _CONF) reads these two
    libc = {"/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible"}
    assert kernel(opened(str(posix_engine))) <= libc
    assert kernel(opened(engine_bin)) - libc, "control: the Linux build reads /proc or /sys"


def test_catalogue_says_what_is_unavailable_and_why(posix_engine, engine_bin):
    status, doc, err = run(posix_engine, "--list", "--json")
    assert status == 0, err
    tests = {t["name"]: t["availability"] for t in doc["tests"]}
    _, linux, _ = run(Path(engine_bin), "--list", "--json")
    assert set(tests) == {t["name"] for t in linux["tests"]}, "the same tests, listed"
    online = os.sysconf("SC_NPROCESSORS_ONLN")
    for name, a in tests.items():
        if name in NEEDS_PROC or (name in NEEDS_ONE_CPU and online != 1):
            assert a["available"] is False, name
            assert a["reason"].startswith("unavailable in this build because"), a["reason"]
            assert ("/proc/self/task" if name in NEEDS_PROC else "affinity is not POSIX") in a["reason"]
        else:
            assert a["available"] is True, (name, a)
    assert EVERYWHERE <= {n for n, a in tests.items() if a["available"]}


def test_an_unavailable_test_is_refused_with_the_reason(posix_engine):
    status, doc, err = run(posix_engine, "pi")
    assert status == 1
    assert doc["ok"] is False and "unavailable in this build because" in doc["error"]
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_cpu_pinning_is_refused(posix_engine):
    status, doc, err = run(posix_engine, "latency", "--cpus", "0", "--duration-s", "0.1")
    assert status == 2
    assert "--cpus is unavailable in this build" in doc["error"] and doc["error"].endswith(".")
    assert len([line for line in err.splitlines() if line.strip()]) == 1


@needs_root
@pytest.mark.shared
def test_latency_runs_unpinned(posix_engine):
    status, doc, err = run(posix_engine, "latency", "--duration-s", "0.5", "--interval-us", "1000")
    assert status == 0 and doc["ok"], err
    ti = doc["metrics"]["ti"]
    assert ti["count"] >= 300
    assert doc["env"]["policy"] == "fifo" and doc["env"]["mlocked"] is True
    online = os.sysconf("SC_NPROCESSORS_ONLN")
    assert doc["env"]["cpus"] == ([0] if online == 1 else [-1]), "-1: not pinned"
    # kernel facts are not read, so they are null rather than guessed
    assert doc["env"]["sched_rt_runtime_us"] is None and doc["env"]["clocksource"] is None
    assert doc["env"]["dma_latency"].startswith("unavailable in this build")
    assert doc["env"]["threads"][0]["nvcsw"] is None, "per-thread switch counts are Linux-only: unknown, not 0"


def test_application_tests_run(posix_engine):
    status, doc, err = run(posix_engine, "tire", "--mode", "realfast", "--masses", "400", "--steps", "50",
                           "--policy", "other", "--no-mlock")
    assert status == 0 and doc["ok"], err
    assert doc["metrics"]["steps"]["value"] == 50
    assert "nvcsw" not in doc["metrics"], "not measured in this build, so not reported"
    status, doc, err = run(posix_engine, "overhead", "--iterations", "20000", "--rounds", "3",
                           "--policy", "other", "--no-mlock")
    assert status == 0 and doc["ok"], err


@needs_root
@pytest.mark.shared
def test_hil_loop_runs_without_the_kernel_receive_stamp(posix_engine):
    status, doc, err = run(posix_engine, "hil", "--frames", "300")
    assert status == 0 and doc["ok"], err
    assert doc["metrics"]["received"]["value"] > 0
    assert doc["env"]["ti_arrival"] == "device send timestamp (no kernel receive timestamp)"


def test_c_unit_tests_pass_in_the_posix_build(posix_build):
    p = subprocess.run(["meson", "test", "-C", str(posix_build), "--no-rebuild", "--print-errorlogs"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:]
    assert "portable" in p.stdout and "scenario" not in p.stdout


@needs_uniprocessor
def test_on_one_cpu_the_one_cpu_tests_are_available(posix_engine):
    status, doc, err = run(posix_engine, "--list", "--json", up=True)
    assert status == 0, err
    available = {t["name"] for t in doc["tests"] if t["availability"]["available"]}
    assert NEEDS_ONE_CPU | EVERYWHERE <= available
    assert not available & NEEDS_PROC


@needs_uniprocessor
@pytest.mark.parametrize("args,metric", [
    (["switch", "--iterations", "5000"], "switch"),
    (["sem", "--iterations", "300"], "release_contended"),
    (["shuffle", "--iterations", "1000"], "shuffle"),
    (["message", "--iterations", "500"], "latency"),
    (["thread", "--iterations", "100"], "create_never_run"),
])
@pytest.mark.shared
def test_one_cpu_tests_run_on_a_uniprocessor(posix_engine, args, metric):
    status, doc, err = run(posix_engine, *args, up=True)
    assert status == 0 and doc["ok"], err
    assert doc["metrics"][metric]["count"] > 0
    assert doc["env"]["cpus"] == [0]


@needs_uniprocessor
@pytest.mark.shared
def test_priorities_still_decide_on_a_uniprocessor(posix_engine):
    """Ground truth for the priority-based placement: with inheritance no
    inversion, with the deliberately wrong mutex one per iteration."""
    status, doc, err = run(posix_engine, "mutex", "--iterations", "100", up=True)
    assert status == 0 and doc["ok"], err
    assert doc["metrics"]["inversions"]["value"] == 0
    status, doc, err = run(posix_engine, "mutex", "--iterations", "100", "--protocol", "none", up=True)
    assert status == 0 and doc["ok"], err
    assert doc["metrics"]["inversions"]["value"] == 100


@needs_uniprocessor
@pytest.mark.parametrize("primitive,passes", [("posix", True), ("binary", False)])
@pytest.mark.shared
def test_semaphore_verdicts_on_a_uniprocessor(posix_engine, primitive, passes):
    """sem-lck checks its waiter blocked by priorities; the deliberately wrong
    binary semaphore still fails the counting checks, the right one passes all."""
    status, doc, err = run(posix_engine, "sem-lck", "--primitive", primitive, up=True)
    assert status in (0, 3), err
    v = doc["verdicts"]
    assert v["wait_blocks"]["pass"] and v["timed_wait"]["pass"], v
    assert v["posts_accumulate"]["pass"] is passes, v


@needs_uniprocessor
@pytest.mark.parametrize("primitive,passes", [("posix", True), ("fifo-queue", False)])
@pytest.mark.shared
def test_release_order_on_a_uniprocessor(posix_engine, primitive, passes):
    status, doc, err = run(posix_engine, "sem-rel", "--primitive", primitive, up=True)
    assert status in (0, 3), err
    assert all(v["pass"] is passes for v in doc["verdicts"].values()), doc["verdicts"]

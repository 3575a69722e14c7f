/* stall: the host-stall observer; see stall.h. */
#include "portable.h"
#include "stall.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "json.h"

typedef struct {
    int64_t start, end;
} interval;

static struct {
    bool running;
    pthread_t th;
    atomic_bool quit;
    _Atomic int64_t covered;       /* last clock reading after a wake-up */
    interval ring[RTG_STALL_RING];  /* written by the observer only, in time order */
    _Atomic size_t n;               /* published intervals (release after the write) */
    uint64_t dropped;               /* stalls beyond the ring (still in the totals) */
    uint64_t wakeups, count;
    int64_t total, longest;
    uint64_t local;                 /* late wake-ups spent waiting for its own CPU: not stalls */
    bool run_delay_known;           /* /proc/thread-self/schedstat was readable */
    rtg_json *env;                  /* env.stalls of the run */
} obs;

/* The thread's run delay (ns spent runnable, waiting for its CPU) from
 * /proc/thread-self/schedstat ("exec_ns run_delay_ns timeslices"); -1 unknown. */
static int64_t run_delay(int fd)
{
#ifdef RTG_POSIX_ONLY
    (void)fd;
    return -1;
#else
    char buf[128];
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p = buf;
    strtoll(p, &p, 10);
    char *q = p;
    long long d = strtoll(p, &q, 10);
    return q == p ? -1 : (int64_t)d;
#endif
}

static void *observe(void *arg)
{
    (void)arg;
#ifdef RTG_POSIX_ONLY
    int fd = -1;
#else
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
#endif
    int64_t delay = run_delay(fd);
    obs.run_delay_known = delay >= 0;
    int64_t next = rtg_mono_ns() + RTG_STALL_PERIOD_NS;
    atomic_store_explicit(&obs.covered, rtg_mono_ns(), memory_order_release);
    while (!atomic_load_explicit(&obs.quit, memory_order_relaxed)) {
        struct timespec ts = rtg_ns_timespec(next);
        int rc;
        while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR &&
               !atomic_load_explicit(&obs.quit, memory_order_relaxed))
            ;
        int64_t now = rtg_mono_ns();
        obs.wakeups++;
        int64_t late = now - next;
        int64_t d = run_delay(fd);
        /* Late because another thread held this CPU (the kernel counts the wait
         * as run delay): interference local to the observer, not a stall. A
         * stopped VM or process does not count as waiting for a CPU. */
        bool local = d >= 0 && delay >= 0 && 2 * (d - delay) >= late;
        delay = d;
        if (late > RTG_STALL_THRESHOLD_NS && local)
            obs.local++;
        else if (late > RTG_STALL_THRESHOLD_NS) {
            obs.count++;
            obs.total += late;
            if (late > obs.longest)
                obs.longest = late;
            size_t n = atomic_load_explicit(&obs.n, memory_order_relaxed);
            if (n < RTG_STALL_RING) {
                obs.ring[n] = (interval){next, now};
                atomic_store_explicit(&obs.n, n + 1, memory_order_release);
            } else {
                obs.dropped++;
            }
        }
        atomic_store_explicit(&obs.covered, now, memory_order_release);
        next += RTG_STALL_PERIOD_NS;
        if (next <= now)   /* after a stall: the next period from now, no catching up */
            next = now + RTG_STALL_PERIOD_NS;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Wait (at most timeout_ns) until the observer has read its clock at or after instant. */
static void wait_covered(int64_t instant, int64_t timeout_ns)
{
    int64_t give_up = rtg_mono_ns() + timeout_ns;
    while (atomic_load_explicit(&obs.covered, memory_order_acquire) < instant && rtg_mono_ns() < give_up) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* The observer's CPU: the last allowed CPU not measured; else (every CPU measured)
 * the first allowed one, shared; -1 with one CPU. */
static int choose_cpu(const int *cpus, int n, bool *shares)
{
    int all[RTG_MAX_CPUS];
    int na = rtg_allowed_cpus(all, RTG_MAX_CPUS);
    *shares = false;
    if (na < 2)
        return -1;
    for (int i = na - 1; i >= 0; i--) {
        bool measured = n == 0;
        for (int k = 0; k < n && !measured; k++)
            measured = cpus[k] == all[i];
        if (!measured)
            return all[i];
    }
    *shares = true;
    return all[0];
}

bool rtg_stall_start(rtg_result *res, const int *cpus, int n, rtg_policy policy)
{
    if (obs.running)
        return true;
    memset(&obs, 0, sizeof obs);
    rtg_json *e = obs.env = rtg_j_set(res->env, "stalls", rtg_j_obj());
    rtg_j_set(e, "period_ns", rtg_j_int(RTG_STALL_PERIOD_NS));
    rtg_j_set(e, "threshold_ns", rtg_j_int(RTG_STALL_THRESHOLD_NS));
#ifdef RTG_POSIX_ONLY
    (void)cpus, (void)n, (void)policy, (void)choose_cpu, (void)observe;
    rtg_j_set(e, "observed", rtg_j_bool(false));
    rtg_j_set(e, "reason", rtg_j_str("this build has no thread affinity, so an observer cannot be kept off "
                                     "the measured CPU"));
    return false;
#else
    bool shares;
    int cpu = choose_cpu(cpus, n, &shares);
    if (cpu < 0) {
        rtg_j_set(e, "observed", rtg_j_bool(false));
        rtg_j_set(e, "reason", rtg_j_str("only one CPU is available: an observer there would compete with "
                                         "the measured threads, so host stalls are not observed"));
        return false;
    }
    rtg_policy pol = policy == RTG_POL_OTHER ? RTG_POL_OTHER : RTG_POL_FIFO;
    int prio = pol == RTG_POL_OTHER ? 0 : 1;
    char err[256];
    if (rtg_spawn_thread(&obs.th, pol, prio, cpu, 64, observe, NULL, err, sizeof err) != 0 &&
        (pol == RTG_POL_OTHER ||
         rtg_spawn_thread(&obs.th, pol = RTG_POL_OTHER, prio = 0, cpu, 64, observe, NULL, err, sizeof err) != 0)) {
        rtg_j_set(e, "observed", rtg_j_bool(false));
        rtg_j_set(e, "reason", rtg_j_strf("the observer thread could not be started: %s", err));
        return false;
    }
    obs.running = true;
    /* Return once the observer watches: a thread not yet scheduled (a loaded
     * machine, a CPU quota) would miss a stall at the start of the run, and a
     * sample it did not watch must not be judged clean. Bounded: past it, the
     * samples after its first look are judged as they come (rtg_stall_covered). */
    wait_covered(1, 2000000000LL);
    rtg_j_set(e, "observed", rtg_j_bool(true));
    rtg_j_set(e, "reason", rtg_j_null());
    rtg_j_set(e, "cpu", rtg_j_int(cpu));
    rtg_j_set(e, "shares_measured_cpu", rtg_j_bool(shares));
    rtg_j_set(e, "policy", rtg_j_str(rtg_policy_name(pol)));
    rtg_j_set(e, "priority", rtg_j_int(prio));
    rtg_j_set(e, "metrics", rtg_j_obj());
    return true;
#endif
}

bool rtg_stall_observing(void)
{
    return obs.running;
}

int64_t rtg_stall_covered(void)
{
    return obs.running ? atomic_load_explicit(&obs.covered, memory_order_acquire) : INT64_MAX;
}

void rtg_stall_sync(void)
{
    if (obs.running)
        wait_covered(rtg_mono_ns(), 100000000LL);
}

bool rtg_stall_touches(int64_t from, int64_t to)
{
    /* A sample shorter than the threshold cannot contain a stall the observer
     * sees: it ran beside the observer's interval (e.g. after the stall ended,
     * before the observer woke), it was not stopped by it. */
    if (!obs.running || to - from < RTG_STALL_THRESHOLD_NS)
        return false;
    size_t n = atomic_load_explicit(&obs.n, memory_order_acquire);
    /* intervals are in time order and disjoint: the first ending after from */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (obs.ring[mid].end <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && obs.ring[lo].start < to;
}

static rtg_json *rounded(double v)
{
    return isfinite(v) ? rtg_j_num(round(v * 1000.0) / 1000.0) : rtg_j_null();
}

void rtg_stall_put_metric(rtg_result *res, const char *name, uint64_t touched, uint64_t unknown,
                          const rtg_dist *clean)
{
    (void)res;
    if (!obs.running || !obs.env)
        return;
    rtg_json *m = rtg_j_set(rtg_j_obj_at(obs.env, "metrics"), name, rtg_j_obj());
    rtg_j_set(m, "touched", rtg_j_int((int64_t)touched));
    rtg_j_set(m, "unknown", rtg_j_int((int64_t)unknown));
    rtg_json *w = rtg_j_set(m, "without", rtg_j_obj());
    rtg_j_set(w, "count", rtg_j_int((int64_t)clean->count));
    if (clean->count == 0) {
        rtg_j_set(w, "avg", rtg_j_null());
        return;
    }
    rtg_j_set(w, "min", rtg_j_int(clean->min));
    rtg_j_set(w, "avg", rounded(rtg_dist_avg(clean)));
    rtg_j_set(w, "stddev", rounded(rtg_dist_stddev(clean)));
    static const struct { const char *key; double q; } pct[] = {
        {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}, {"p9999", 0.9999},
    };
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++)
        rtg_j_set(w, pct[i].key, rtg_j_int(rtg_dist_percentile(clean, pct[i].q)));
}

void rtg_stall_finish(rtg_result *res)
{
    (void)res;
    if (!obs.running)
        return;
    atomic_store(&obs.quit, true);
    pthread_join(obs.th, NULL);
    obs.running = false;
    rtg_json *e = obs.env;
    rtg_j_set(e, "wakeups", rtg_j_int((int64_t)obs.wakeups));
    rtg_j_set(e, "count", rtg_j_int((int64_t)obs.count));
    rtg_j_set(e, "total_ns", rtg_j_int(obs.total));
    rtg_j_set(e, "longest_ns", rtg_j_int(obs.longest));
    rtg_j_set(e, "local_delays", obs.run_delay_known ? rtg_j_int((int64_t)obs.local) : rtg_j_null());
    rtg_json *iv = rtg_j_set(e, "intervals", rtg_j_arr());
    size_t n = atomic_load(&obs.n);
    for (size_t i = 0; i < n && i < RTG_STALL_JSON_INTERVALS; i++) {
        rtg_json *p = rtg_j_push(iv, rtg_j_arr());
        rtg_j_push(p, rtg_j_int(obs.ring[i].start));
        rtg_j_push(p, rtg_j_int(obs.ring[i].end));
    }
    rtg_j_set(e, "intervals_dropped", rtg_j_int((int64_t)(obs.count - (n < RTG_STALL_JSON_INTERVALS ? n : RTG_STALL_JSON_INTERVALS))));
    obs.env = NULL;
}

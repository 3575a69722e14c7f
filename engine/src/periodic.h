/* periodic: THE driver of T = Ti + Ts + Tw (SPEC.md). Each cycle k of a thread:
 *   deadline d_k = start + k*period; clock_nanosleep(TIMER_ABSTIME, d_k);
 *   t1 = now(); payload(); t2 = now();
 *   Ti = t1 - d_k (wake-up latency), Ts = t2 - t1 (payload), Tw = d_k + period - t2
 *   (slack; Tw < 0 is a missed deadline).
 * The measuring thread only stores {d_k, Ti, Ts, Tw} into a preallocated SPSC ring;
 * a non-RT collector thread drains the rings (every 50 ms) into per-thread and
 * merged distributions, the per-window max series and, on request, a raw samples
 * file. After an overrun (the cycle ends after the next deadline) the driver
 * either skips the deadlines already past, like cyclictest, counting them as
 * `skipped` (default), or catches up (catch_up: the next deadline is still
 * d_k + period, so late cycles run back to back and every one is recorded). */
#ifndef RTG_PERIODIC_H
#define RTG_PERIODIC_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "clock.h"
#include "rt.h"
#include "samples.h"
#include "test.h"

typedef struct {
    int64_t deadline_ns;   /* d_k, CLOCK_MONOTONIC */
    int64_t ti, ts, tw;
} rtg_cycle;

/* payload: called once per cycle on the measuring thread; arg is per thread. */
typedef void (*rtg_payload_fn)(void *arg, int thread, uint64_t cycle);

typedef struct {
    int nthreads;
    int cpus[1024];            /* cpu per thread, -1 = not pinned */
    rtg_policy policy;
    int priority;              /* thread i runs at priority (same for all) */
    bool allow_fallback;
    int64_t period_ns;
    int64_t start_delay_ns;    /* first deadline = now + this (default 100 ms: lets
                                  every thread reach its first sleep) */
    int64_t start_at_ns;       /* > 0: the first deadline, absolute CLOCK_MONOTONIC
                                  (aligns a run with another process); overrides
                                  start_delay_ns */
    uint64_t cycles;           /* per thread; 0 = until duration_ns */
    int64_t duration_ns;       /* 0 = until cycles */
    rtg_clock clock;
    rtg_payload_fn payload;    /* NULL = empty payload (latency test) */
    void **payload_args;       /* per thread, may be NULL */
    int64_t window_ns;         /* window of the max series (default 1 s) */
    int64_t lin_bucket_ns;     /* linear histogram: bucket width, 0 = none */
    size_t lin_buckets;
    FILE *samples;             /* raw samples out, NULL = none */
    bool samples_binary;       /* false = CSV */
    int64_t stop_above_ns;     /* > 0: stop the run at the first Ti above this */
    bool catch_up;             /* overrun: run missed cycles back to back instead of skipping */
    const int64_t *periods_ns; /* optional, per thread (e.g. a Hartstone task set); NULL = period_ns
                                  for all. period_ns must then be the shortest (it sizes the rings) */
    const int *priorities;     /* optional, per thread (e.g. rate-monotonic); NULL = priority for all */
} rtg_periodic_cfg;

typedef struct {
    uint64_t cycles;           /* cycles measured */
    uint64_t misses;           /* cycles with Tw < 0 */
    uint64_t skipped;          /* deadlines skipped after overruns (never with catch_up) */
    uint64_t dropped;          /* records lost because a ring was full (never expected) */
    rtg_dist ti, ts, tw;       /* distributions */
    rtg_series ti_max;         /* max Ti per window */
    int cpu;                   /* cpu the thread ran on (-1 unpinned) */
    int tid;
    rtg_sched sched;           /* what the thread obtained */
    uint64_t nvcsw, nivcsw;    /* voluntary / involuntary context switches (getrusage RUSAGE_THREAD) */
} rtg_periodic_thread;

typedef struct {
    int nthreads;
    rtg_periodic_thread *t;    /* per thread */
    rtg_periodic_thread all;   /* merged over threads (cpu=-1) */
    int64_t start_ns, end_ns;
    bool interrupted;          /* stopped by rtg_stop */
    bool stopped_above;        /* stopped by stop_above_ns */
    /* env also gets run_start_ns / run_end_ns; ti_window_max windows are keyed by
     * the cycle's deadline: window w holds deadlines in
     * [start_ns + w*window, start_ns + (w+1)*window). */
} rtg_periodic_run;

/* Run the driver. Returns 0, or -1 with a sentence in err (then run is freed). */
int rtg_periodic(const rtg_periodic_cfg *cfg, rtg_periodic_run *run, char *err, size_t errlen);
void rtg_periodic_free(rtg_periodic_run *run);
/* Put the run into a result: metrics ti, ts, tw (dist), misses, cycles, dropped
 * skipped (scalar), ti_window_max (series), and per thread the same with suffix "#i"
 * (ti#0, misses#0, ...); env.threads = [{"index","cpu","tid","policy","priority",
 * "fallback","nvcsw","nivcsw"}]. */
void rtg_periodic_report(const rtg_periodic_run *run, rtg_result *res);

/* Raw samples file formats (docs/samples.md):
 * CSV: header "thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns", one line a cycle.
 * Binary: 16-byte header: "RTGSAMP1", uint32 record size (48), uint32 0; then
 * little-endian records {uint32 thread; uint32 0; uint64 cycle; int64 deadline_ns;
 * int64 ti; int64 ts; int64 tw}. Records of different threads interleave. */

#endif

/* periodic: THE cycle driver of T = Ti + Ts + Tw (docs/engine.md). Each cycle k
 * of a thread starts on a trigger, runs the payload and is measured:
 *   trigger instant c_k: when the cycle became due (see the triggers below);
 *   t1 = now() once the thread runs; payload(); t2 = now();
 *   Ti = t1 - c_k (wake-up latency), Ts = t2 - t1 (payload), Tw = n_k - t2
 *   (slack before the next cycle is due, n_k; Tw < 0 is a missed deadline).
 * Triggers (one per thread, rtg_trigger):
 *   TIMER  c_k = d_k = start + k*period, clock_nanosleep(TIMER_ABSTIME); n_k = d_k + period.
 *   FRAME  a datagram arriving on a socket: c_k = its arrival (the kernel's
 *          SO_TIMESTAMPNS stamp when the socket has it, else the return of recvmsg
 *          unless the payload knows better); n_k = c_k + period unless the payload
 *          sets it (the sender's schedule).
 *   EVENT  rtg_event_post() by another thread: c_k = the post instant; n_k = c_k + period.
 * The measuring thread only stores {c_k, Ti, Ts, Tw} into a preallocated SPSC ring;
 * a non-RT collector thread drains the rings (every 50 ms) into per-thread and
 * merged distributions, the per-window max series and, on request, a raw samples
 * file and a status line per window (status.h): memory does not grow with the
 * number of cycles. After a timer overrun
 * (the cycle ends after the next deadline) the driver
 * either skips the deadlines already past, like cyclictest, counting them as
 * `skipped` (default), or catches up (catch_up: the next deadline is still
 * d_k + period, so late cycles run back to back and every one is recorded).
 * Stop: rtg_stop (SIGINT/SIGTERM), stop_above_ns or a payload ending the run
 * interrupts every thread's wait at once (a wake-up signal, RTG_WAKE_SIGNAL); a
 * payload longer than that reads ctx->stopping (rtg_cycle_stopping) and returns. */
#ifndef RTG_PERIODIC_H
#define RTG_PERIODIC_H
#include <signal.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include "clock.h"
#include "rt.h"
#include "samples.h"
#include "stop.h"
#include "test.h"

typedef struct {
    int64_t deadline_ns;   /* c_k, the trigger instant (d_k for a timer), CLOCK_MONOTONIC */
    uint64_t cycle;        /* k */
    int64_t ti, ts, tw;
} rtg_cycle;

typedef enum { RTG_TRIGGER_TIMER = 0, RTG_TRIGGER_FRAME, RTG_TRIGGER_EVENT } rtg_trigger_kind;

/* An event posted by another thread (trigger EVENT): each post is one cycle,
 * timed from the post instant. Single poster, single waiter. */
typedef struct {
    sem_t sem;
    rtg_ring posts;        /* int64 post instants */
} rtg_event;
int rtg_event_init(rtg_event *e);   /* 0, or -1 out of memory */
void rtg_event_free(rtg_event *e);
void rtg_event_post(rtg_event *e);  /* from any thread; never blocks */

/* What a cycle payload (rtg_cycle_fn) sees and may change. */
typedef struct {
    int thread;
    uint64_t cycle;            /* k: cycles begun on this thread (recorded or not) */
    int64_t trigger_ns;        /* c_k; a FRAME payload may set it (e.g. the sender's stamp) */
    int64_t next_ns;           /* n_k, preset as above; a FRAME payload may set it */
    int64_t woke_ns;           /* t1: the thread's first timestamp of the cycle (Ti = t1 - c_k) */
    int64_t step_end_ns;       /* 0, or set by the payload: Ts ends here (e.g. before a reply) */
    /* FRAME: the datagram */
    const unsigned char *frame;
    size_t frame_len;
    bool kernel_ts;            /* trigger_ns comes from the kernel's receive stamp */
    const struct sockaddr *from;
    socklen_t from_len;
    const atomic_bool *stopping;   /* set when the run must end: long payloads poll it */
    /* the payload's answers */
    bool skip;                 /* record nothing for this cycle (a bad or ignored frame) */
    bool end;                  /* this was the thread's last cycle */
    bool end_run;              /* ... and the other threads stop too */
} rtg_cycle_ctx;

/* The payload: called once per cycle on the measuring thread, arg from its
 * trigger (rtg_trigger.arg, one a thread when the threads need their own). The
 * one way a payload is passed to the driver. */
typedef void (*rtg_cycle_fn)(void *arg, rtg_cycle_ctx *c);

static inline bool rtg_cycle_stopping(const rtg_cycle_ctx *c)
{
    return rtg_stop || (c->stopping && atomic_load_explicit(c->stopping, memory_order_relaxed));
}

/* How one thread's cycles start, and its payload. Zeroed = a timer, no payload. */
typedef struct {
    rtg_trigger_kind kind;
    int fd;                    /* FRAME: the bound socket */
    rtg_event *event;          /* EVENT */
    rtg_cycle_fn cycle;        /* the payload; NULL = none (the latency test) */
    bool (*idle)(void *arg, int64_t now_ns); /* FRAME/EVENT: nothing came for poll_ns (or a
                                                stop was asked): true ends the thread */
    void (*collect)(void *arg);              /* called on the collector thread after each
                                                drain and once at the end: folds the
                                                payload's own rings */
    void *arg;
    int64_t poll_ns;           /* FRAME/EVENT: how often idle is called (default 20 ms) */
    uint64_t cycles;           /* > 0: cycles of this thread (wins over cfg->cycles) */
} rtg_trigger;

/* --start-at-ns may name an instant at most this far ahead (a day): a run that
 * would sit idle longer is a mistake, and says so. */
#define RTG_START_AT_MAX_NS (86400LL * 1000000000LL)

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
    int64_t window_ns;         /* window of the max series (default 1 s) */
    int64_t lin_bucket_ns;     /* linear histogram: bucket width, 0 = none */
    size_t lin_buckets;
    FILE *samples;             /* raw samples out, NULL = none */
    bool samples_binary;       /* false = CSV */
    FILE *status;              /* one JSON line per window out (status.h), NULL = none */
    int64_t stop_above_ns;     /* > 0: stop the run at the first Ti above this */
    bool catch_up;             /* overrun: run missed cycles back to back instead of skipping */
    const int64_t *periods_ns; /* optional, per thread (e.g. a Hartstone task set); NULL = period_ns
                                  for all. period_ns must then be the shortest (it sizes the rings) */
    const int *priorities;     /* optional, per thread (e.g. rate-monotonic); NULL = priority for all */
    const rtg_trigger *triggers;   /* optional, per thread (trigger and payload); NULL = a timer
                                  without payload for all. A FRAME or
                                  EVENT thread runs until its payload or idle hook ends it, a
                                  stop, or cycles; duration_ns and cycles bound timer threads */
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
    /* With the host-stall observer running (stall.h): cycles whose span [c_k, t2]
     * a stall touched, and Ti/Ts/Tw without them (allocated at the first touched
     * cycle as a copy of the figures so far; NULL: none touched, same as ti/ts/tw). */
    uint64_t stall_touched;
    rtg_dist *clean;           /* [0] ti, [1] ts, [2] tw */
    char error[256];           /* a FRAME thread's socket failed: why (else empty) */
} rtg_periodic_thread;

typedef struct {
    int nthreads;
    rtg_periodic_thread *t;    /* per thread */
    rtg_periodic_thread all;   /* merged over threads (cpu=-1) */
    int64_t start_ns, end_ns;
    int64_t period_ns;         /* the one period every thread ran at (cfg->period_ns); 0 when
                                  the threads had periods of their own (cfg->periods_ns) */
    bool interrupted;          /* stopped by rtg_stop */
    bool stopped_above;        /* stopped by stop_above_ns */
    bool ended_by_payload;     /* a payload ended the run (end_run) */
    /* env also gets run_start_ns / run_end_ns; ti_window_max windows are keyed by
     * the cycle's deadline: window w holds deadlines in
     * [start_ns + w*window, start_ns + (w+1)*window). */
} rtg_periodic_run;

/* Run the driver. Returns 0, or -1 with a sentence in err (then run is freed). */
int rtg_periodic(const rtg_periodic_cfg *cfg, rtg_periodic_run *run, char *err, size_t errlen);
void rtg_periodic_free(rtg_periodic_run *run);
/* The metrics rtg_periodic_put_metrics writes, declared once for the metric
 * tables of the tests that report a periodic run (test.h: rtg_metric): name,
 * kind, unit, what it means. Every one is also written per thread (NAME#i). */
#define RTG_PM_ti RTG_METRIC_DISTRIBUTION, "ns", "wake-up latency: the thread's wake-up minus its deadline"
#define RTG_PM_ts RTG_METRIC_DISTRIBUTION, "ns", "payload time of a cycle, from wake-up to the end of its work"
#define RTG_PM_tw RTG_METRIC_DISTRIBUTION, "ns", "slack: the next deadline minus the end of the cycle (below 0 is a miss)"
#define RTG_PM_misses RTG_METRIC_SCALAR, "count", "cycles that ended after the next deadline"
#define RTG_PM_skipped RTG_METRIC_SCALAR, "count", "deadlines already past after an overrun, skipped (--overrun skip)"
#define RTG_PM_cycles RTG_METRIC_SCALAR, "count", "cycles measured (cycles + skipped = deadlines elapsed)"
#define RTG_PM_dropped RTG_METRIC_SCALAR, "count", \
    "cycles lost to a full ring before the collector read them (should be 0)"
#define RTG_PM_ti_window_max RTG_METRIC_SERIES, "ns", "the largest ti of each window of --window-s"
#define RTG_PM_ROW_(name, kind, unit, help, flags, when) {name, kind, unit, RTG_METRIC_PER_THREAD | (flags), help when}
#define RTG_PM_ROW_AS_(name, kind, unit, help, flags, own) {name, kind, unit, RTG_METRIC_PER_THREAD | (flags), own}
#define RTG_PM_ROW(...) RTG_PM_ROW_(__VA_ARGS__)
#define RTG_PM_ROW_AS(...) RTG_PM_ROW_AS_(__VA_ARGS__)
/* One row: RTG_METRIC_* flags added, `when` (a string literal, "" for none)
 * appended to the meaning, e.g. " (realtime and pretest)". */
#define RTG_PERIODIC_METRIC(name, flags, when) RTG_PM_ROW(#name, RTG_PM_##name, flags, when)
/* One row whose meaning the test words for itself (its cycles are bursts...). */
#define RTG_PERIODIC_METRIC_AS(name, flags, help) RTG_PM_ROW_AS(#name, RTG_PM_##name, flags, help)
/* All eight rows, in the order they are written. */
#define RTG_PERIODIC_METRICS(flags, when)                                                             \
    RTG_PERIODIC_METRIC(ti, flags, when), RTG_PERIODIC_METRIC(ts, flags, when),                      \
        RTG_PERIODIC_METRIC(tw, flags, when), RTG_PERIODIC_METRIC(misses, flags, when),              \
        RTG_PERIODIC_METRIC(skipped, flags, when), RTG_PERIODIC_METRIC(cycles, flags, when),         \
        RTG_PERIODIC_METRIC(dropped, flags, when), RTG_PERIODIC_METRIC(ti_window_max, flags, when)

/* Put the run into a result: metrics ti, ts, tw (dist), misses, cycles, dropped
 * skipped (scalar), ti_window_max (series), and per thread the same with suffix "#i"
 * (ti#0, misses#0, ...); env.threads = [{"index","cpu","tid","policy","priority",
 * "fallback","nvcsw","nivcsw"}], env.period_ns, run_start_ns, run_end_ns. With the host-stall observer running, also
 * env.stalls.metrics ti, ts, tw (and "#i"): touched cycles and the figures without. */
void rtg_periodic_report(const rtg_periodic_run *run, rtg_result *res);
/* env.period_ns (when the threads shared one period), env.run_start_ns and
 * env.run_end_ns: the run's own facts, written once here for every test that reports
 * a periodic run (rtg_periodic_report calls it; a test writing its own threads does). */
void rtg_periodic_put_env(const rtg_periodic_run *run, rtg_json *env);
/* One thread's (or the merged) Ti/Ts/Tw, cycles, misses... as metrics named
 * prefix + name + suffix (rtg_periodic_report uses "" and "#i"). */
void rtg_periodic_put_metrics(rtg_json *metrics, const rtg_periodic_thread *t, const char *prefix,
                              const char *suffix);
/* The env.threads entry of one thread (index, cpu, tid, policy, priority,
 * fallback, nvcsw, nivcsw); returns it so a test can add fields (e.g. a role). */
rtg_json *rtg_periodic_put_thread(rtg_json *threads, const rtg_periodic_thread *t, int index);

/* Raw samples file formats (docs/samples.md):
 * CSV: header "thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns", one line a cycle.
 * Binary: 16-byte header: "RTGSAMP1", uint32 record size (48), uint32 0; then
 * little-endian records {uint32 thread; uint32 0; uint64 cycle; int64 deadline_ns;
 * int64 ti; int64 ts; int64 tw}. Records of different threads interleave. */

#endif

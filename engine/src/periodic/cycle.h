/* cycle: the cycle driver's data (periodic.h says what the driver does): a cycle's
 * record, what a payload sees, a thread's trigger, the run's configuration and its
 * figures. Types only, below every file of the driver. */
#ifndef RTG_PERIODIC_CYCLE_H
#define RTG_PERIODIC_CYCLE_H
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include "clock.h"
#include "periodic/event.h"
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
    bool window_counts;        /* keep per window, for all threads together, the cycles, the
                                  sum of Ti, the misses and the skipped deadlines (run->all.counts) */
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
    rtg_window_counts counts;  /* the merged thread only, with cfg->window_counts: per window the
                                  cycles, their Ti sum, misses, skipped deadlines (else unallocated) */
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

#endif

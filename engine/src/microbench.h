/* microbench: what the microbenchmarks (switch, preempt, shuffle, message, sem,
 * mutex, thread, tick, deadlock-break) share.
 *  - rtg_bench: the CPU the threads share, the base policy/priority, and a
 *    watchdog. The main thread becomes the watchdog: FIFO 99, on another CPU when
 *    there is one, blocked in a join with a deadline while the workers measure.
 *    At the deadline or on rtg_stop it raises rtg_micro_abort and calls the
 *    test's unblock hook (posts every semaphore, writes every pipe...), so no
 *    worker stays blocked; every worker loop polls rtg_micro_stopping().
 *  - rtg_samples: a preallocated, touched array the measured loop stores into;
 *    folded into an rtg_dist and written as a contract distribution afterwards.
 *  - workers are started with rtg_spawn_thread (rt.h): explicit policy, priority, CPU and a small
 *    stack (mlockall locks every stack: 1000 threads x 8 MiB would not fit). */
#ifndef RTG_MICROBENCH_H
#define RTG_MICROBENCH_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "rt.h"
#include "test.h"

extern _Atomic int rtg_micro_abort;

/* True once the run must end: Ctrl-C/SIGTERM or the watchdog's deadline. */
static inline bool rtg_micro_stopping(void)
{
    return rtg_stop || atomic_load_explicit(&rtg_micro_abort, memory_order_relaxed);
}

typedef struct {
    int cpu;                  /* the CPU the measured threads share */
    int ncpus, cpus[RTG_MAX_CPUS];   /* --cpus, or every allowed CPU */
    int watchdog_cpu;         /* -1: not pinned (no other CPU) */
    rtg_policy policy;        /* of the workers; fifo/rr unless --policy other */
    int priority;             /* --priority: the test's base priority */
    int64_t deadline_ns;      /* CLOCK_MONOTONIC instant the watchdog aborts at */
    struct timespec deadline_rt;  /* the same instant on CLOCK_REALTIME (timedlock) */
    bool timed_out;
    bool spread;              /* --cpus named more than one CPU */
} rtg_bench;

/* CPU of worker i for the tests that may spread a pair over CPUs (shuffle,
 * message): cpus[i % ncpus] when --cpus named several, else the one CPU. */
static inline int rtg_micro_cpu_of(const rtg_bench *b, int i)
{
    return b->spread ? b->cpus[i % b->ncpus] : b->cpu;
}

/* Read --cpus/--policy/--priority/--timeout-s, choose the measurement CPU (the
 * first of --cpus, by default the last allowed CPU: CPU 0 carries more
 * housekeeping) and make the calling thread the watchdog. needs_priorities:
 * the test relies on priority order, so --policy other is a usage error.
 * Records env.measure_cpu, env.watchdog_cpu, env.cpus. Returns RTG_EXIT_*. */
int rtg_micro_setup(rtg_bench *b, const rtg_opts *o, rtg_result *res, bool needs_priorities);
/* The same with the watchdog's timeout given (a test without --timeout-s). */
int rtg_micro_setup_timeout(rtg_bench *b, const rtg_opts *o, rtg_result *res, bool needs_priorities,
                            int64_t timeout_ns);

/* The watchdog: join n threads, waking every 50 ms to look at rtg_stop; at the
 * deadline or on a stop it raises rtg_micro_abort and calls unblock(ctx) (may be
 * NULL) every 50 ms until all are joined or a 2 s grace is over. Returns the
 * number of threads that could not be joined (0 normally). Sets b->timed_out
 * when the deadline, not the work, ended the run. */
int rtg_micro_join(rtg_bench *b, pthread_t *th, int n, void (*unblock)(void *), void *ctx);

/* Samples of one metric, stored by the measured loop. at (optional) holds each
 * sample's start instant (CLOCK_MONOTONIC), so its span [at, at + v] can be
 * checked against the host stalls the observer saw (stall.h); 0 = unknown. */
typedef struct {
    int64_t *v;
    size_t n, cap;
    int64_t *at;
} rtg_samples;

int rtg_samples_init(rtg_samples *s, size_t cap);   /* 0, or -1 out of memory */
void rtg_samples_free(rtg_samples *s);
static inline void rtg_samples_put(rtg_samples *s, int64_t v)
{
    if (s->n < s->cap) {
        if (s->at)
            s->at[s->n] = 0;
        s->v[s->n++] = v;
    }
}
/* A sample timed from `from` to `to` (its span is known: stall-touched or not). */
static inline void rtg_samples_put_span(rtg_samples *s, int64_t from, int64_t to)
{
    if (s->n < s->cap) {
        if (s->at)
            s->at[s->n] = from;
        s->v[s->n++] = to - from;
    }
}
/* metrics[name] = distribution (ns) of every sample; with the stall observer
 * running, env.stalls.metrics[name] too: the samples a stall touched and the
 * figures without them (stall.h). */
void rtg_samples_report(rtg_result *res, const char *name, const rtg_samples *s);

/* extra.method = {"timed": what, "correction": "none: ..."}:
 * what each sample spans, and that nothing was subtracted (each sample contains
 * one timestamp read, whose cost the env block gives). */
void rtg_micro_method(rtg_result *res, const char *what);

/* Absolute CLOCK_MONOTONIC sleep, bounded by the caller's choice of t. */
void rtg_sleep_until(int64_t t_ns);

/* Busy for ns (bounded; returns early when stopping). */
void rtg_busy_ns(int64_t ns);

#endif

/* periodic_impl: private to the cycle driver (periodic*.c), not for tests or
 * measurements (they use periodic.h). The driver is one file a concern:
 *   periodic.c          the run's lifecycle: threads set up, started together,
 *                       stopped, joined; statistics allocated, merged, freed;
 *   periodic_trigger.c  a measuring thread's loop: wait for the trigger (timer,
 *                       frame, event), time the payload, store one record;
 *   periodic_collect.c  the collector thread: drain the rings into the statistics;
 *   periodic_samples.c  the raw samples file (docs/samples.md);
 *   status.c            the status line per window (status.h), written by the collector;
 *   periodic_stall.c    the host-stall observer's view: cycles a stall touched and
 *                       the figures without them;
 *   periodic_report.c   the run as a result's metrics and env (JSON). */
#ifndef RTG_PERIODIC_IMPL_H
#define RTG_PERIODIC_IMPL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "periodic/periodic.h"
#include "samples.h"
#include "status.h"

#define RTG_PD_FRAME_MAX 2048   /* largest datagram a FRAME trigger takes */

typedef struct rtg_pd_shared rtg_pd_shared;

/* One measuring thread. */
typedef struct {
    rtg_pd_shared *sh;
    int index;
    rtg_ring ring;             /* rtg_cycle records, measuring thread -> collector */
    rtg_periodic_thread *out;
    const rtg_trigger *tr;     /* this thread's trigger (a zeroed timer when none) */
    unsigned char *frame;      /* FRAME: receive buffer, RTG_PD_FRAME_MAX bytes */
    pthread_t th;
    bool started;
    char err[512];
    atomic_bool failed;
    atomic_bool done;
    uint64_t skipped;          /* written by the measuring thread only; read once it is done */
} rtg_pd_worker;

/* What the threads of one run share. */
struct rtg_pd_shared {
    const rtg_periodic_cfg *cfg;
    rtg_pd_worker *w;
    /* start gate: threads report ready, then wait for go (start_ns is set) */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready;
    bool go;
    int64_t start_ns;          /* written before go */
    atomic_bool abort_setup;   /* a thread failed setup: nobody measures */
    rtg_status *status;        /* cfg->status's writer (collector only), NULL = none */
    atomic_bool stop_run;      /* stop_above_ns was exceeded, or a payload ended the run */
    atomic_bool stopped_above;
    atomic_bool ended_by_payload;
};

static inline bool rtg_pd_should_stop(rtg_pd_shared *sh)
{
    return rtg_stop || atomic_load_explicit(&sh->stop_run, memory_order_relaxed);
}

/* periodic_trigger.c: the measuring loop of w's trigger, until its cycles,
 * duration, a stop or its payload end it. */
void rtg_pd_measure(rtg_pd_worker *w);

/* periodic_collect.c: the collector thread (p: the rtg_pd_shared); drains every
 * 50 ms until every worker is done, then once more. */
void *rtg_pd_collector_main(void *p);
/* Keep the collector off the measured CPUs when another CPU is allowed. */
void rtg_pd_place_collector(pthread_attr_t *a, const rtg_periodic_cfg *cfg);

/* periodic_samples.c */
void rtg_pd_samples_header(FILE *f, bool binary);
void rtg_pd_samples_write(FILE *f, bool binary, int thread, const rtg_cycle *c);

/* periodic_stall.c: with the host-stall observer running (stall.h). */
/* One cycle, before the collector folds it into t: touched, or clean. */
void rtg_pd_stall_judge(rtg_periodic_thread *t, const rtg_cycle *c);
/* The merged thread's touched count and figures without the touched cycles. */
void rtg_pd_stall_merge(rtg_periodic_run *run);
/* env.stalls.metrics of the run: merged, then "#i" per thread. */
void rtg_pd_stall_report(const rtg_periodic_run *run, rtg_result *res);

#endif

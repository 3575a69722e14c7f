/* periodic_shared: what the threads of one periodic run share (the start gate, the
 * stop, each measuring thread's ring and trigger), below every file of the driver
 * that uses it. The driver is one file a concern:
 *   periodic.c          the run's lifecycle: threads set up, started together,
 *                       stopped, joined; statistics allocated, merged, freed;
 *   periodic_trigger.c  a measuring thread's loop: wait for the trigger (timer,
 *                       frame, event), time the payload, store one record;
 *   periodic_collect.c  the collector thread: drain the rings into the statistics;
 *   periodic_samples.c  the raw samples file (docs/samples.md);
 *   status.c            the status line per window (status.h), written by the collector;
 *   periodic_stall.c    the host-stall observer's view: cycles a stall touched and
 *                       the figures without them;
 *   periodic_report.c   the run as a result's metrics and env (JSON);
 *   periodic_shared.c   a measuring thread's ring and frame buffer;
 *   event.c             the EVENT trigger's post side.
 * Each has its header; cycle.h holds the types. Files only depend downwards:
 * periodic.c on the others, none of them on periodic.c. Private to the driver, not
 * for tests or measurements (they use periodic.h). */
#ifndef RTG_PERIODIC_SHARED_H
#define RTG_PERIODIC_SHARED_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "periodic/cycle.h"
#include "samples.h"
#include "status.h"
#include "stop.h"
#include "test.h"

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
    /* the collector's, for the window counts: the number of the thread's last folded
     * cycle (-1 before its first) and the skipped deadlines counted so far */
    int64_t last_number;
    uint64_t skipped_seen;
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
    rtg_window_counts *counts; /* the merged window counts (collector only), NULL = none */
    atomic_bool stop_run;      /* stop_above_ns was exceeded, or a payload ended the run */
    atomic_bool stopped_above;
    atomic_bool ended_by_payload;
};

static inline bool rtg_pd_should_stop(rtg_pd_shared *sh)
{
    return rtg_stop || atomic_load_explicit(&sh->stop_run, memory_order_relaxed);
}

/* End the run: why (stopped_above or ended_by_payload) and stop_run set, the waits
 * of the calling thread woken. */
static inline void rtg_pd_end_run(rtg_pd_shared *sh, atomic_bool *why)
{
    atomic_store(why, true);
    atomic_store(&sh->stop_run, true);
    rtg_stop_notify();
}

/* w as thread index of sh: out its statistics, tr its trigger; a ring of ring_cap
 * records and, for a FRAME trigger, a receive buffer of RTG_PD_FRAME_MAX bytes,
 * touched. 0, or -1 out of memory (rtg_pd_worker_free frees what there is). */
int rtg_pd_worker_init(rtg_pd_worker *w, rtg_pd_shared *sh, int index, rtg_periodic_thread *out,
                       const rtg_trigger *tr, size_t ring_cap);
void rtg_pd_worker_free(rtg_pd_worker *w);

#endif

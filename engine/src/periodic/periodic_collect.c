/* periodic_collect: the collector of a periodic run, a SCHED_OTHER thread off
 * the measured CPUs when another is allowed. Every 50 ms it drains each
 * measuring thread's ring into that thread's statistics (and the samples file
 * and the status), writes the status lines of the windows every thread is past,
 * then calls the trigger's collect hook; after the last worker is done, once
 * more. Memory does not grow with the number of cycles. */
#include "portable.h"
#include "periodic/periodic_collect.h"
#include "periodic/periodic_samples.h"
#include "periodic/periodic_stall.h"

#include <sched.h>
#include <time.h>

#include "stall.h"

#define COLLECT_PERIOD_NS 50000000LL     /* drain rings every 50 ms */

static int64_t period_of(const rtg_pd_shared *sh, const rtg_pd_worker *w)
{
    return sh->cfg->periods_ns ? sh->cfg->periods_ns[w->index] : sh->cfg->period_ns;
}

/* The run's window counts: the cycle in the window it was due in and, for a timer
 * thread (its records numbered by deadline), the numbers missing since its last
 * cycle as skipped deadlines in theirs, as the status counts them (status.c). */
static void count_window(rtg_pd_shared *sh, rtg_pd_worker *w, const rtg_cycle *c)
{
    if (w->tr->kind == RTG_TRIGGER_TIMER && c->cycle > (uint64_t)(w->last_number + 1)) {
        uint64_t first = (uint64_t)(w->last_number + 1);
        rtg_wcounts_skipped(sh->counts, first, c->cycle - 1, period_of(sh, w));
        w->skipped_seen += c->cycle - first;
    }
    if ((int64_t)c->cycle > w->last_number)
        w->last_number = (int64_t)c->cycle;
    rtg_wcounts_cycle(sh->counts, c->deadline_ns, c->ti, c->tw < 0);
}

/* The deadlines a timer thread skipped after its last cycle (known once it is done). */
static void count_skipped_at_end(rtg_pd_shared *sh, rtg_pd_worker *w)
{
    if (w->tr->kind != RTG_TRIGGER_TIMER || w->skipped <= w->skipped_seen)
        return;
    uint64_t first = (uint64_t)(w->last_number + 1);
    rtg_wcounts_skipped(sh->counts, first, first + (w->skipped - w->skipped_seen) - 1, period_of(sh, w));
    w->skipped_seen = w->skipped;
}

static void fold_record(rtg_pd_shared *sh, rtg_pd_worker *w, const rtg_cycle *c)
{
    rtg_periodic_thread *t = w->out;
    if (rtg_stall_observing())
        rtg_pd_stall_judge(t, c);
    t->cycles++;
    if (c->tw < 0)
        t->misses++;
    rtg_dist_add(&t->ti, c->ti);
    rtg_dist_add(&t->ts, c->ts);
    rtg_dist_add(&t->tw, c->tw);
    /* Windows are keyed by the deadline, so a late wake-up counts in the
     * window where the cycle was due. */
    rtg_series_add(&t->ti_max, c->deadline_ns, c->ti);
    if (sh->counts)
        count_window(sh, w, c);
    if (sh->cfg->samples)
        rtg_pd_samples_write(sh->cfg->samples, sh->cfg->samples_binary, w->index, c);
    if (sh->status)
        rtg_status_add(sh->status, w->index, c->cycle, c->deadline_ns, c->ti, c->tw < 0);
}

/* Fold what the rings hold. With the host-stall observer running, a cycle that
 * ended after the observer last looked at the clock waits for the next drain (a
 * stall it overlaps may not be recorded yet), unless the observer is more than
 * a second behind (the ring holds two) or this is the last drain (final). */
static void drain(rtg_pd_shared *sh, rtg_pd_worker *w, bool final)
{
    int64_t covered = final ? INT64_MAX : rtg_stall_covered();
    if (covered != INT64_MAX && rtg_mono_ns() - covered > 1000000000LL)
        covered = INT64_MAX;
    void *first;
    size_t n;
    while ((n = rtg_ring_peek(&w->ring, &first, 4096)) > 0) {
        size_t i = 0;
        for (; i < n; i++) {
            const rtg_cycle *c = (const rtg_cycle *)first + i;
            if (c->deadline_ns + c->ti + c->ts > covered)
                break;
            fold_record(sh, w, c);
        }
        rtg_ring_release(&w->ring, i);
        if (i < n)
            return;
    }
}

void *rtg_pd_collector_main(void *p)
{
    rtg_pd_shared *sh = p;
    int n = sh->cfg->nthreads;
    for (;;) {
        bool all_done = true;
        for (int i = 0; i < n; i++)
            all_done = all_done && atomic_load_explicit(&sh->w[i].done, memory_order_acquire);
        if (all_done)
            rtg_stall_sync();   /* a stall that ended with the last cycles is recorded */
        for (int i = 0; i < n; i++) {
            drain(sh, &sh->w[i], all_done);
            if (sh->w[i].tr->collect)
                sh->w[i].tr->collect(sh->w[i].tr->arg);
        }
        if (sh->cfg->samples)
            fflush(sh->cfg->samples);   /* lets a reader follow the file during the run */
        if (sh->counts && all_done)
            for (int i = 0; i < n; i++)
                count_skipped_at_end(sh, &sh->w[i]);
        if (sh->status && all_done)
            for (int i = 0; i < n; i++)   /* deadlines it skipped after its last cycle */
                rtg_status_end(sh->status, i, sh->w[i].skipped);
        if (sh->status)
            rtg_status_write(sh->status, all_done);   /* the windows every thread is past */
        if (all_done)
            break;
        struct timespec ts = rtg_ns_timespec(COLLECT_PERIOD_NS);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Keep the collector off the measured CPUs when another CPU is allowed. */
void rtg_pd_place_collector(pthread_attr_t *a, const rtg_periodic_cfg *cfg)
{
#ifdef RTG_POSIX_ONLY
    (void)a, (void)cfg;   /* no affinity in POSIX */
#else
    int allowed[RTG_MAX_CPUS];
    int n = rtg_allowed_cpus(allowed, RTG_MAX_CPUS);
    cpu_set_t set;
    CPU_ZERO(&set);
    int count = 0;
    for (int i = 0; i < n; i++) {
        bool measured = false;
        for (int k = 0; k < cfg->nthreads; k++)
            measured = measured || cfg->cpus[k] == allowed[i];
        if (!measured) {
            CPU_SET(allowed[i], &set);
            count++;
        }
    }
    if (count > 0)
        pthread_attr_setaffinity_np(a, sizeof set, &set);
#endif
}

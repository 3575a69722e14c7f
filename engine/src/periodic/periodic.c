/* periodic: the cycle driver of T = Ti + Ts + Tw (see periodic.h); this file is
 * the run's lifecycle (periodic_shared.h lists the others, which this file uses
 * and none of which uses this file). Measuring threads are
 * set up (pin, policy, stack prefault) and meet at a start gate, then each runs
 * its trigger's loop (periodic_trigger.c). The calling thread waits for the
 * workers and, when the run must stop, interrupts their waits (RTG_WAKE_SIGNAL).
 * A SCHED_OTHER collector (periodic_collect.c) drains the rings every 50 ms into
 * the statistics and the optional raw samples file; at the end the threads'
 * statistics are merged. */
#include "portable.h"
#include "periodic/periodic.h"
#include "periodic/periodic_collect.h"
#include "periodic/periodic_samples.h"
#include "periodic/periodic_shared.h"
#include "periodic/periodic_stall.h"
#include "periodic/periodic_trigger.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RING_SECONDS 2                   /* ring holds >= 2 s of cycles */
#define STACK_SIZE (512 * 1024)
#define STACK_PREFAULT (256 * 1024)
#define SERIES_MAX_WINDOWS (1u << 20)    /* bounds memory of the window series */

static const rtg_trigger timer_trigger = {.kind = RTG_TRIGGER_TIMER};

static size_t ring_capacity(int64_t period_ns)
{
    uint64_t need = (uint64_t)(RING_SECONDS * 1000000000LL / period_ns) + 1;
    size_t cap = 1024;
    while (cap < need)
        cap <<= 1;
    return cap;
}

/* Pin, policy, prefault; on failure record the sentence. */
static void setup_worker(rtg_pd_worker *w)
{
    const rtg_periodic_cfg *cfg = w->sh->cfg;
    rtg_periodic_thread *o = w->out;
    o->cpu = cfg->cpus[w->index];
    o->tid = rtg_thread_tid();
    if (o->cpu >= 0 && rtg_pin_cpu(o->cpu, w->err, sizeof w->err) != 0) {
        atomic_store(&w->failed, true);
        return;
    }
    int prio = cfg->priorities ? cfg->priorities[w->index] : cfg->priority;
    if (rtg_sched_apply(&o->sched, cfg->policy, prio, cfg->allow_fallback, w->err,
                        sizeof w->err) != 0) {
        atomic_store(&w->failed, true);
        return;
    }
    rtg_prefault_stack(STACK_PREFAULT);
}

static void *worker_main(void *p)
{
    rtg_pd_worker *w = p;
    rtg_pd_shared *sh = w->sh;
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, RTG_WAKE_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &wake, NULL);   /* a stop interrupts this thread's waits */
    setup_worker(w);
    pthread_mutex_lock(&sh->lock);
    sh->ready++;
    pthread_cond_broadcast(&sh->cond);
    while (!sh->go)
        pthread_cond_wait(&sh->cond, &sh->lock);
    pthread_mutex_unlock(&sh->lock);
    if (!atomic_load(&w->failed) && !atomic_load(&sh->abort_setup))
        rtg_pd_measure(w);
    rtg_thread_switches(&w->out->nvcsw, &w->out->nivcsw, 1);   /* the thread's whole life */
    atomic_store_explicit(&w->done, true, memory_order_release);
    rtg_stop_notify();
    return NULL;
}

/* Threads start as SCHED_OTHER (explicit, not inherited from an RT main thread);
 * measuring threads raise themselves after pinning. */
static void other_attr(pthread_attr_t *a)
{
    struct sched_param sp = {.sched_priority = 0};
    pthread_attr_init(a);
    pthread_attr_setstacksize(a, STACK_SIZE);
    pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(a, SCHED_OTHER);
    pthread_attr_setschedparam(a, &sp);
}

static size_t series_windows(const rtg_periodic_cfg *cfg)
{
    int64_t span = cfg->cycles ? (int64_t)cfg->cycles * cfg->period_ns : cfg->duration_ns;
    uint64_t n = (uint64_t)(span / cfg->window_ns) + 2;
    return n > SERIES_MAX_WINDOWS ? SERIES_MAX_WINDOWS : (size_t)n;
}

static int init_thread_stats(rtg_periodic_thread *t, const rtg_periodic_cfg *cfg)
{
    memset(t, 0, sizeof *t);
    t->cpu = -1;
    t->tid = -1;
    if (rtg_dist_init(&t->ti, cfg->lin_bucket_ns, cfg->lin_buckets) != 0 ||
        rtg_dist_init(&t->ts, 0, 0) != 0 || rtg_dist_init(&t->tw, 0, 0) != 0 ||
        rtg_series_init(&t->ti_max, 0, cfg->window_ns, series_windows(cfg)) != 0)
        return -1;
    return 0;
}

static void free_thread_stats(rtg_periodic_thread *t)
{
    if (t->clean)
        for (int k = 0; k < 3; k++)
            rtg_dist_free(&t->clean[k]);
    free(t->clean);
    t->clean = NULL;
    rtg_dist_free(&t->ti);
    rtg_dist_free(&t->ts);
    rtg_dist_free(&t->tw);
    rtg_series_free(&t->ti_max);
    rtg_wcounts_free(&t->counts);
}

void rtg_periodic_free(rtg_periodic_run *run)
{
    if (run->t)
        for (int i = 0; i < run->nthreads; i++)
            free_thread_stats(&run->t[i]);
    free(run->t);
    run->t = NULL;
    free_thread_stats(&run->all);
    run->nthreads = 0;
}

static void merge_threads(rtg_periodic_run *run)
{
    rtg_periodic_thread *a = &run->all;
    a->ti_max.start_ns = run->start_ns;
    for (int i = 0; i < run->nthreads; i++) {
        const rtg_periodic_thread *t = &run->t[i];
        a->cycles += t->cycles;
        a->misses += t->misses;
        a->skipped += t->skipped;
        a->dropped += t->dropped;
        a->nvcsw += t->nvcsw;
        a->nivcsw += t->nivcsw;
        rtg_dist_merge(&a->ti, &t->ti);
        rtg_dist_merge(&a->ts, &t->ts);
        rtg_dist_merge(&a->tw, &t->tw);
        rtg_series_merge(&a->ti_max, &t->ti_max);
    }
    if (run->nthreads > 0)
        a->sched = run->t[0].sched;
    rtg_pd_stall_merge(run);
}

/* Measuring threads block the stop signals, so rtg_stop is set by the main
 * thread's handler and the measured sleep is never interrupted by it. */
static void block_stop_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

/* Wait until every started worker is done. When the run must stop (a signal,
 * stop_above_ns, a payload ending it) interrupt the waits of those still running,
 * again every 5 ms until they are done: a signal that came just before a thread
 * entered its wait is not lost. The calling thread sleeps in rtg_stop_wait,
 * which SIGINT/SIGTERM and finishing workers wake. */
static void wait_workers(rtg_pd_shared *sh, int started)
{
    rtg_wake_install();
    for (;;) {
        bool all_done = true;
        for (int i = 0; i < started; i++)
            all_done = all_done && atomic_load_explicit(&sh->w[i].done, memory_order_acquire);
        if (all_done)
            return;
        if (rtg_pd_should_stop(sh)) {
            for (int i = 0; i < started; i++)
                if (!atomic_load_explicit(&sh->w[i].done, memory_order_acquire))
                    rtg_wake_thread(sh->w[i].th);
            struct timespec ts = rtg_ns_timespec(5000000);
            nanosleep(&ts, NULL);
        } else {
            rtg_stop_wait(1000000000LL);   /* woken at once by a stop or a finished worker */
        }
    }
}

static int start_workers(rtg_pd_shared *sh, pthread_attr_t *attr, char *err, size_t errlen)
{
    for (int i = 0; i < sh->cfg->nthreads; i++) {
        int rc = pthread_create(&sh->w[i].th, attr, worker_main, &sh->w[i]);
        if (rc != 0) {
            snprintf(err, errlen, "could not start measuring thread %d (%s); use fewer --threads.", i,
                     strerror(rc));
            return i;
        }
        sh->w[i].started = true;
    }
    return sh->cfg->nthreads;
}

int rtg_periodic(const rtg_periodic_cfg *cfg, rtg_periodic_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    int n = cfg->nthreads;
    if (n < 1 || n > 1024 || cfg->period_ns <= 0 || (cfg->cycles == 0 && cfg->duration_ns <= 0)) {
        snprintf(err, errlen, "periodic driver misconfigured (threads %d, period %lld ns); this is a bug.",
                 n, (long long)cfg->period_ns);
        return -1;
    }
    rtg_periodic_cfg c = *cfg;
    if (c.window_ns <= 0)
        c.window_ns = 1000000000LL;
    rtg_pd_shared sh = {.cfg = &c};
    run->nthreads = n;
    run->t = calloc((size_t)n, sizeof *run->t);
    sh.w = calloc((size_t)n, sizeof *sh.w);
    bool ok = run->t && sh.w && init_thread_stats(&run->all, &c) == 0;
    /* the window counts, for all threads together: the maxima's windows and bound */
    if (ok && c.window_counts) {
        ok = rtg_wcounts_init(&run->all.counts, 0, c.window_ns, series_windows(&c)) == 0;
        sh.counts = &run->all.counts;
    }
    for (int i = 0; ok && i < n; i++) {
        ok = init_thread_stats(&run->t[i], &c) == 0 &&
             rtg_pd_worker_init(&sh.w[i], &sh, i, &run->t[i], c.triggers ? &c.triggers[i] : &timer_trigger,
                                ring_capacity(c.period_ns)) == 0;
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory preparing %d measuring threads; use fewer --threads.", n);
        goto fail_alloc;
    }
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.cond, NULL);
    pthread_attr_t attr;
    other_attr(&attr);
    sigset_t old;
    block_stop_signals(&old);
    int started = start_workers(&sh, &attr, err, errlen);
    if (started < n)
        atomic_store(&sh.abort_setup, true);
    for (int i = started; i < n; i++)
        atomic_store(&sh.w[i].done, true);   /* the collector must not wait for them */
    pthread_mutex_lock(&sh.lock);
    while (sh.ready < started)
        pthread_cond_wait(&sh.cond, &sh.lock);
    pthread_mutex_unlock(&sh.lock);
    for (int i = 0; i < started; i++)
        if (atomic_load(&sh.w[i].failed) && !atomic_load(&sh.abort_setup)) {
            snprintf(err, errlen, "%s", sh.w[i].err);
            atomic_store(&sh.abort_setup, true);
        }
    /* One start instant for all threads, so their deadlines align. */
    sh.start_ns = c.start_at_ns > 0 ? c.start_at_ns
                                    : rtg_mono_ns() + (c.start_delay_ns > 0 ? c.start_delay_ns : 0);
    for (int i = 0; i < n; i++)
        run->t[i].ti_max.start_ns = sh.start_ns;
    run->all.counts.start_ns = sh.start_ns;
    if (c.samples && !atomic_load(&sh.abort_setup))
        rtg_pd_samples_header(c.samples, c.samples_binary);
    if (c.status && !atomic_load(&sh.abort_setup)) {
        /* a timer thread's records are numbered by deadline: the status counts the
         * numbers missing between them as skipped deadlines, in their windows */
        int64_t *periods = calloc((size_t)n, sizeof *periods);
        bool timers = periods != NULL;
        for (int i = 0; timers && i < n; i++) {
            timers = sh.w[i].tr->kind == RTG_TRIGGER_TIMER;
            periods[i] = c.periods_ns ? c.periods_ns[i] : c.period_ns;
        }
        sh.status = rtg_status_new(c.status, n, c.cpus, timers ? periods : NULL, sh.start_ns, c.window_ns,
                                   c.lin_bucket_ns, c.lin_buckets);
        free(periods);
        if (!sh.status) {
            snprintf(err, errlen, "out of memory preparing the status of %d threads; use fewer --threads.", n);
            atomic_store(&sh.abort_setup, true);
        }
    }
    pthread_t coll;
    pthread_attr_t cattr;
    other_attr(&cattr);
    rtg_pd_place_collector(&cattr, &c);
    bool have_collector = pthread_create(&coll, &cattr, rtg_pd_collector_main, &sh) == 0;
    pthread_mutex_lock(&sh.lock);
    sh.go = true;
    pthread_cond_broadcast(&sh.cond);
    pthread_mutex_unlock(&sh.lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    wait_workers(&sh, started);
    for (int i = 0; i < started; i++)
        pthread_join(sh.w[i].th, NULL);
    if (have_collector)
        pthread_join(coll, NULL);
    else
        rtg_pd_collector_main(&sh);
    rtg_status_free(sh.status);
    pthread_attr_destroy(&attr);
    pthread_attr_destroy(&cattr);
    pthread_cond_destroy(&sh.cond);
    pthread_mutex_destroy(&sh.lock);
    run->end_ns = rtg_mono_ns();
    run->start_ns = sh.start_ns;
    run->period_ns = c.periods_ns ? 0 : c.period_ns;
    for (int i = 0; i < n; i++) {
        run->t[i].dropped = rtg_ring_dropped(&sh.w[i].ring);
        run->t[i].skipped = sh.w[i].skipped;
        rtg_pd_worker_free(&sh.w[i]);
    }
    free(sh.w);
    if (atomic_load(&sh.abort_setup)) {
        rtg_periodic_free(run);
        return -1;
    }
    merge_threads(run);
    run->interrupted = rtg_stop != 0;
    run->stopped_above = atomic_load(&sh.stopped_above);
    run->ended_by_payload = atomic_load(&sh.ended_by_payload);
    return 0;

fail_alloc:
    if (sh.w)
        for (int i = 0; i < n; i++)
            rtg_pd_worker_free(&sh.w[i]);
    free(sh.w);
    rtg_periodic_free(run);
    return -1;
}

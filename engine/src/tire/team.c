/* tire team: worker threads and the one barrier per step (see team.h). */
#include "tire/team.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "prim.h"

#define SPIN_LIMIT 2000        /* pause loops (a few microseconds) before blocking */

typedef struct {
    tire_team *tm;
    int index;
    pthread_t th;
    bool started;
    rtg_sched sched;
    char err[512];
    uint64_t nvcsw, nivcsw;
} worker;

struct tire_team {
    tire_solver *s;
    tire_team_cfg cfg;
    int spin;                       /* spin budget: 0 when threads outnumber CPUs */
    worker *w;
    _Alignas(64) atomic_uint gen;   /* step generation: bumped to release workers */
    _Alignas(64) atomic_uint pending;   /* workers still in the current step */
    _Alignas(64) atomic_int sleepers;   /* workers blocked on gen */
    atomic_int driver_sleeping;
    atomic_int ready, failed;
    sem_t arrived;                  /* posted by each worker once it is set up */
    atomic_bool stop;
    bool centroid;
#if !defined(RTG_HAVE_FUTEX)
    pthread_mutex_t mx;             /* stand in for the futex words (see below) */
    pthread_cond_t cv;
#endif
};

/* Block while *word == val / wake the threads blocked on word: the Linux futex
 * where the build has it (prim.h), else one mutex and condition variable (the
 * word is changed before wake_word takes the mutex, and checked under it, so no
 * wake-up is lost). */
#if defined(RTG_HAVE_FUTEX)
static void wait_word(tire_team *tm, atomic_uint *word, unsigned val)
{
    (void)tm;
    rtg_futex_wait((_Atomic int *)(void *)word, (int)val);
}

static void wake_word(tire_team *tm, atomic_uint *word, int n)
{
    (void)tm;
    rtg_futex_wake((_Atomic int *)(void *)word, n);
}
#else
static void wait_word(tire_team *tm, atomic_uint *word, unsigned val)
{
    pthread_mutex_lock(&tm->mx);
    while (atomic_load(word) == val)
        pthread_cond_wait(&tm->cv, &tm->mx);
    pthread_mutex_unlock(&tm->mx);
}

static void wake_word(tire_team *tm, atomic_uint *word, int n)
{
    (void)word, (void)n;
    pthread_mutex_lock(&tm->mx);
    pthread_cond_broadcast(&tm->cv);
    pthread_mutex_unlock(&tm->mx);
}
#endif

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Wait until gen differs from last; returns the new value. */
static unsigned wait_release(tire_team *tm, unsigned last)
{
    for (int i = 0; i < tm->spin; i++) {
        unsigned g = atomic_load_explicit(&tm->gen, memory_order_acquire);
        if (g != last)
            return g;
        cpu_relax();
    }
    for (;;) {
        atomic_fetch_add(&tm->sleepers, 1);
        unsigned g = atomic_load(&tm->gen);
        if (g == last)
            wait_word(tm, &tm->gen, last);
        atomic_fetch_sub(&tm->sleepers, 1);
        g = atomic_load_explicit(&tm->gen, memory_order_acquire);
        if (g != last)
            return g;
    }
}

static void finish_share(tire_team *tm)
{
    if (atomic_fetch_sub(&tm->pending, 1) == 1 && atomic_load(&tm->driver_sleeping))
        wake_word(tm, &tm->pending, 1);
}

static void wait_all_done(tire_team *tm)
{
    for (int i = 0; i < tm->spin; i++) {
        if (atomic_load_explicit(&tm->pending, memory_order_acquire) == 0)
            return;
        cpu_relax();
    }
    atomic_store(&tm->driver_sleeping, 1);
    unsigned p;
    while ((p = atomic_load(&tm->pending)) != 0)
        wait_word(tm, &tm->pending, p);
    atomic_store(&tm->driver_sleeping, 0);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    tire_team *tm = w->tm;
    int cpu = tm->cfg.cpus[w->index];
    bool ok = cpu < 0 || rtg_pin_cpu(cpu, w->err, sizeof w->err) == 0;
    ok = ok && rtg_sched_apply(&w->sched, tm->cfg.policy, tm->cfg.priority, tm->cfg.allow_fallback,
                               w->err, sizeof w->err) == 0;
    if (!ok)
        atomic_fetch_add(&tm->failed, 1);
    rtg_prefault_stack(64 * 1024);
    rtg_thread_switches(&w->nvcsw, &w->nivcsw, -1);
    atomic_fetch_add(&tm->ready, 1);
    sem_post(&tm->arrived);
    unsigned last = 0;
    for (;;) {
        last = wait_release(tm, last);
        if (atomic_load(&tm->stop))
            break;
        tire_solver_part(tm->s, w->index, tm->centroid);
        finish_share(tm);
    }
    rtg_thread_switches(&w->nvcsw, &w->nivcsw, 1);
    return NULL;
}

static int distinct_cpus(const tire_team_cfg *cfg)
{
    int count = 0;
    for (int i = 0; i < cfg->nthreads; i++) {
        bool seen = cfg->cpus[i] < 0;
        for (int k = 0; k < i && !seen; k++)
            seen = cfg->cpus[k] == cfg->cpus[i];
        count += !seen;
    }
    return count;
}

static void join_workers(tire_team *tm)
{
    atomic_store(&tm->stop, true);
    atomic_fetch_add(&tm->gen, 1);
    wake_word(tm, &tm->gen, INT32_MAX);
    for (int i = 1; i < tm->cfg.nthreads; i++)
        if (tm->w[i].started)
            pthread_join(tm->w[i].th, NULL);
}

static void destroy_team(tire_team *tm)
{
    sem_destroy(&tm->arrived);
#if !defined(RTG_HAVE_FUTEX)
    pthread_cond_destroy(&tm->cv);
    pthread_mutex_destroy(&tm->mx);
#endif
    free(tm->w);
    free(tm);
}

tire_team *tire_team_start(tire_solver *s, const tire_team_cfg *cfg, char *err, size_t errlen)
{
    tire_team *tm = aligned_alloc(64, (sizeof *tm + 63) & ~(size_t)63);
    if (!tm) {
        snprintf(err, errlen, "out of memory starting the solver threads; use fewer --threads.");
        return NULL;
    }
    memset(tm, 0, sizeof *tm);
    sem_init(&tm->arrived, 0, 0);
#if !defined(RTG_HAVE_FUTEX)
    pthread_mutex_init(&tm->mx, NULL);
    rtg_cond_init(&tm->cv);
#endif
    tm->s = s;
    tm->cfg = *cfg;
    int online = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bool oversubscribed = cfg->nthreads > distinct_cpus(cfg) ||
                          (cfg->cpus[0] < 0 && cfg->nthreads > online);
    tm->spin = oversubscribed ? 0 : SPIN_LIMIT;
    tm->w = calloc((size_t)cfg->nthreads, sizeof *tm->w);
    if (!tm->w) {
        free(tm);
        snprintf(err, errlen, "out of memory starting the solver threads; use fewer --threads.");
        return NULL;
    }
    pthread_attr_t attr;
    struct sched_param sp = {.sched_priority = 0};
    pthread_attr_init(&attr);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
    pthread_attr_setschedparam(&attr, &sp);
    int started = 0;
    for (int i = 1; i < cfg->nthreads; i++) {
        worker *w = &tm->w[i];
        w->tm = tm;
        w->index = i;
        int rc = pthread_create(&w->th, &attr, worker_main, w);
        if (rc != 0) {
            snprintf(err, errlen, "could not start solver thread %d (%s); use fewer --threads.", i,
                     strerror(rc));
            break;
        }
        w->started = true;
        started++;
    }
    pthread_attr_destroy(&attr);
    /* Each worker says when it is set up (microseconds); the wait is bounded anyway. */
    int64_t until = rtg_mono_ns() + 10000000000LL;
    for (int i = 0; i < started; i++)
        if (rtg_sem_wait_until(&tm->arrived, until) != 0)
            break;
    bool failed = started < cfg->nthreads - 1 || atomic_load(&tm->ready) < started;
    if (!failed && atomic_load(&tm->failed) > 0) {
        for (int i = 1; i < cfg->nthreads; i++)
            if (tm->w[i].err[0]) {
                snprintf(err, errlen, "%s", tm->w[i].err);
                break;
            }
        failed = true;
    }
    if (failed) {
        if (!err[0])
            snprintf(err, errlen, "the solver threads did not start; use fewer --threads.");
        join_workers(tm);
        destroy_team(tm);
        return NULL;
    }
    return tm;
}

int tire_team_step(tire_team *tm, bool centroid, double *centroid_y)
{
    int k = tm->cfg.nthreads;
    tm->centroid = centroid;
    if (k > 1) {
        atomic_store_explicit(&tm->pending, (unsigned)(k - 1), memory_order_relaxed);
        atomic_fetch_add(&tm->gen, 1);          /* seq_cst: publishes pending and the state */
        if (atomic_load(&tm->sleepers) > 0)
            wake_word(tm, &tm->gen, INT32_MAX);
    }
    tire_solver_part(tm->s, 0, centroid);
    if (k > 1)
        wait_all_done(tm);
    int contact = 0;
    double ysum = 0.0;
    for (int t = 0; t < k; t++) {
        const tire_part_out *o = tire_solver_out(tm->s, t);
        contact |= o->contact;
        ysum += o->ysum;
    }
    tire_state *st = tire_solver_state(tm->s);
    st->step++;
    if (centroid)
        *centroid_y = ysum / (double)st->p.n;
    return contact;
}

void tire_team_stop_each(tire_team *tm, uint64_t *nvcsw, uint64_t *nivcsw)
{
    if (!tm)
        return;
    join_workers(tm);
    for (int i = 1; i < tm->cfg.nthreads; i++) {
        nvcsw[i] = tm->w[i].nvcsw;
        nivcsw[i] = tm->w[i].nivcsw;
    }
    destroy_team(tm);
}

void tire_team_stop(tire_team *tm, uint64_t *nvcsw, uint64_t *nivcsw)
{
    if (!tm)
        return;
    join_workers(tm);
    for (int i = 1; i < tm->cfg.nthreads; i++) {
        *nvcsw += tm->w[i].nvcsw;
        *nivcsw += tm->w[i].nivcsw;
    }
    destroy_team(tm);
}

const rtg_sched *tire_team_sched(const tire_team *tm, int t) { return &tm->w[t].sched; }

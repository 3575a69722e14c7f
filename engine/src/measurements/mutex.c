/* mutex: pthread mutex performance, on one CPU, --protocol inherit (default)
 * or none. Threads L at --priority, M at +1, H at +2.
 *  MUT-P-ARN  acquire / release: L locks and unlocks a free mutex (timestamps
 *             around each call; both stay in user space).
 *  MUT-P-ARC  per iteration: L locks the mutex and posts H's semaphore; H
 *             preempts L, takes t0 and requests the mutex, blocks, and (with
 *             inheritance) lends L its priority; L resumes and takes t1:
 *             acquire_contended = t1 - t0 (the blocking request, the boost and
 *             the switch back to the holder). L then makes M ready (posts its
 *             semaphore): boosted, L keeps the CPU. L takes t2 and unlocks; the
 *             mutex passes to H, which preempts L and takes t3:
 *             release_contended = t3 - t2 (the unlock with a waiter, the end of
 *             the boost and the switch to H). M runs only after H is done; if M
 *             ran before H got the mutex (no inheritance), the iteration is
 *             counted in inversions and M busy-waits --hog-us, as a medium-
 *             priority task would. */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt mutex_opts[] = {
    {"priority", RTG_OPT_INT, "80", 1, 96, NULL, "priority of the low thread; medium +1, high +2"},
    {"protocol", RTG_OPT_ENUM, "inherit", 0, 0, "inherit|none",
     "mutex protocol: priority inheritance (PTHREAD_PRIO_INHERIT) or none"},
    {"iterations", RTG_OPT_INT, "10000", 10, 1000000, NULL, "samples of each metric"},
    {"hog-us", RTG_OPT_INT, "200", 1, 100000, NULL,
     "how long the medium thread hogs the CPU when it runs before the high one got the mutex"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

#define WARMUP 10

enum { ACQUIRE, RELEASE, ACQUIRE_CONTENDED, RELEASE_CONTENDED, NMETRICS };
static const char *const metric_names[NMETRICS] = {"acquire", "release", "acquire_contended",
                                                   "release_contended"};

typedef struct {
    const rtg_bench *b;
    size_t n;
    int64_t hog_ns;
    pthread_mutex_t m;
    sem_t go_high, go_medium;
    _Atomic int done, failed;
    _Atomic size_t high_got;  /* iterations in which H obtained the mutex */
    size_t i;
    int64_t t0, t2;
    int64_t inversions;
    rtg_samples s[NMETRICS];
} mtest;

static inline void put(mtest *t, int metric, size_t i, int64_t from, int64_t to)
{
    if (i >= WARMUP)
        rtg_samples_put_span(&t->s[metric], from, to);
}

static void measure_uncontended(mtest *t)
{
    for (size_t i = 0; i < t->n && !rtg_micro_stopping(); i++) {
        int64_t a = rtg_mono_ns();
        pthread_mutex_lock(&t->m);
        int64_t b = rtg_mono_ns();
        pthread_mutex_unlock(&t->m);
        int64_t c = rtg_mono_ns();
        put(t, ACQUIRE, i, a, b);
        put(t, RELEASE, i, b, c);
    }
}

static void *low(void *p)
{
    mtest *t = p;
    measure_uncontended(t);
    for (size_t i = 0; i < t->n && !rtg_micro_stopping(); i++) {
        t->i = i;
        pthread_mutex_lock(&t->m);
        sem_post(&t->go_high);
        int64_t t1 = rtg_mono_ns();
        put(t, ACQUIRE_CONTENDED, i, t->t0, t1);
        sem_post(&t->go_medium);
        t->t2 = rtg_mono_ns();
        pthread_mutex_unlock(&t->m);
    }
    atomic_store(&t->done, 1);
    sem_post(&t->go_high);
    sem_post(&t->go_medium);
    return NULL;
}

static void *high(void *p)
{
    mtest *t = p;
    for (;;) {
        rtg_sem_wait(&t->go_high);
        if (atomic_load(&t->done) || rtg_micro_stopping())
            break;
        t->t0 = rtg_mono_ns();
        if (pthread_mutex_timedlock(&t->m, &t->b->deadline_rt) != 0) {
            atomic_store(&t->failed, 1);
            atomic_store(&rtg_micro_abort, 1);
            break;
        }
        int64_t t3 = rtg_mono_ns();
        put(t, RELEASE_CONTENDED, t->i, t->t2, t3);
        atomic_store(&t->high_got, t->i + 1);
        pthread_mutex_unlock(&t->m);
    }
    return NULL;
}

static void *medium(void *p)
{
    mtest *t = p;
    for (;;) {
        rtg_sem_wait(&t->go_medium);
        if (atomic_load(&t->done) || rtg_micro_stopping())
            break;
        if (atomic_load(&t->high_got) <= t->i) {
            t->inversions += t->i >= WARMUP;
            rtg_busy_ns(t->hog_ns);
        }
    }
    return NULL;
}

static void unblock_all(void *p)
{
    mtest *t = p;
    sem_post(&t->go_high);
    sem_post(&t->go_medium);
}

static int init_mtest(mtest *t, const rtg_opts *o)
{
    t->n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    t->hog_ns = rtg_opt_int(o, "hog-us") * 1000;
    rtg_mutex_init(&t->m, rtg_mutex_protocol(rtg_opt_str(o, "protocol")), 0);
    sem_init(&t->go_high, 0, 0);
    sem_init(&t->go_medium, 0, 0);
    for (int k = 0; k < NMETRICS; k++)
        if (rtg_samples_init(&t->s[k], t->n) != 0)
            return -1;
    return 0;
}

static void free_mtest(mtest *t)
{
    pthread_mutex_destroy(&t->m);
    sem_destroy(&t->go_high);
    sem_destroy(&t->go_medium);
    for (int k = 0; k < NMETRICS; k++)
        rtg_samples_free(&t->s[k]);
}

static int mutex_run(const rtg_opts *o, rtg_result *res)
{
    static mtest t;
    memset(&t, 0, sizeof t);
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, true, 3, 0, unblock_all, &t);
    if (status != RTG_EXIT_OK)
        return status;
    t.b = &s.b;
    s.failed = &t.failed;
    if (init_mtest(&t, o) != 0) {
        free_mtest(&t);
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for the samples; ask for fewer --iterations.");
    }
    /* the inversion fixture: high and medium blocked on their semaphores, then low runs the loop */
    rtg_inv_plan plan = {.fn = {low, medium, high},
                         .at = {RTG_AT_STARTED, RTG_AT_BLOCKED, RTG_AT_BLOCKED},
                         .blocks_on = {RTG_PRIM_SEM, RTG_PRIM_SEM, RTG_PRIM_SEM},
                         .order = {RTG_INV_HIGH, RTG_INV_MEDIUM, RTG_INV_LOW},
                         .arg = &t};
    if (rtg_inv_start(&s, &plan) != 0)
        atomic_store(&t.done, 1);
    status = rtg_scn_join(&s, res, "the run");
    if (status == RTG_EXIT_OK) {
        for (int k = 0; k < NMETRICS; k++)
            rtg_samples_report(res, metric_names[k], &t.s[k]);
        rtg_j_set(res->metrics, "inversions", rtg_j_scalar_int(t.inversions, "count"));
        rtg_scn_mark_incomplete(&s, res, (int64_t)(t.n - WARMUP), (int64_t)t.s[0].n);
        rtg_micro_method(res, "acquire/release: pthread_mutex_lock / unlock alone on a free mutex; "
                              "acquire_contended: the high thread's blocking lock request to the holder (low) "
                              "running again; release_contended: the holder's unlock to the high thread running "
                              "with the mutex");
    }
    if (rtg_scn_leaked(&s))
        return status;
    free_mtest(&t);
    return status;
}

static const rtg_metric mutex_metrics[] = {
    {"acquire", RTG_METRIC_DISTRIBUTION, "ns", 0, "pthread_mutex_lock on a free mutex"},
    {"release", RTG_METRIC_DISTRIBUTION, "ns", 0, "pthread_mutex_unlock with nobody waiting"},
    {"acquire_contended", RTG_METRIC_DISTRIBUTION, "ns", 0, "the high thread's blocking lock request to the holder (low) running again"},
    {"release_contended", RTG_METRIC_DISTRIBUTION, "ns", 0, "the holder's unlock to the high thread running with the mutex"},
    {"inversions", RTG_METRIC_SCALAR, "count", 0, "iterations in which the medium thread ran before high got the mutex (no inheritance)"},
    {0},
};

const rtg_test rtg_test_mutex = {
    .name = "mutex",
    .summary = "MUT-P-ARN/ARC: mutex acquire/release without contention and with priority inheritance",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = mutex_opts,
    .metrics = mutex_metrics,
    .flags = RTG_TEST_RT,
    .run = mutex_run,
};

/* deadlock-break (Rhealstone): how long a high-priority thread waits for a lock
 * held by a low-priority one while a medium one hogs the CPU. One CPU, threads
 * L at --priority, M at +1, H at +2, a mutex with --protocol inherit (default)
 * or none. Per iteration: L takes the mutex and makes M ready; M preempts L
 * ("hogging" the CPU) and makes H ready; H preempts M, takes t0 and requests the
 * mutex. With inheritance L now runs at H's priority above M, releases the
 * mutex, and H takes t1 as soon as its lock returns: deadlock_break = t1 - t0
 * (blocking request, boost of L, switch to L, L's unlock, hand-over, switch to
 * H). M then resumes and, if H already has been served, stops at once. Without
 * inheritance M keeps the CPU: it busy-waits --hog-us (bounded) before L can
 * release, the iteration is counted in inversions and the sample includes the
 * hog. The original Rhealstone figure subtracts a run without contention; here
 * nothing is subtracted (see the method block). */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt deadlock_opts[] = {
    {"priority", RTG_OPT_INT, "80", 1, 96, NULL, "priority of the low thread; medium +1, high +2"},
    {"protocol", RTG_OPT_ENUM, "inherit", 0, 0, "inherit|none",
     "mutex protocol: priority inheritance (PTHREAD_PRIO_INHERIT) or none"},
    {"iterations", RTG_OPT_INT, "5000", 10, 1000000, NULL, "deadlocks broken (samples)"},
    {"hog-us", RTG_OPT_INT, "200", 1, 100000, NULL,
     "how long the medium thread hogs the CPU when the high one has not been served"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

#define WARMUP 10

typedef struct {
    const rtg_bench *b;
    size_t n;
    int64_t hog_ns;
    pthread_mutex_t lock;
    sem_t go_medium, go_high;
    _Atomic int done, failed;
    _Atomic size_t served;    /* iterations in which H got the lock */
    size_t i;
    int64_t inversions;
    rtg_samples s;
} dbreak;

static void *low(void *p)
{
    dbreak *d = p;
    for (size_t i = 0; i < d->n && !rtg_micro_stopping(); i++) {
        d->i = i;
        pthread_mutex_lock(&d->lock);
        sem_post(&d->go_medium);
        pthread_mutex_unlock(&d->lock);
    }
    atomic_store(&d->done, 1);
    sem_post(&d->go_medium);
    sem_post(&d->go_high);
    return NULL;
}

static void *medium(void *p)
{
    dbreak *d = p;
    for (;;) {
        rtg_sem_wait(&d->go_medium);
        if (atomic_load(&d->done) || rtg_micro_stopping())
            break;
        size_t i = d->i;
        sem_post(&d->go_high);
        if (atomic_load(&d->served) <= i) {
            d->inversions += i >= WARMUP;
            int64_t end = rtg_mono_ns() + d->hog_ns;
            while (atomic_load(&d->served) <= i && rtg_mono_ns() < end && !rtg_micro_stopping())
                ;
        }
    }
    return NULL;
}

static void *high(void *p)
{
    dbreak *d = p;
    for (;;) {
        rtg_sem_wait(&d->go_high);
        if (atomic_load(&d->done) || rtg_micro_stopping())
            break;
        int64_t t0 = rtg_mono_ns();
        if (pthread_mutex_timedlock(&d->lock, &d->b->deadline_rt) != 0) {
            atomic_store(&d->failed, 1);
            atomic_store(&rtg_micro_abort, 1);
            break;
        }
        int64_t t1 = rtg_mono_ns();
        if (d->i >= WARMUP)
            rtg_samples_put_span(&d->s, t0, t1);
        atomic_store(&d->served, d->i + 1);
        pthread_mutex_unlock(&d->lock);
    }
    return NULL;
}

static void unblock_all(void *p)
{
    dbreak *d = p;
    sem_post(&d->go_medium);
    sem_post(&d->go_high);
}

static int deadlock_run(const rtg_opts *o, rtg_result *res)
{
    static dbreak d;
    memset(&d, 0, sizeof d);
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, true, 3, 0, unblock_all, &d);
    if (status != RTG_EXIT_OK)
        return status;
    d.b = &s.b;
    s.failed = &d.failed;
    d.n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    d.hog_ns = rtg_opt_int(o, "hog-us") * 1000;
    if (rtg_samples_init(&d.s, d.n) != 0) {
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for the samples; ask for fewer --iterations.");
    }
    rtg_mutex_init(&d.lock, rtg_mutex_protocol(rtg_opt_str(o, "protocol")), 0);
    sem_init(&d.go_medium, 0, 0);
    sem_init(&d.go_high, 0, 0);
    /* the inversion fixture: high and medium blocked on their semaphores, then low runs the loop */
    rtg_inv_plan plan = {.fn = {low, medium, high},
                         .at = {RTG_AT_STARTED, RTG_AT_BLOCKED, RTG_AT_BLOCKED},
                         .blocks_on = {RTG_PRIM_SEM, RTG_PRIM_SEM, RTG_PRIM_SEM},
                         .order = {RTG_INV_HIGH, RTG_INV_MEDIUM, RTG_INV_LOW},
                         .arg = &d};
    if (rtg_inv_start(&s, &plan) != 0)
        atomic_store(&d.done, 1);
    status = rtg_scn_join(&s, res, "the run");
    if (status == RTG_EXIT_OK) {
        rtg_samples_report(res, "deadlock_break", &d.s);
        rtg_scn_mark_incomplete(&s, res, (int64_t)(d.n - WARMUP), (int64_t)d.s.n);
        rtg_j_set(res->metrics, "inversions", rtg_j_scalar_int(d.inversions, "count"));
        rtg_micro_method(res, "deadlock_break: from the high thread's timestamp just before it requests the "
                              "mutex held by the low thread (the medium one ready and hogging) to its first "
                              "timestamp after the lock returned");
    }
    if (rtg_scn_leaked(&s))
        return status;
    pthread_mutex_destroy(&d.lock);
    sem_destroy(&d.go_medium);
    sem_destroy(&d.go_high);
    rtg_samples_free(&d.s);
    return status;
}

static const rtg_metric deadlock_break_metrics[] = {
    {"deadlock_break", RTG_METRIC_DISTRIBUTION, "ns", 0, "from high's lock request (low holding, medium hogging) to high running with the lock"},
    {"inversions", RTG_METRIC_SCALAR, "count", 0, "iterations in which the medium thread ran before high got the mutex (no inheritance)"},
    {0},
};

const rtg_test rtg_test_deadlock_break = {
    .name = "deadlock-break",
    .summary = "Rhealstone deadlock-break: high waits for a lock held by low while medium hogs, with inheritance",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = deadlock_opts,
    .metrics = deadlock_break_metrics,
    .flags = RTG_TEST_RT,
    .run = deadlock_run,
};

/* sem-lck: SEM-B-LCK, counting-semaphore semantics of a POSIX unnamed semaphore.
 * Four checks, each a verdict:
 *   initial_count    a semaphore made with value N lets exactly N trywaits through;
 *   posts_accumulate K posts with nobody waiting raise the value to K (getvalue)
 *                    and let exactly K trywaits through;
 *   wait_blocks      a higher-priority waiter on an empty semaphore blocks (the
 *                    controller on its CPU runs on), and one post hands it the
 *                    unit at once, before sem_post returns, leaving the value at 0;
 *   timed_wait       sem_clockwait on an empty semaphore times out (ETIMEDOUT),
 *                    not earlier than asked.
 * --primitive binary is the deliberately wrong primitive: a binary semaphore
 * (value saturates at 1, made from a mutex and a condition variable), under
 * which the counting checks must fail. */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>

#include "portable.h"
#include "behaviour.h"
#include "clock.h"
#include "test.h"

static const rtg_opt sem_lck_opts[] = {
    {"primitive", RTG_OPT_ENUM, "posix", 0, 0, "posix|binary",
     "posix: sem_t (the subject); binary: a semaphore saturating at 1 (the wrong primitive)"},
    {"count", RTG_OPT_INT, "3", 2, 1000, NULL, "initial value and number of posts of the counting checks"},
    {"timeout-ms", RTG_OPT_INT, "20", 1, 1000, NULL, "timeout of the timed-wait check"},
    {"priority", RTG_OPT_INT, "10", 1, 98, NULL, "priority of the controller; the waiter runs at +1"},
    {"policy", RTG_OPT_ENUM, "fifo", 0, 0, "fifo", "the checks run under SCHED_FIFO"},
    {0},
};

/* The semaphore under test: POSIX, or the binary stand-in. */
typedef struct {
    bool binary;
    sem_t s;
    pthread_mutex_t m;
    pthread_cond_t c;
    int v;
} csem;

static int cs_init(csem *x, bool binary, int value)
{
    memset(x, 0, sizeof *x);
    x->binary = binary;
    if (!binary)
        return sem_init(&x->s, 0, (unsigned)value);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&x->m, NULL);
    pthread_cond_init(&x->c, &ca);
    pthread_condattr_destroy(&ca);
    x->v = value > 0 ? 1 : 0;
    return 0;
}

static void cs_destroy(csem *x)
{
    if (!x->binary) {
        sem_destroy(&x->s);
        return;
    }
    pthread_cond_destroy(&x->c);
    pthread_mutex_destroy(&x->m);
}

static bool cs_trywait(csem *x)
{
    if (!x->binary)
        return sem_trywait(&x->s) == 0;
    pthread_mutex_lock(&x->m);
    bool ok = x->v > 0;
    if (ok)
        x->v--;
    pthread_mutex_unlock(&x->m);
    return ok;
}

/* 0 or ETIMEDOUT */
static int cs_wait_until(csem *x, int64_t deadline_ns)
{
    struct timespec dl = rtg_ns_timespec(deadline_ns);
    if (!x->binary) {
        while (rtg_sem_clockwait_mono(&x->s, &dl) != 0)
            if (errno != EINTR)
                return errno;
        return 0;
    }
    int rc = 0;
    pthread_mutex_lock(&x->m);
    while (x->v == 0 && rc == 0)
        rc = pthread_cond_timedwait(&x->c, &x->m, &dl);
    if (x->v > 0) {
        x->v--;
        rc = 0;
    }
    pthread_mutex_unlock(&x->m);
    return rc;
}

static void cs_post(csem *x)
{
    if (!x->binary) {
        sem_post(&x->s);
        return;
    }
    pthread_mutex_lock(&x->m);
    x->v = 1;             /* saturates: what makes it the wrong primitive */
    pthread_cond_signal(&x->c);
    pthread_mutex_unlock(&x->m);
}

static int cs_value(csem *x)
{
    int v = -1;
    if (!x->binary) {
        sem_getvalue(&x->s, &v);
        return v;
    }
    pthread_mutex_lock(&x->m);
    v = x->v;
    pthread_mutex_unlock(&x->m);
    return v;
}

static int drain(csem *x, int limit)
{
    int n = 0;
    while (n < limit && cs_trywait(x))
        n++;
    return n;
}

typedef struct {
    csem *sem;
    atomic_int tid, got;
    int rc;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    atomic_store(&w->tid, rtg_behav_tid());
    w->rc = cs_wait_until(w->sem, rtg_mono_ns() + 2000000000LL);   /* bounded */
    atomic_store(&w->got, w->rc == 0 ? 1 : -1);
    return NULL;
}

static int check_wait_blocks(csem *x, int cpu, int prio, rtg_result *res, char *err, size_t errlen)
{
    static waiter w;
    memset(&w, 0, sizeof w);
    w.sem = x;
    pthread_t th;
    /* higher priority on our CPU: it runs at once and must block in the wait */
    if (rtg_behav_start(&th, waiter_main, &w, cpu, RTG_POL_FIFO, prio + 1, err, errlen) != 0)
        return -1;
    int tid = atomic_load(&w.tid);
    rtg_prim on = x->binary ? RTG_PRIM_CONDVAR : RTG_PRIM_SEM;
    bool blocked = atomic_load(&w.got) == 0 && rtg_behav_wait_blocked_at(tid, prio + 1, on, 500000000LL) &&
                   atomic_load(&w.got) == 0;
    cs_post(x);
    int got_at_post = atomic_load(&w.got);       /* the waiter outranks us: already done */
    pthread_join(th, NULL);
    int left = cs_value(x);
    bool pass = blocked && got_at_post == 1 && left == 0;
    rtg_verdict(res, "wait_blocks", pass,
                "the waiter %s on the empty semaphore; after one post it %s, value left %d",
                blocked ? "blocked" : "did not block", got_at_post == 1 ? "had the unit at once" : "did not have it",
                left);
    return pass ? 1 : 0;
}

static int sem_lck_run(const rtg_opts *o, rtg_result *res)
{
    bool binary = strcmp(rtg_opt_str(o, "primitive"), "binary") == 0;
    int n = (int)rtg_opt_int(o, "count");
    int prio = (int)rtg_opt_int(o, "priority");
    int64_t timeout = rtg_opt_int(o, "timeout-ms") * 1000000;
    int cpu = rtg_behav_cpu(o);
    char err[512];
    if (cpu < 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    if (rtg_behav_self(cpu, RTG_POL_FIFO, prio, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    csem x;
    int passed = 0;

    if (cs_init(&x, binary, n) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "sem_init failed (%s).", strerror(errno));
    int through = drain(&x, n + 1);
    rtg_verdict(res, "initial_count", through == n, "value %d let %d trywaits through (expected %d)", n, through, n);
    passed += through == n;
    cs_destroy(&x);

    cs_init(&x, binary, 0);
    for (int i = 0; i < n; i++)
        cs_post(&x);
    int value = cs_value(&x);
    through = drain(&x, n + 1);
    bool acc = value == n && through == n;
    rtg_verdict(res, "posts_accumulate", acc, "%d posts without waiters: value %d, %d trywaits through (expected %d)",
                n, value, through, n);
    passed += acc;

    int rc = check_wait_blocks(&x, cpu, prio, res, err, sizeof err);
    if (rc < 0) {
        cs_destroy(&x);
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    passed += rc;

    drain(&x, 1000);
    int64_t t0 = rtg_mono_ns();
    int trc = cs_wait_until(&x, t0 + timeout);
    int64_t waited = rtg_mono_ns() - t0;
    bool timed = trc == ETIMEDOUT && waited >= timeout;
    rtg_verdict(res, "timed_wait", timed, "the timed wait on an empty semaphore %s after %.2f ms (asked %.0f ms)",
                trc == ETIMEDOUT ? "timed out" : "returned without timing out", (double)waited / 1e6,
                (double)timeout / 1e6);
    passed += timed;
    rtg_j_set(res->metrics, "timed_wait", rtg_j_scalar_int(waited, "ns"));
    cs_destroy(&x);

    rtg_verdict(res, "sem_lck", passed == 4, "%s semaphore: %d of 4 counting-semaphore checks passed",
                binary ? "binary" : "POSIX", passed);
    rtg_behav_env_cpu(res, cpu);
    return RTG_EXIT_OK;
}

static const rtg_metric sem_lck_metrics[] = {
    {"timed_wait", RTG_METRIC_SCALAR, "ns", 0, "how long a timed wait on an empty semaphore lasted"},
    {0},
};

const rtg_test rtg_test_sem_lck = {
    .name = "sem-lck",
    .summary = "SEM-B-LCK: counting-semaphore semantics (initial value, posts add up, wait blocks, timed wait)",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = sem_lck_opts,
    .metrics = sem_lck_metrics,
    .flags = RTG_TEST_RT,
    .run = sem_lck_run,
};

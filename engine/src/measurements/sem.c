/* sem: POSIX unnamed semaphore performance, three parts run by one measuring
 * thread M at --priority on one CPU (timestamps around each call):
 *  SEM-P-NEW  create_unused / delete_unused: sem_init then sem_destroy with
 *             nothing in between, each in memory that never held a semaphore;
 *             create_used / delete_used: in memory that held a used semaphore,
 *             sem_init, one sem_wait + sem_post, sem_destroy.
 *  SEM-P-ARN  acquire / release: sem_wait on a count of 1, sem_post with no
 *             waiter (no contention: both stay in user space).
 *  SEM-P-ARC  --waiters threads, all above M, block on a semaphore of count 0;
 *             Linux has 98 real-time levels below the watchdog, so the waiters'
 *             priorities are spread over --priority+1..98 with the highest one
 *             held by one waiter only (the one every post must wake).
 *             release_contended: M takes t0 and posts; the highest waiter wakes
 *             at once (preempting M) and takes t1: t1 - t0, the release plus the
 *             switch to the highest waiter.
 *             acquire_contended: that waiter takes t2 and calls sem_wait again,
 *             which blocks it behind the others; M resumes and takes t3: t3 - t2,
 *             the blocking acquire plus the switch back.
 *             A wake-up of any other waiter is counted in not_highest. */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt sem_opts[] = {
    {"priority", RTG_OPT_INT, "10", 1, 97, NULL,
     "priority of the measuring thread; the waiters run above it, up to 98"},
    {"iterations", RTG_OPT_INT, "10000", 10, 1000000, NULL, "samples of each metric"},
    {"waiters", RTG_OPT_INT, "128", 1, 1000, NULL, "waiting threads in SEM-P-ARC"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

#define WARMUP 10
#define TOP_PRIORITY 98

enum { CREATE_UNUSED, DELETE_UNUSED, CREATE_USED, DELETE_USED, ACQUIRE, RELEASE,
       ACQUIRE_CONTENDED, RELEASE_CONTENDED, NMETRICS };
static const char *const metric_names[NMETRICS] = {
    "create_unused", "delete_unused", "create_used", "delete_used", "acquire", "release",
    "acquire_contended", "release_contended"};

typedef struct {
    char bytes[64];           /* one semaphore per cache line */
} slot;

typedef struct {
    size_t n;                 /* warm-up + iterations */
    int nwaiters;
    slot *fresh, *used;
    rtg_samples m[NMETRICS];
    sem_t contended;
    _Atomic int done;
    int top;                  /* index of the highest waiter */
    int64_t t0, t2;
    size_t i;                 /* current ARC iteration */
    int64_t not_highest;
} semtest;

typedef struct {
    semtest *s;
    int index;
} waiter_arg;

static inline void put(semtest *s, int metric, size_t i, int64_t from, int64_t to)
{
    if (i >= WARMUP)
        rtg_samples_put_span(&s->m[metric], from, to);
}

static void measure_new(semtest *s)
{
    for (size_t i = 0; i < s->n && !rtg_micro_stopping(); i++) {
        sem_t *f = (sem_t *)s->fresh[i].bytes;
        int64_t a = rtg_mono_ns();
        sem_init(f, 0, 1);
        int64_t b = rtg_mono_ns();
        sem_destroy(f);
        int64_t c = rtg_mono_ns();
        put(s, CREATE_UNUSED, i, a, b);
        put(s, DELETE_UNUSED, i, b, c);
    }
    for (size_t i = 0; i < s->n; i++) {   /* these slots have held a used semaphore */
        sem_t *u = (sem_t *)s->used[i].bytes;
        sem_init(u, 0, 1);
        sem_wait(u);
        sem_post(u);
        sem_destroy(u);
    }
    for (size_t i = 0; i < s->n && !rtg_micro_stopping(); i++) {
        sem_t *u = (sem_t *)s->used[i].bytes;
        int64_t a = rtg_mono_ns();
        sem_init(u, 0, 1);
        int64_t b = rtg_mono_ns();
        sem_wait(u);
        sem_post(u);
        int64_t c = rtg_mono_ns();
        sem_destroy(u);
        int64_t d = rtg_mono_ns();
        put(s, CREATE_USED, i, a, b);
        put(s, DELETE_USED, i, c, d);
    }
}

static void measure_uncontended(semtest *s)
{
    sem_t sem;
    sem_init(&sem, 0, 1);
    for (size_t i = 0; i < s->n && !rtg_micro_stopping(); i++) {
        int64_t a = rtg_mono_ns();
        sem_wait(&sem);
        int64_t b = rtg_mono_ns();
        sem_post(&sem);
        int64_t c = rtg_mono_ns();
        put(s, ACQUIRE, i, a, b);
        put(s, RELEASE, i, b, c);
    }
    sem_destroy(&sem);
}

static void measure_contended(semtest *s)
{
    for (size_t i = 0; i < s->n && !rtg_micro_stopping(); i++) {
        s->i = i;
        s->t0 = rtg_mono_ns();
        sem_post(&s->contended);
        int64_t t3 = rtg_mono_ns();
        put(s, ACQUIRE_CONTENDED, i, s->t2, t3);
    }
}

static void *measurer(void *p)
{
    semtest *s = p;
    measure_new(s);
    measure_uncontended(s);
    measure_contended(s);
    atomic_store(&s->done, 1);
    for (int k = 0; k < s->nwaiters; k++)
        sem_post(&s->contended);
    return NULL;
}

static void *waiter(void *p)
{
    waiter_arg *w = p;
    semtest *s = w->s;
    for (;;) {
        rtg_sem_wait(&s->contended);
        int64_t t1 = rtg_mono_ns();
        if (atomic_load(&s->done) || rtg_micro_stopping())
            break;
        if (w->index != s->top)
            s->not_highest++;
        put(s, RELEASE_CONTENDED, s->i, s->t0, t1);
        s->t2 = rtg_mono_ns();
    }
    return NULL;
}

static void unblock_waiters(void *p)
{
    semtest *s = p;
    for (int k = 0; k <= s->nwaiters; k++)
        sem_post(&s->contended);
}

/* Spread over lo..TOP_PRIORITY; only the last waiter gets the top level. */
static int waiter_priority(int i, int n, int lo)
{
    if (n == 1)
        return TOP_PRIORITY;
    return lo + (int)(((int64_t)i * (TOP_PRIORITY - lo)) / (n - 1));
}

static int alloc_semtest(semtest *s, const rtg_opts *o)
{
    s->n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    s->nwaiters = (int)rtg_opt_int(o, "waiters");
    s->top = s->nwaiters - 1;
    s->fresh = calloc(s->n, sizeof *s->fresh);
    s->used = calloc(s->n, sizeof *s->used);
    if (!s->fresh || !s->used)
        return -1;
    memset(s->fresh, 0, s->n * sizeof *s->fresh);
    memset(s->used, 0, s->n * sizeof *s->used);
    for (int k = 0; k < NMETRICS; k++)
        if (rtg_samples_init(&s->m[k], s->n) != 0)
            return -1;
    return 0;
}

static void free_semtest(semtest *s)
{
    free(s->fresh);
    free(s->used);
    for (int k = 0; k < NMETRICS; k++)
        rtg_samples_free(&s->m[k]);
}

static void report(semtest *s, rtg_result *res, const rtg_bench *b)
{
    for (int k = 0; k < NMETRICS; k++)
        rtg_samples_report(res, metric_names[k], &s->m[k]);
    rtg_j_set(res->metrics, "not_highest", rtg_j_scalar_int(s->not_highest, "count"));
    rtg_json *pr = rtg_j_set(res->env, "waiter_priorities", rtg_j_obj());
    rtg_j_set(pr, "lowest", rtg_j_int(waiter_priority(0, s->nwaiters, b->priority + 1)));
    rtg_j_set(pr, "highest", rtg_j_int(waiter_priority(s->nwaiters - 1, s->nwaiters, b->priority + 1)));
    int distinct = 0;
    for (int i = 0; i < s->nwaiters; i++)
        distinct += i == 0 || waiter_priority(i, s->nwaiters, b->priority + 1) !=
                                  waiter_priority(i - 1, s->nwaiters, b->priority + 1);
    rtg_j_set(pr, "distinct", rtg_j_int(distinct));
    rtg_micro_method(res, "create/delete: the call alone; acquire/release: sem_wait / sem_post alone; "
                          "release_contended: post in the measuring thread to the highest waiter running; "
                          "acquire_contended: that waiter's blocking sem_wait to the measuring thread running");
}

static int sem_run(const rtg_opts *o, rtg_result *res)
{
    static semtest s;
    memset(&s, 0, sizeof s);
    waiter_arg *wa = calloc((size_t)rtg_opt_int(o, "waiters"), sizeof *wa);
    if (!wa || alloc_semtest(&s, o) != 0) {
        free(wa), free_semtest(&s);
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for the samples; ask for fewer --iterations.");
    }
    sem_init(&s.contended, 0, 0);
    rtg_scenario sc;
    int status = rtg_scn_init(&sc, o, res, true, s.nwaiters + 1, 0, unblock_waiters, &s);
    /* the waiters first, each checked blocked on the semaphore, then the measuring thread */
    for (int i = 0; status == RTG_EXIT_OK && i < s.nwaiters; i++) {
        wa[i] = (waiter_arg){&s, i};
        rtg_role w = {"waiter", waiter, &wa[i], waiter_priority(i, s.nwaiters, sc.b.priority + 1) - sc.b.priority,
                      RTG_SCN_CPU, RTG_AT_BLOCKED, RTG_PRIM_SEM, 0};
        if (rtg_scn_add(&sc, &w) != 0)
            break;
    }
    if (status == RTG_EXIT_OK) {
        rtg_role m = {"measuring", measurer, &s, 0, RTG_SCN_CPU, RTG_AT_STARTED, RTG_PRIM_SEM, 0};
        if (rtg_scn_add(&sc, &m) != 0)
            atomic_store(&s.done, 1);
        status = rtg_scn_join(&sc, res, "the run");
    }
    if (status == RTG_EXIT_OK) {
        report(&s, res, &sc.b);
        rtg_scn_mark_incomplete(&sc, res, (int64_t)(s.n - WARMUP), (int64_t)s.m[0].n);
    }
    if (rtg_scn_leaked(&sc))
        return status;
    sem_destroy(&s.contended);
    free(wa), free_semtest(&s);
    return status;
}

static const rtg_metric sem_metrics[] = {
    {"create_unused", RTG_METRIC_DISTRIBUTION, "ns", 0, "creating a semaphore never used"},
    {"delete_unused", RTG_METRIC_DISTRIBUTION, "ns", 0, "deleting a semaphore never used"},
    {"create_used", RTG_METRIC_DISTRIBUTION, "ns", 0, "creating a semaphore that is then used"},
    {"delete_used", RTG_METRIC_DISTRIBUTION, "ns", 0, "deleting a semaphore that was used"},
    {"acquire", RTG_METRIC_DISTRIBUTION, "ns", 0, "acquiring a free semaphore"},
    {"release", RTG_METRIC_DISTRIBUTION, "ns", 0, "releasing a semaphore nobody waits on"},
    {"acquire_contended", RTG_METRIC_DISTRIBUTION, "ns", 0, "the highest waiter's blocking sem_wait behind the others to the poster running again"},
    {"release_contended", RTG_METRIC_DISTRIBUTION, "ns", 0, "a sem_post with --waiters waiting to the highest waiter running"},
    {"not_highest", RTG_METRIC_SCALAR, "count", 0, "releases that woke a waiter other than the highest-priority one"},
    {0},
};

const rtg_test rtg_test_sem = {
    .name = "sem",
    .summary = "SEM-P-NEW/ARN/ARC: semaphore create/delete, acquire/release without and with 128 waiters",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = sem_opts,
    .metrics = sem_metrics,
    .flags = RTG_TEST_RT,
    .run = sem_run,
};

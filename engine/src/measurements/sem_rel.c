/* sem-rel: SEM-B-REL, a release wakes the highest-priority waiter whatever the
 * arrival order. On one CPU under SCHED_FIFO, --waiters threads of distinct
 * priorities block on an empty semaphore in ascending priority order (the
 * lowest arrives first, so arrival order and priority order disagree at every
 * step; each is seen blocked in /proc before the next is made). The controller,
 * above them all, then posts one unit at a time and waits until a waiter has it,
 * so exactly one waiter is released per post. Pass: the units went out in
 * strictly descending priority. --primitive fifo-queue is the deliberately wrong
 * primitive (a semaphore that queues its waiters in arrival order, made here for
 * the purpose): its grants follow arrival and the verdict must fail. */
#include <errno.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>

#include "portable.h"
#include "behaviour.h"
#include "clock.h"
#include "test.h"

#define MAX_WAITERS 32
#define WAIT_BOUND_NS 5000000000LL     /* no waiter waits longer than this */

static const rtg_opt sem_rel_opts[] = {
    {"primitive", RTG_OPT_ENUM, "posix", 0, 0, "posix|fifo-queue",
     "posix: sem_t (the subject); fifo-queue: waiters served in arrival order (the wrong primitive)"},
    {"waiters", RTG_OPT_INT, "5", 2, MAX_WAITERS, NULL, "waiting threads, each at its own priority"},
    {"priority", RTG_OPT_INT, "10", 1, 60, NULL,
     "priority of the first (lowest) waiter; the others run at +1, +2, ..., the controller above them"},
    {"policy", RTG_OPT_ENUM, "fifo", 0, 0, "fifo", "the waiters run under SCHED_FIFO"},
    {0},
};

/* A semaphore whose waiters are served strictly in arrival order. */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t cv[MAX_WAITERS];
    bool granted[MAX_WAITERS];
    int head, tail, value;
} fifoq;

typedef struct {
    bool fifo;
    sem_t s;
    fifoq q;
} rsem;

static void rs_init(rsem *x, bool fifo)
{
    memset(x, 0, sizeof *x);
    x->fifo = fifo;
    if (!fifo) {
        sem_init(&x->s, 0, 0);
        return;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&x->q.m, NULL);
    for (int i = 0; i < MAX_WAITERS; i++)
        pthread_cond_init(&x->q.cv[i], &ca);
    pthread_condattr_destroy(&ca);
}

static void rs_destroy(rsem *x)
{
    if (!x->fifo) {
        sem_destroy(&x->s);
        return;
    }
    for (int i = 0; i < MAX_WAITERS; i++)
        pthread_cond_destroy(&x->q.cv[i]);
    pthread_mutex_destroy(&x->q.m);
}

/* 0, or ETIMEDOUT at the deadline */
static int rs_wait_until(rsem *x, int64_t deadline_ns)
{
    struct timespec dl = rtg_ns_timespec(deadline_ns);
    if (!x->fifo) {
        while (rtg_sem_clockwait_mono(&x->s, &dl) != 0)
            if (errno != EINTR)
                return errno;
        return 0;
    }
    fifoq *q = &x->q;
    int rc = 0;
    pthread_mutex_lock(&q->m);
    if (q->value > 0 && q->head == q->tail) {
        q->value--;
    } else {
        int me = q->tail++;
        while (!q->granted[me] && rc == 0)
            rc = pthread_cond_timedwait(&q->cv[me], &q->m, &dl);
        if (q->granted[me])
            rc = 0;
    }
    pthread_mutex_unlock(&q->m);
    return rc;
}

static void rs_post(rsem *x)
{
    if (!x->fifo) {
        sem_post(&x->s);
        return;
    }
    fifoq *q = &x->q;
    pthread_mutex_lock(&q->m);
    if (q->head < q->tail) {
        q->granted[q->head] = true;      /* the first to arrive, whatever its priority */
        pthread_cond_signal(&q->cv[q->head]);
        q->head++;
    } else {
        q->value++;
    }
    pthread_mutex_unlock(&q->m);
}

typedef struct {
    rsem *sem;
    int prio;
    atomic_int tid;
    sem_t *started, *granted;     /* handshakes with the controller */
    atomic_int *grant_counter;
    int grant_rank;               /* 1 = first to get a unit; 0 = never */
    int rc;
} waiter;

static void *waiter_main(void *p)
{
    waiter *w = p;
    atomic_store(&w->tid, rtg_behav_tid());
    sem_post(w->started);
    w->rc = rs_wait_until(w->sem, rtg_mono_ns() + WAIT_BOUND_NS);
    if (w->rc == 0) {
        w->grant_rank = atomic_fetch_add(w->grant_counter, 1) + 1;
        sem_post(w->granted);
    }
    return NULL;
}

static int sem_rel_run(const rtg_opts *o, rtg_result *res)
{
    bool fifo = strcmp(rtg_opt_str(o, "primitive"), "fifo-queue") == 0;
    int k = (int)rtg_opt_int(o, "waiters");
    int base = (int)rtg_opt_int(o, "priority");
    int cpu = rtg_behav_cpu(o);
    char err[512];
    if (cpu < 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    if (base + k > 99)
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--priority %d with %d waiters needs priorities up to %d, above 99; lower --priority or --waiters.",
                        base, k, base + k);
    if (rtg_behav_self(cpu, RTG_POL_FIFO, base + k, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    static rsem x;
    static waiter w[MAX_WAITERS];
    static atomic_int counter;
    static sem_t started_sem, granted_sem;
    pthread_t th[MAX_WAITERS];
    rs_init(&x, fifo);
    sem_init(&started_sem, 0, 0);
    sem_init(&granted_sem, 0, 0);
    memset(w, 0, sizeof w);
    atomic_store(&counter, 0);
    int started = 0, status = RTG_EXIT_OK;
    for (int i = 0; i < k; i++) {   /* arrival: lowest priority first */
        w[i] = (waiter){.sem = &x, .prio = base + i, .grant_counter = &counter, .started = &started_sem,
                        .granted = &granted_sem};
        if (rtg_behav_start(&th[i], waiter_main, &w[i], cpu, RTG_POL_FIFO, base + i, err, sizeof err) != 0) {
            status = rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
            break;
        }
        started++;
        /* the waiter is below us: block until it says it started, then look until it
         * sleeps in the wait (the looks block too, so it can get there) */
        bool up = rtg_sem_wait_until(&started_sem, rtg_mono_ns() + 1000000000LL) == 0;
        if (!up || !rtg_behav_wait_blocked_at(atomic_load(&w[i].tid), base + i, fifo ? RTG_PRIM_CONDVAR : RTG_PRIM_SEM,
                                           1000000000LL)) {
            status = rtg_fail(res, RTG_EXIT_FAIL, "waiter %d did not block on the empty semaphore within 1 s.", i);
            break;
        }
    }
    int posted = 0;
    bool lost = false;
    for (int r = 0; status == RTG_EXIT_OK && r < k; r++) {
        rs_post(&x);
        posted++;
        /* blocking here lets the released waiter run; it says when it has the unit */
        if (rtg_sem_wait_until(&granted_sem, rtg_mono_ns() + 1000000000LL) != 0) {
            lost = true;
            break;
        }
    }
    /* release anyone left (a failed setup), so every join ends */
    for (int r = posted; r < started; r++)
        rs_post(&x);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    rs_destroy(&x);
    sem_destroy(&started_sem);
    sem_destroy(&granted_sem);
    if (status != RTG_EXIT_OK)
        return status;

    /* order of grants: priority of the waiter that got the r-th unit */
    int order[MAX_WAITERS];
    for (int r = 0; r < k; r++)
        order[r] = -1;
    for (int i = 0; i < k; i++)
        if (w[i].grant_rank >= 1 && w[i].grant_rank <= k)
            order[w[i].grant_rank - 1] = w[i].prio;
    bool descending = !lost;
    for (int r = 0; r < k; r++)
        descending = descending && order[r] == base + k - 1 - r;
    char text[256] = "";
    size_t len = 0;
    for (int r = 0; r < k && len < sizeof text - 8; r++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%d", r ? "," : "", order[r]);
    rtg_verdict(res, "highest_first", descending,
                "%s: waiters arrived in priorities %d..%d ascending, units went to priorities %s%s",
                fifo ? "fifo-queue" : "POSIX semaphore", base, base + k - 1, text,
                lost ? " (a post woke nobody within 1 s)" : "");
    rtg_json *g = rtg_j_set(res->extra, "grant_order", rtg_j_arr());
    for (int r = 0; r < k; r++)
        rtg_j_push(g, rtg_j_int(order[r]));
    rtg_j_set(res->metrics, "waiters", rtg_j_scalar_int(k, "count"));
    rtg_behav_env_cpu(res, cpu);
    return RTG_EXIT_OK;
}

static const rtg_metric sem_rel_metrics[] = {
    {"waiters", RTG_METRIC_SCALAR, "count", 0, "waiters that were queued on the semaphore"},
    {0},
};

const rtg_test rtg_test_sem_rel = {
    .name = "sem-rel",
    .summary = "SEM-B-REL: a semaphore release wakes the highest-priority waiter, whatever the arrival order",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = sem_rel_opts,
    .metrics = sem_rel_metrics,
    .flags = RTG_TEST_RT,
    .run = sem_rel_run,
};

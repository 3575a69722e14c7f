/* thread (THR-P-NEW): thread creation and deletion time in three scenarios. A
 * creator thread at --priority on one CPU times pthread_create (attributes
 * prepared beforehand: explicit policy and priority, the same CPU, --stack-kib
 * of stack) and then the deletion of the child:
 *  never-run         child one priority below the creator: it cannot run before
 *                    the creator blocks. create = pthread_create alone; delete =
 *                    pthread_cancel + pthread_join, during which the child runs
 *                    for the first time, acts on the cancellation at its first
 *                    cancellation point and exits.
 *  run-and-terminate child one priority above: it preempts the creator at once,
 *                    so pthread_create returns only after the child ran to its
 *                    end. create = from the call until the child starts running
 *                    (the child's first action is to read the clock), as the
 *                    evaluation defines it; the whole call, child's life
 *                    included, is call_run_terminate. delete = pthread_join of
 *                    the finished child (reaps it).
 *  run-and-block     child one priority above, which runs at once and, as the
 *                    evaluation's scenario 3 has it, lowers its own priority to
 *                    one below the creator: it does not end, it stays READY
 *                    behind the creator. create = until the child starts
 *                    running; call_run_block = the whole call (until the child
 *                    steps down); delete = pthread_cancel + pthread_join of that
 *                    ready thread (it runs once the creator waits, meets its
 *                    cancellation point and exits). A child whose step down is
 *                    refused waits on a semaphore instead (blocked, not ready).
 * Every child's wait and every join are bounded by the watchdog's deadline. A
 * never-run child seen running before its deletion is counted in ran_early. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "portable.h"
#include "clock.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt thread_opts[] = {
    {"priority", RTG_OPT_INT, "80", 2, 97, NULL,
     "priority of the creator; children run one below (never-run) or one above"},
    {"iterations", RTG_OPT_INT, "2000", 10, 100000, NULL, "threads created and deleted per scenario"},
    {"scenario", RTG_OPT_ENUM, "all", 0, 0, "all|never-run|run-terminate|run-block", "which scenarios"},
    {"stack-kib", RTG_OPT_INT, "64", 16, 8192, NULL, "stack of each child in KiB (locked by mlockall)"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

#define WARMUP 10

enum { NEVER_RUN, RUN_TERMINATE, RUN_BLOCK, NSCEN };
static const char *const scen_names[NSCEN] = {"never-run", "run-terminate", "run-block"};
static const char *const create_names[NSCEN] = {"create_never_run", "create_run_terminate", "create_run_block"};
static const char *const delete_names[NSCEN] = {"delete_never_run", "delete_run_terminate", "delete_run_block"};
static const char *const call_names[NSCEN] = {NULL, "call_run_terminate", "call_run_block"};

typedef struct {
    const rtg_bench *b;
    size_t n;
    bool want[NSCEN];
    pthread_attr_t below, above;
    sem_t never;              /* posted by no one */
    struct timespec deadline;
    _Atomic int ran;
    int64_t started_ns;       /* the child's first clock reading */
    int below_prio;           /* the creator's priority - 1: where a run-and-block child steps down to */
    bool realtime;            /* the children run at a real-time policy */
    int64_t ran_early;
    _Atomic int64_t stepped_down; /* run-and-block children that lowered themselves (stayed ready) */
    bool failed;
    rtg_samples create[NSCEN], del[NSCEN], call[NSCEN];
} ttest;

static void *child_terminate(void *p)
{
    ttest *t = p;
    t->started_ns = rtg_mono_ns();
    atomic_store_explicit(&t->ran, 1, memory_order_relaxed);
    return NULL;
}

static void *child_block(void *p)
{
    ttest *t = p;
    t->started_ns = rtg_mono_ns();
    atomic_store_explicit(&t->ran, 1, memory_order_relaxed);
    if (t->realtime && pthread_setschedprio(pthread_self(), t->below_prio) == 0) {
        atomic_fetch_add(&t->stepped_down, 1);
        /* ready behind the creator until it cancels us; bounded by the watchdog's deadline */
        int64_t end = (int64_t)t->deadline.tv_sec * 1000000000LL + t->deadline.tv_nsec;
        while (rtg_mono_ns() < end)
            pthread_testcancel();
        return NULL;
    }
    while (rtg_sem_clockwait_mono(&t->never, &t->deadline) == -1 && errno == EINTR)
        ;
    return NULL;
}

static bool one_cycle(ttest *t, int sc, size_t i)
{
    pthread_t c;
    pthread_attr_t *attr = sc == NEVER_RUN ? &t->below : &t->above;
    void *(*fn)(void *) = sc == RUN_TERMINATE ? child_terminate : child_block;
    atomic_store(&t->ran, 0);
    int64_t a = rtg_mono_ns();
    int rc = pthread_create(&c, attr, fn, t);
    int64_t b = rtg_mono_ns();
    if (rc != 0)
        return false;
    if (sc == NEVER_RUN && atomic_load(&t->ran))
        t->ran_early++;
    int64_t d0 = rtg_mono_ns();
    if (sc != RUN_TERMINATE)
        pthread_cancel(c);
#ifdef RTG_POSIX_ONLY
    rc = pthread_join(c, NULL);   /* bounded all the same: the child's own wait ends at t->deadline */
#else
    rc = pthread_clockjoin_np(c, NULL, CLOCK_MONOTONIC, &t->deadline);
#endif
    int64_t d1 = rtg_mono_ns();
    if (rc != 0)
        return false;
    if (sc != NEVER_RUN && !atomic_load(&t->ran))
        return false;   /* a child above the creator on its CPU must have run */
    if (i >= WARMUP) {
        /* run scenarios: creation ends when the child starts running (read
         * after the join, which orders the child's write before this read) */
        rtg_samples_put_span(&t->create[sc], a, sc == NEVER_RUN ? b : t->started_ns);
        rtg_samples_put_span(&t->del[sc], d0, d1);
        if (sc != NEVER_RUN)
            rtg_samples_put_span(&t->call[sc], a, b);
    }
    return true;
}

static void *creator(void *p)
{
    ttest *t = p;
    for (int sc = 0; sc < NSCEN; sc++)
        for (size_t i = 0; t->want[sc] && i < t->n && !rtg_micro_stopping(); i++)
            if (!one_cycle(t, sc, i)) {
                t->failed = true;
                return NULL;
            }
    return NULL;
}

static void child_attr(pthread_attr_t *a, const rtg_bench *b, int prio, size_t stack_kib)
{
    pthread_attr_init(a);
    pthread_attr_setstacksize(a, stack_kib * 1024);
    pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
    int pol = b->policy == RTG_POL_RR ? SCHED_RR : SCHED_FIFO;
    struct sched_param prm = {.sched_priority = prio};
    pthread_attr_setschedpolicy(a, pol);
    pthread_attr_setschedparam(a, &prm);
#ifndef RTG_POSIX_ONLY   /* the POSIX-only build runs this test only with one CPU online */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(b->cpu, &set);
    pthread_attr_setaffinity_np(a, sizeof set, &set);
#endif
}

static int init_ttest(ttest *t, const rtg_opts *o, const rtg_bench *b)
{
    t->b = b;
    t->n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    const char *which = rtg_opt_str(o, "scenario");
    for (int sc = 0; sc < NSCEN; sc++)
        t->want[sc] = strcmp(which, "all") == 0 || strcmp(which, scen_names[sc]) == 0;
    size_t stack = (size_t)rtg_opt_int(o, "stack-kib");
    child_attr(&t->below, b, b->priority - 1, stack);
    t->below_prio = b->priority - 1;
    t->realtime = true;       /* the children's attributes are always SCHED_FIFO or SCHED_RR */
    child_attr(&t->above, b, b->priority + 1, stack);
    sem_init(&t->never, 0, 0);
    t->deadline = rtg_ns_timespec(b->deadline_ns);
    for (int sc = 0; sc < NSCEN; sc++)
        if (rtg_samples_init(&t->create[sc], t->n) != 0 || rtg_samples_init(&t->del[sc], t->n) != 0 ||
            rtg_samples_init(&t->call[sc], t->n) != 0)
            return -1;
    return 0;
}

static void free_ttest(ttest *t)
{
    pthread_attr_destroy(&t->below);
    pthread_attr_destroy(&t->above);
    sem_destroy(&t->never);
    for (int sc = 0; sc < NSCEN; sc++) {
        rtg_samples_free(&t->create[sc]);
        rtg_samples_free(&t->del[sc]);
        rtg_samples_free(&t->call[sc]);
    }
}

static int thread_run(const rtg_opts *o, rtg_result *res)
{
    static ttest t;
    memset(&t, 0, sizeof t);
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, true, 1, 0, NULL, NULL);
    if (status != RTG_EXIT_OK)
        return status;
    if (init_ttest(&t, o, &s.b) != 0) {
        free_ttest(&t);
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for the samples; ask for fewer --iterations.");
    }
    rtg_role creator_role = {"creator", creator, &t, 0, RTG_SCN_CPU, RTG_AT_STARTED, RTG_PRIM_SEM, 0};
    rtg_scn_add(&s, &creator_role);
    status = rtg_scn_join(&s, res, "the creations and deletions");
    if (status == RTG_EXIT_OK && t.failed && !rtg_micro_stopping())
        status = rtg_fail(res, RTG_EXIT_FAIL,
                          "a thread could not be created or deleted within --timeout-s %.0f s (thread limit?); "
                          "raise the timeout or ask for fewer --iterations.", rtg_opt_num(o, "timeout-s"));
    if (status == RTG_EXIT_OK) {
        for (int sc = 0; sc < NSCEN; sc++)
            if (t.want[sc]) {
                rtg_samples_report(res, create_names[sc], &t.create[sc]);
                rtg_samples_report(res, delete_names[sc], &t.del[sc]);
                if (call_names[sc])
                    rtg_samples_report(res, call_names[sc], &t.call[sc]);
            }
        int64_t measured = -1;   /* the scenario least far on */
        for (int sc = 0; sc < NSCEN; sc++)
            if (t.want[sc] && (measured < 0 || (int64_t)t.create[sc].n < measured))
                measured = (int64_t)t.create[sc].n;
        rtg_scn_mark_incomplete(&s, res, (int64_t)(t.n - WARMUP), measured < 0 ? 0 : measured);
        if (t.want[NEVER_RUN])
            rtg_j_set(res->metrics, "ran_early", rtg_j_scalar_int(t.ran_early, "count"));
        if (t.want[RUN_BLOCK])
            rtg_j_set(res->metrics, "stepped_down", rtg_j_scalar_int(atomic_load(&t.stepped_down), "count"));
        rtg_micro_method(res, "create: never-run, pthread_create alone; run scenarios, from the call until the "
                              "child (above the creator) starts running; call_run_*: the whole pthread_create "
                              "call, the child's run until it ends or steps down included; delete: pthread_cancel + "
                              "pthread_join (run-and-terminate: pthread_join alone; run-and-block: of a child that "
                              "lowered itself below the creator and is ready, as published)");
    }
    if (rtg_scn_leaked(&s))
        return status;
    free_ttest(&t);
    return status;
}

static const rtg_metric thread_metrics[] = {
    {"create_never_run", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "creating a thread that never runs before it is deleted (when --scenario includes it)"},
    {"delete_never_run", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "deleting a thread that never ran (when --scenario includes it)"},
    {"create_run_terminate", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "creating a thread that runs and terminates: from the call until the child starts running (when --scenario includes it)"},
    {"delete_run_terminate", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "deleting (joining) a thread that ran and terminated (when --scenario includes it)"},
    {"create_run_block", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "creating a thread that runs and steps down: from the call until the child starts running (when --scenario includes it)"},
    {"delete_run_block", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "deleting a thread that ran and stepped down below the creator, ready (when --scenario includes it)"},
    {"call_run_terminate", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the whole pthread_create call of a child that runs and terminates, its run included (when --scenario includes it)"},
    {"call_run_block", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the whole pthread_create call of a child that runs and steps down below the creator, its run until then included (when --scenario includes it)"},
    {"ran_early", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "never-run children that ran before deletion (with the never-run scenario)"},
    {"stepped_down", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "run-and-block children that lowered their priority below the creator and were deleted ready (with the run-and-block scenario)"},
    {0},
};

const rtg_test rtg_test_thread = {
    .name = "thread",
    .summary = "THR-P-NEW: thread creation and deletion time, never-run / run-and-terminate / run-and-block",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = thread_opts,
    .metrics = thread_metrics,
    .flags = RTG_TEST_RT,
    .run = thread_run,
};

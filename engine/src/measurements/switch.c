/* switch (THR-P-SLS): task switch between equal-priority threads that yield.
 * --threads N threads at one SCHED_FIFO priority, all pinned to one CPU, form a
 * ring: each one, every time it resumes, takes a timestamp, appends it (with its
 * own index) to a preallocated array and calls sched_yield(), which puts it at
 * the tail of its priority's run queue and resumes the next thread. One switch
 * is the difference between the timestamps of two consecutive resumptions by
 * different threads: yield system call entry, scheduler, context switch
 * (registers, stack; same address space) and return to user space, plus one
 * timestamp and one atomic increment. The first 2N resumptions are not counted
 * (threads still arriving, caches cold); a resumption by the same thread twice in
 * a row (nothing else runnable) is counted in self_resumptions, not as a switch. */
#include <errno.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt switch_opts[] = {
    {"threads", RTG_OPT_INT, "2", 2, 1000, NULL, "threads in the ring, all on one CPU"},
    {"iterations", RTG_OPT_INT, "20000", 10, 10000000, NULL, "switches measured"},
    {"stack-kib", RTG_OPT_INT, "64", 16, 8192, NULL, "stack of each thread in KiB (all stacks are locked)"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

typedef struct {
    int nthreads;
    size_t total;             /* resumptions recorded: warm-up + iterations + 1 */
    int64_t *ts;              /* resumption timestamps */
    int32_t *who;             /* thread that resumed */
    _Atomic size_t k;
    _Atomic int released;     /* members past the start gate and runnable */
    sem_t go;
} ring;

typedef struct {
    ring *r;
    int id;
} member;

static void *ring_member(void *p)
{
    member *m = p;
    ring *r = m->r;
    rtg_sem_wait(&r->go);   /* the harness starts the next member once this one blocks here */
    /* The ring starts only when every member is runnable: the posts that release
     * them come from another CPU and can be delayed (a host stall), and a member
     * alone on the CPU would only resume itself. Yielding here keeps the early ones
     * out of the way without recording anything. */
    atomic_fetch_add(&r->released, 1);
    while (atomic_load(&r->released) < r->nthreads && !rtg_micro_stopping())
        sched_yield();
    while (!rtg_micro_stopping()) {
        int64_t t = rtg_mono_ns();
        size_t k = atomic_fetch_add_explicit(&r->k, 1, memory_order_relaxed);
        if (k >= r->total)
            break;
        r->ts[k] = t;
        r->who[k] = m->id;
        sched_yield();
    }
    return NULL;
}

static void unblock_ring(void *p)
{
    ring *r = p;
    for (int i = 0; i < r->nthreads; i++)
        sem_post(&r->go);
}

static void report_switches(const ring *r, size_t warm, rtg_result *res)
{
    rtg_samples s;
    size_t recorded = atomic_load(&r->k) < r->total ? atomic_load(&r->k) : r->total;
    if (rtg_samples_init(&s, recorded) != 0)
        return;
    int64_t self = 0;
    for (size_t k = warm + 1; k < recorded; k++) {
        if (r->who[k] == r->who[k - 1])
            self++;
        else
            rtg_samples_put_span(&s, r->ts[k - 1], r->ts[k]);
    }
    rtg_samples_report(res, "switch", &s);
    rtg_j_set(res->metrics, "self_resumptions", rtg_j_scalar_int(self, "count"));
    rtg_samples_free(&s);
}

static int switch_run(const rtg_opts *o, rtg_result *res)
{
    int n = (int)rtg_opt_int(o, "threads");
    size_t warm = 2 * (size_t)n;
    static ring r;
    memset(&r, 0, sizeof r);
    r.nthreads = n;
    r.total = warm + (size_t)rtg_opt_int(o, "iterations") + 1;
    r.ts = calloc(r.total, sizeof *r.ts);
    r.who = calloc(r.total, sizeof *r.who);
    member *ms = calloc((size_t)n, sizeof *ms);
    if (!r.ts || !r.who || !ms) {
        free(r.ts), free(r.who), free(ms);
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu samples; ask for fewer --iterations.", r.total);
    }
    memset(r.ts, 0, r.total * sizeof *r.ts);
    memset(r.who, 0, r.total * sizeof *r.who);
    sem_init(&r.go, 0, 0);
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, false, n, 0, unblock_ring, &r);
    for (int i = 0; status == RTG_EXIT_OK && i < n; i++) {
        ms[i] = (member){&r, i};
        rtg_role role = {"ring member", ring_member, &ms[i], 0, RTG_SCN_CPU, RTG_AT_BLOCKED, RTG_PRIM_SEM,
                         (size_t)rtg_opt_int(o, "stack-kib")};
        if (rtg_scn_add(&s, &role) != 0)
            break;
    }
    if (status == RTG_EXIT_OK) {
        if (!s.start_failed)
            for (int i = 0; i < n; i++)
                sem_post(&r.go);
        status = rtg_scn_join(&s, res, "the ring");
    }
    if (status == RTG_EXIT_OK) {
        report_switches(&r, warm, res);
        size_t rec = atomic_load(&r.k) < r.total ? atomic_load(&r.k) : r.total;
        rtg_scn_mark_incomplete(&s, res, (int64_t)(r.total - warm - 1), rec > warm + 1 ? (int64_t)(rec - warm - 1) : 0);
        rtg_micro_method(res, "switch: from one thread's resumption (timestamp after sched_yield returned) to the "
                              "next thread's resumption, all threads equal priority on one CPU");
    }
    if (rtg_scn_leaked(&s))
        return status;   /* threads may still touch the ring: leave it to the exit */
    sem_destroy(&r.go);
    free(r.ts), free(r.who), free(ms);
    return status;
}

static const rtg_metric switch_metrics[] = {
    {"switch", RTG_METRIC_DISTRIBUTION, "ns", 0, "switch time: consecutive resumptions of different threads in the yield ring"},
    {"self_resumptions", RTG_METRIC_SCALAR, "count", 0, "yields that resumed the same thread (not counted as switches)"},
    {0},
};

const rtg_test rtg_test_switch = {
    .name = "switch",
    .summary = "THR-P-SLS: switch time between equal-priority FIFO threads that yield, N threads on one CPU",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = switch_opts,
    .metrics = switch_metrics,
    .flags = RTG_TEST_RT,
    .run = switch_run,
};

/* thr-new: THR-B-NEW, thread creation behaviour under SCHED_FIFO on one CPU.
 * The creator (priority P) makes a child and watches when it first runs, using a
 * global event sequence (exact order, no timing threshold):
 *   lower  (P-1): the child has not run after creation nor after --busy-ms of the
 *                 creator's work, and does run once the creator blocks (sleeps);
 *   equal  (P):   the child goes to the end of the ready queue: not run after
 *                 creation nor after the busy work, run by the time sched_yield returns;
 *   higher (P+1): the child has already run when pthread_create returns.
 * --placement split puts the children on another CPU: the deliberately wrong
 * setup (the rule is about one CPU), under which the lower and equal verdicts
 * must fail; --policy other drops the priorities altogether. Metrics: how long
 * each child took to first run after the event that should let it run (the
 * higher child: from pthread_create; equal: from sched_yield; lower: from the
 * moment the creator blocks, in a wait for the child's own signal that it ran,
 * bounded at 1 s: no fixed sleep). */
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <string.h>

#include "behaviour.h"
#include "clock.h"
#include "test.h"

static const rtg_opt thr_new_opts[] = {
    {"priority", RTG_OPT_INT, "20", 2, 98, NULL,
     "priority of the creator; the children run at P-1, P and P+1"},
    {"policy", RTG_OPT_ENUM, "fifo", 0, 0, "fifo|other",
     "fifo (the rule under test) or other (priorities ignored: no order is promised)"},
    {"placement", RTG_OPT_ENUM, "same", 0, 0, "same|split",
     "same: every thread on one CPU; split: children on another CPU (the wrong setup)"},
    {"busy-ms", RTG_OPT_INT, "20", 1, 500, NULL,
     "how long the creator keeps working after creating a child before it looks again"},
    {0},
};

typedef struct {
    atomic_llong ran_seq;     /* 0 until the child runs */
    int64_t ran_ns;           /* when it first ran (written before ran_seq) */
    sem_t ran;                /* posted once it ran */
} child;

#define RAN_BOUND_NS 1000000000LL

static void *child_main(void *p)
{
    child *c = p;
    c->ran_ns = rtg_mono_ns();
    atomic_store(&c->ran_seq, rtg_behav_seq());
    sem_post(&c->ran);
    return NULL;
}

static void busy_ns(int64_t ns)
{
    int64_t end = rtg_mono_ns() + ns;
    while (rtg_mono_ns() < end)
        ;
}

typedef struct {
    int cpu_creator, cpu_child, prio;
    rtg_policy pol;
    int64_t busy;
    int passed;               /* scenario verdicts that passed */
    char err[512];
} setup;

static int spawn(setup *s, pthread_t *th, child *c, int prio)
{
    atomic_store(&c->ran_seq, 0);
    sem_init(&c->ran, 0, 0);
    return rtg_behav_start(th, child_main, c, s->cpu_child, s->pol, prio, s->err, sizeof s->err);
}

/* lower: not before the creator blocks; then while it is blocked */
static int scenario_lower(setup *s, rtg_result *res)
{
    child c;
    pthread_t th;
    if (spawn(s, &th, &c, s->prio - 1) != 0)
        return -1;
    bool at_create = atomic_load(&c.ran_seq) != 0;
    busy_ns(s->busy);
    bool after_busy = atomic_load(&c.ran_seq) != 0;
    int64_t s_block = rtg_behav_seq();
    int64_t t_block = rtg_mono_ns();
    rtg_sem_wait_until(&c.ran, t_block + RAN_BOUND_NS);   /* blocks: the child may run */
    int64_t s_wake = rtg_behav_seq();
    int64_t ran = atomic_load(&c.ran_seq);
    pthread_join(th, NULL);
    sem_destroy(&c.ran);
    bool waits = !at_create && !after_busy && (ran == 0 || ran > s_block);
    rtg_verdict(res, "lower_waits", waits,
                waits ? "the lower-priority child did not run while the creator ran (%.0f ms of work)"
                      : "the lower-priority child ran before the creator blocked (%.0f ms of work)",
                (double)s->busy / 1e6);
    s->passed += waits;
    bool runs = ran > s_block && ran < s_wake;
    rtg_verdict(res, "lower_runs_when_blocked", runs, "the lower-priority child %s",
                runs ? "ran while the creator was blocked"
                : ran != 0 && ran < s_block ? "had already run before the creator blocked"
                                            : "did not run while the creator was blocked (1 s)");
    s->passed += runs;
    if (runs)
        rtg_j_set(res->metrics, "lower_block_to_run", rtg_j_scalar_int(c.ran_ns - t_block, "ns"));
    return 0;
}

/* equal: to the end of the ready queue; runs when the creator yields */
static int scenario_equal(setup *s, rtg_result *res)
{
    child c;
    pthread_t th;
    if (spawn(s, &th, &c, s->prio) != 0)
        return -1;
    bool at_create = atomic_load(&c.ran_seq) != 0;
    busy_ns(s->busy);
    bool after_busy = atomic_load(&c.ran_seq) != 0;
    int64_t s_yield = rtg_behav_seq();
    int64_t t_yield = rtg_mono_ns();
    sched_yield();
    int64_t s_back = rtg_behav_seq();
    int64_t ran = atomic_load(&c.ran_seq);
    pthread_join(th, NULL);
    sem_destroy(&c.ran);
    bool pass = !at_create && !after_busy && ran > s_yield && ran < s_back;
    rtg_verdict(res, "equal_after_yield", pass, "the equal-priority child %s",
                at_create || after_busy ? "ran before the creator yielded"
                : pass ? "waited at the end of the ready queue and ran when the creator yielded"
                       : "had not run when the creator's sched_yield returned");
    s->passed += pass;
    if (pass)
        rtg_j_set(res->metrics, "equal_yield_to_run", rtg_j_scalar_int(c.ran_ns - t_yield, "ns"));
    return 0;
}

/* higher: runs at once, before pthread_create returns */
static int scenario_higher(setup *s, rtg_result *res)
{
    child c;
    pthread_t th;
    int64_t s_before = rtg_behav_seq();
    int64_t t_before = rtg_mono_ns();
    if (spawn(s, &th, &c, s->prio + 1) != 0)
        return -1;
    int64_t s_after = rtg_behav_seq();
    int64_t ran = atomic_load(&c.ran_seq);
    pthread_join(th, NULL);
    sem_destroy(&c.ran);
    bool pass = ran > s_before && ran < s_after;
    rtg_verdict(res, "higher_at_once", pass,
                pass ? "the higher-priority child ran before pthread_create returned"
                     : "the higher-priority child had not run when pthread_create returned");
    s->passed += pass;
    if (ran != 0)
        rtg_j_set(res->metrics, "higher_create_to_run", rtg_j_scalar_int(c.ran_ns - t_before, "ns"));
    return 0;
}

static void overall(const setup *s, rtg_result *res)
{
    rtg_verdict(res, "thr_new", s->passed == 4, "%d of 4 creation scenarios behaved as THR-B-NEW requires",
                s->passed);
}

static int thr_new_run(const rtg_opts *o, rtg_result *res)
{
    setup s = {0};
    s.cpu_creator = rtg_behav_cpu(o);
    if (s.cpu_creator < 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    s.cpu_child = s.cpu_creator;
    if (strcmp(rtg_opt_str(o, "placement"), "split") == 0) {
        s.cpu_child = rtg_behav_other_cpu(s.cpu_creator);
        if (s.cpu_child < 0)
            return rtg_fail(res, RTG_EXIT_USAGE,
                            "--placement split needs a second CPU and this process may use only one; use --placement same.");
    }
    rtg_policy_parse(rtg_opt_str(o, "policy"), &s.pol);
    s.prio = (int)rtg_opt_int(o, "priority");
    s.busy = rtg_opt_int(o, "busy-ms") * 1000000;
    if (rtg_behav_self(s.cpu_creator, s.pol, s.prio, s.err, sizeof s.err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", s.err);
    if (scenario_lower(&s, res) != 0 || scenario_equal(&s, res) != 0 || scenario_higher(&s, res) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", s.err);
    overall(&s, res);
    rtg_json *c = rtg_j_set(res->env, "cpus", rtg_j_arr());
    rtg_j_push(c, rtg_j_int(s.cpu_creator));
    if (s.cpu_child != s.cpu_creator)
        rtg_j_push(c, rtg_j_int(s.cpu_child));
    rtg_json *sc = rtg_j_set(res->extra, "scenario", rtg_j_obj());
    rtg_j_set(sc, "creator_cpu", rtg_j_int(s.cpu_creator));
    rtg_j_set(sc, "child_cpu", rtg_j_int(s.cpu_child));
    rtg_j_set(sc, "creator_priority", rtg_j_int(s.prio));
    rtg_j_set(sc, "policy", rtg_j_str(rtg_policy_name(s.pol)));
    return RTG_EXIT_OK;
}

static const rtg_metric thr_new_metrics[] = {
    {"lower_block_to_run", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "from the creator blocking to the lower-priority child's first run (when it ran)"},
    {"equal_yield_to_run", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "from the creator yielding to the equal-priority child's first run (when it ran)"},
    {"higher_create_to_run", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "from just before creation to the higher-priority child's first run (when it ran)"},
    {0},
};

const rtg_test rtg_test_thr_new = {
    .name = "thr-new",
    .summary = "THR-B-NEW: when a new thread of lower, equal or higher priority first runs (one CPU)",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = thr_new_opts,
    .metrics = thr_new_metrics,
    .flags = RTG_TEST_RT,
    .run = thr_new_run,
};

/* preempt: a higher-priority thread made ready preempts a running lower one.
 * Two threads on one CPU: L at --priority, H at --priority + 1.
 *  --event sem (default): H blocks on a semaphore; L, running, takes t0 and posts
 *    it; H resumes at once (it outranks L) and takes t1. preempt = t1 - t0: the
 *    post (futex wake), the scheduler's decision that H preempts L, the context
 *    switch and H's return from sem_wait. H then blocks again and L carries on.
 *  --event timer: H sleeps to an absolute deadline d (clock_nanosleep); L wakes
 *    --lead-us before d and busy-waits, so it is running when the timer fires.
 *    preempt = t1 - d: timer interrupt, wake-up, preemption of L, switch. A cycle
 *    in which L was not yet running at d (its own wake-up was late) is not a
 *    preemption; it is counted in low_not_running, not in preempt. */
#include <errno.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "portable.h"
#include "periodic/periodic.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt preempt_opts[] = {
    {"priority", RTG_OPT_INT, "80", 1, 98, NULL, "priority of the low thread; the high one runs at +1"},
    {"event", RTG_OPT_ENUM, "sem", 0, 0, "sem|timer",
     "what makes the high thread ready: a semaphore posted by the low thread, or a timer"},
    {"iterations", RTG_OPT_INT, "10000", 10, 10000000, NULL, "preemptions measured"},
    {"period-us", RTG_OPT_INT, "1000", 200, 100000, NULL, "--event timer: one preemption every PERIOD us"},
    {"lead-us", RTG_OPT_INT, "100", 10, 10000, NULL,
     "--event timer: the low thread starts running this long before each deadline"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 86400, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete); "
     "with --event timer and no --timeout-s, the planned length (iterations x period) plus 30 s"},
    {0},
};

#define WARMUP 10

typedef struct {
    bool timer;
    size_t n;                 /* warm-up + iterations */
    int64_t start_ns, period_ns, lead_ns;
    sem_t wake;
    _Atomic int high_ready;
    _Atomic size_t high_done; /* cycles the high thread finished */
    int64_t t0;               /* sem: L's timestamp before the post */
    int64_t *t1;              /* H's resumption per cycle */
    int64_t *low_start;       /* timer: when L began running before cycle i; sem: L's t0 of
                                 cycle i (the sample's start, for host stalls) */
} pair;

static void *high_sem(pair *p)
{
    atomic_store(&p->high_ready, 1);
    for (size_t i = 0; i < p->n; i++) {
        sem_wait(&p->wake);
        int64_t t1 = rtg_mono_ns();
        if (rtg_micro_stopping())
            break;
        p->t1[i] = t1 - p->t0;
        p->low_start[i] = p->t0;
        atomic_store_explicit(&p->high_done, i + 1, memory_order_release);
    }
    return NULL;
}

static void *low_sem(pair *p)
{
    for (size_t i = 0; i < p->n && !rtg_micro_stopping(); i++) {
        p->t0 = rtg_mono_ns();
        sem_post(&p->wake);
    }
    return NULL;
}

/* The high thread's timed cycles run on the cycle driver (a timer trigger on
 * H's CPU at H's priority): H's wake-up latency is the driver's Ti. This thread
 * only waits for the driver. */
static void high_timer_cycle(void *arg, rtg_cycle_ctx *c)
{
    pair *p = arg;
    if (rtg_micro_stopping()) {
        c->skip = true;
        c->end_run = true;
        return;
    }
    p->t1[c->cycle] = c->woke_ns - c->trigger_ns;
    atomic_store_explicit(&p->high_done, c->cycle + 1, memory_order_release);
}

/* The CPU this thread is pinned to (-1: more than one). */
static int own_cpu(void)
{
#ifdef RTG_POSIX_ONLY
    return rtg_online_cpus() == 1 ? 0 : -1;   /* no affinity in POSIX: only a uniprocessor's one CPU is known */
#else
    cpu_set_t set;
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0 || CPU_COUNT(&set) != 1)
        return -1;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &set))
            return i;
    return -1;
#endif
}

static void *high_timer(pair *p)
{
    static rtg_periodic_cfg cfg;   /* large (cpu table); not on the stack */
    memset(&cfg, 0, sizeof cfg);
    rtg_trigger tr = {.kind = RTG_TRIGGER_TIMER, .cycle = high_timer_cycle, .arg = p};
    struct sched_param sp;
    int policy;
    pthread_getschedparam(pthread_self(), &policy, &sp);
    cfg.nthreads = 1;
    cfg.cpus[0] = own_cpu();   /* H's CPU, policy and priority, as spawned */
    cfg.policy = policy == SCHED_RR ? RTG_POL_RR : policy == SCHED_FIFO ? RTG_POL_FIFO : RTG_POL_OTHER;
    cfg.priority = sp.sched_priority;
    cfg.period_ns = p->period_ns;
    cfg.start_at_ns = p->start_ns;
    cfg.cycles = p->n;
    cfg.catch_up = true;
    cfg.triggers = &tr;
    char err[512];
    rtg_clock_init(&cfg.clock, RTG_CLOCK_MONOTONIC, err, sizeof err);
    rtg_periodic_run run;
    atomic_store(&p->high_ready, 1);
    if (rtg_periodic(&cfg, &run, err, sizeof err) != 0) {
        fprintf(stderr, "rtgauge-engine: %s\n", err);
        atomic_store(&rtg_micro_abort, 1);
        return NULL;
    }
    rtg_periodic_free(&run);
    return NULL;
}

/* Running from lead before each deadline until H has taken its timestamp;
 * bounded by one period past the deadline whatever H does. */
static void *low_timer(pair *p)
{
    for (size_t i = 0; i < p->n && !rtg_micro_stopping(); i++) {
        int64_t d = p->start_ns + (int64_t)i * p->period_ns;
        rtg_sleep_until(d - p->lead_ns);
        p->low_start[i] = rtg_mono_ns();
        while (atomic_load_explicit(&p->high_done, memory_order_acquire) <= i &&
               rtg_mono_ns() < d + p->period_ns && !rtg_micro_stopping())
            ;
    }
    return NULL;
}

static void *high_main(void *a)
{
    pair *p = a;
    return p->timer ? high_timer(p) : high_sem(p);
}

static void *low_main(void *a)
{
    pair *p = a;
    return p->timer ? low_timer(p) : low_sem(p);
}

static void unblock_pair(void *a)
{
    sem_post(&((pair *)a)->wake);
}

static void report(const pair *p, rtg_result *res)
{
    size_t done = atomic_load(&p->high_done);
    rtg_samples s;
    if (rtg_samples_init(&s, done) != 0)
        return;
    int64_t not_running = 0;
    for (size_t i = WARMUP; i < done; i++) {
        int64_t d = p->start_ns + (int64_t)i * p->period_ns;
        if (p->timer && p->low_start[i] >= d)
            not_running++;
        else if (p->timer)
            rtg_samples_put_span(&s, d, d + p->t1[i]);   /* timed from the deadline */
        else
            rtg_samples_put_span(&s, p->low_start[i], p->low_start[i] + p->t1[i]);
    }
    rtg_samples_report(res, "preempt", &s);
    if (p->timer)
        rtg_j_set(res->metrics, "low_not_running", rtg_j_scalar_int(not_running, "count"));
    rtg_samples_free(&s);
}

static int preempt_run(const rtg_opts *o, rtg_result *res)
{
    static pair p;
    memset(&p, 0, sizeof p);
    p.timer = strcmp(rtg_opt_str(o, "event"), "timer") == 0;
    p.n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    p.period_ns = rtg_opt_int(o, "period-us") * 1000;
    p.lead_ns = rtg_opt_int(o, "lead-us") * 1000;
    /* --event timer's length is planned: iterations x period. Its watchdog follows from it
     * unless --timeout-s was given (a 100,000-preemption run at 1 ms takes 100 s). */
    int64_t timeout_ns = 0;
    if (p.timer && !rtg_opt_user(o, "timeout-s"))
        timeout_ns = (int64_t)p.n * p.period_ns + 50000000 + 30000000000LL;
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, true, 2, timeout_ns, unblock_pair, &p);
    if (status != RTG_EXIT_OK)
        return status;
    if (p.timer && 2 * p.lead_ns > p.period_ns) {
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--lead-us %lld is more than half of --period-us %lld; keep the low thread's busy "
                        "time under half the period.", (long long)(p.lead_ns / 1000), (long long)(p.period_ns / 1000));
    }
    p.t1 = calloc(p.n, sizeof *p.t1);
    p.low_start = calloc(p.n, sizeof *p.low_start);
    if (!p.t1 || !p.low_start) {
        free(p.t1), free(p.low_start);
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu samples; ask for fewer --iterations.", p.n);
    }
    sem_init(&p.wake, 0, 0);
    p.start_ns = rtg_mono_ns() + 50000000;
    /* H first: it must be blocked in its wait (semaphore, or the sleep to the
     * first deadline) before L runs */
    /* The semaphore case: H must be blocked on the semaphore before L posts it. The timer
     * case needs no placement: H's cycles run on the cycle driver (its own thread; H itself
     * only waits for the driver) and both H and L act at absolute instants from start_ns. */
    rtg_role high = {"high", high_main, &p, 1, RTG_SCN_CPU, p.timer ? RTG_AT_STARTED : RTG_AT_BLOCKED,
                     RTG_PRIM_SEM, 0};
    rtg_role low = {"low", low_main, &p, 0, RTG_SCN_CPU, RTG_AT_STARTED, RTG_PRIM_SEM, 0};
    if (rtg_scn_add(&s, &high) == 0)
        rtg_scn_add(&s, &low);
    status = rtg_scn_join(&s, res, "the run");
    if (status == RTG_EXIT_OK) {
        report(&p, res);
        if (p.timer)   /* the period H's cycle driver ran at (periodic.h: env.period_ns) */
            rtg_j_set(res->env, "period_ns", rtg_j_int(p.period_ns));
        size_t done = atomic_load(&p.high_done);
        rtg_scn_mark_incomplete(&s, res, (int64_t)(p.n - WARMUP), done > WARMUP ? (int64_t)(done - WARMUP) : 0);
        rtg_micro_method(res, p.timer
            ? "preempt: from the timer deadline d the high thread slept to, to its first timestamp after "
              "waking, while the low thread was running on the same CPU"
            : "preempt: from the low thread's timestamp just before sem_post to the high thread's first "
              "timestamp after sem_wait returned, both on one CPU");
    }
    if (rtg_scn_leaked(&s))
        return status;
    sem_destroy(&p.wake);
    free(p.t1), free(p.low_start);
    return status;
}

static const rtg_metric preempt_metrics[] = {
    {"preempt", RTG_METRIC_DISTRIBUTION, "ns", 0, "from the event (semaphore post or timer expiry) to the higher-priority thread running"},
    {"low_not_running", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "timer expiries at which the low thread was not running (--event timer only)"},
    {0},
};

const rtg_test rtg_test_preempt = {
    .name = "preempt",
    .summary = "preemption: time from an event (semaphore post or timer) to a higher-priority thread running",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = preempt_opts,
    .metrics = preempt_metrics,
    .flags = RTG_TEST_RT,
    .run = preempt_run,
};

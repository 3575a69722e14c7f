/* hartstone: the Hartstone PH (periodic, harmonic) series on the periodic driver.
 * Five periodic threads on one CPU with harmonic frequencies f, 2f, 4f, 8f, 16f
 * (the fastest period is --base-period-ms) and rate-monotonic priorities (the
 * faster, the higher), each doing a fixed amount of calibrated busy work per
 * period: Whetstone module-1 iterations, counted, not timed, so a preempted task
 * needs longer, as in Hartstone's Kilo-Whetstones. Every task starts at the same
 * utilisation u0 (--task-utilisation); each step adds u0 to the total:
 *   ph1  the fastest task's frequency rises by f16 each step (its work per period fixed);
 *   ph2  every frequency is scaled by (1 + k/5);
 *   ph3  every task's work per period grows by u0/5 of its period;
 *   ph4  one more task at the fastest frequency with u0 joins.
 * A step runs --step-s; it breaks down when a task misses (Tw < 0, or skips)
 * more than --miss-ratio of its deadlines (0: Hartstone's rule, any miss). The
 * breakdown utilisation is that of the last step that held. The series stops at
 * the breakdown, at --max-steps, or before a step whose planned utilisation would
 * pass what RT throttling allows (sched_rt_runtime_us / sched_rt_period_us). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "behaviour.h"
#include "clock.h"
#include "periodic/periodic.h"
#include "test.h"

#define BASE_TASKS 5
#define MAX_TASKS 64

static const rtg_opt hartstone_opts[] = {
    {"series", RTG_OPT_ENUM, "ph1", 0, 0, "ph1|ph2|ph3|ph4",
     "ph1 raise the highest rate, ph2 scale all rates, ph3 raise every workload, ph4 add tasks"},
    {"base-period-ms", RTG_OPT_NUM, "4", 0.5, 100, NULL, "period of the fastest baseline task (the slowest is 16 times longer)"},
    {"task-utilisation", RTG_OPT_NUM, "0.04", 0.005, 0.19, NULL,
     "utilisation of each baseline task; every step adds this much"},
    {"step-s", RTG_OPT_NUM, "0.5", 0.1, 10, NULL, "length of each step, in seconds"},
    {"max-steps", RTG_OPT_INT, "40", 1, 1000, NULL, "stop after this many steps even without a breakdown"},
    {"miss-ratio", RTG_OPT_NUM, "0", 0, 0.5, NULL,
     "a step breaks down when a task misses more than this fraction of its deadlines (0 = any miss)"},
    {"priority", RTG_OPT_INT, "50", 1, 90, NULL, "priority of the slowest task; faster tasks run above it"},
    {"policy", RTG_OPT_ENUM, "fifo", 0, 0, "fifo", "the tasks run under SCHED_FIFO"},
    {0},
};

/* ---- the work: Whetstone module 1 (simple identifiers), counted iterations ---- */
static volatile double work_sink;

static void whetstone_iterations(uint64_t n)
{
    double x1 = 1.0, x2 = -1.0, x3 = -1.0, x4 = -1.0;
    const double t = 0.499975;
    for (uint64_t i = 0; i < n; i++) {
        x1 = (x1 + x2 + x3 - x4) * t;
        x2 = (x1 + x2 - x3 + x4) * t;
        x3 = (x1 - x2 + x3 + x4) * t;
        x4 = (-x1 + x2 + x3 + x4) * t;
    }
    work_sink = x1 + x2 + x3 + x4;
}

static void payload(void *arg, rtg_cycle_ctx *c)
{
    (void)c;
    whetstone_iterations(*(const uint64_t *)arg);
}

/* ns per iteration: the least disturbed of several ~2 ms runs on the measuring CPU */
static double calibrate(void)
{
    uint64_t n = 1000;
    int64_t t;
    do {
        n *= 2;
        int64_t s = rtg_mono_ns();
        whetstone_iterations(n);
        t = rtg_mono_ns() - s;
    } while (t < 2000000 && n < (1ull << 40));
    double best = (double)t / (double)n;
    for (int r = 0; r < 9; r++) {
        int64_t s = rtg_mono_ns();
        whetstone_iterations(n);
        double v = (double)(rtg_mono_ns() - s) / (double)n;
        best = v < best ? v : best;
    }
    return best;
}

typedef struct {
    int n;
    int64_t period[MAX_TASKS];
    int64_t work_ns[MAX_TASKS];
} taskset;

static double utilisation(const taskset *ts)
{
    double u = 0;
    for (int i = 0; i < ts->n; i++)
        u += (double)ts->work_ns[i] / (double)ts->period[i];
    return u;
}

/* The task set of step k of a series; -1 when the series cannot go on (ph4: no room). */
static int build_step(const char *series, int k, int64_t base, double u0, taskset *ts)
{
    ts->n = BASE_TASKS;
    for (int i = 0; i < BASE_TASKS; i++) {
        ts->period[i] = base << (BASE_TASKS - 1 - i);     /* 16f..f: slowest first */
        ts->work_ns[i] = (int64_t)llround(u0 * (double)ts->period[i]);
    }
    int fast = BASE_TASKS - 1;
    if (strcmp(series, "ph1") == 0) {
        ts->period[fast] = base / (k + 1);
    } else if (strcmp(series, "ph2") == 0) {
        for (int i = 0; i < BASE_TASKS; i++)
            ts->period[i] = (int64_t)llround((double)ts->period[i] / (1.0 + k / 5.0));
    } else if (strcmp(series, "ph3") == 0) {
        for (int i = 0; i < BASE_TASKS; i++)
            ts->work_ns[i] = (int64_t)llround((u0 + k * u0 / 5.0) * (double)ts->period[i]);
    } else {
        if (BASE_TASKS + k > MAX_TASKS)
            return -1;
        for (int j = 0; j < k; j++) {
            ts->period[BASE_TASKS + j] = base;
            ts->work_ns[BASE_TASKS + j] = ts->work_ns[fast];
        }
        ts->n = BASE_TASKS + k;
    }
    return 0;
}

/* Rate-monotonic: shorter period, higher priority; ties by index (earlier higher). */
static void rm_priorities(const taskset *ts, int lowest, int *prio)
{
    for (int i = 0; i < ts->n; i++) {
        int above = 0;
        for (int j = 0; j < ts->n; j++)
            if (ts->period[j] > ts->period[i] || (ts->period[j] == ts->period[i] && j > i))
                above++;
        prio[i] = lowest + above;
    }
}

/* Fraction of RT time the kernel allows (1 when throttling is off). */
static double rt_limit(void)
{
    long long rt = -1, per = 0;
#ifdef RTG_POSIX_ONLY
    return 1.0;   /* no /proc in the POSIX-only build: no Linux RT throttling is known of */
#endif
    FILE *f = fopen("/proc/sys/kernel/sched_rt_runtime_us", "r");
    if (f) {
        if (fscanf(f, "%lld", &rt) != 1)
            rt = -1;
        fclose(f);
    }
    f = fopen("/proc/sys/kernel/sched_rt_period_us", "r");
    if (f) {
        if (fscanf(f, "%lld", &per) != 1)
            per = 0;
        fclose(f);
    }
    if (rt < 0 || per <= 0)
        return 1.0;
    double l = (double)rt / (double)per;
    return l < 1.0 ? l : 1.0;
}

typedef struct {
    double planned, measured, worst_ratio, inflation;
    int tasks;
    uint64_t task_misses[MAX_TASKS];   /* misses + skipped per task */
    int64_t task_period[MAX_TASKS];
    uint64_t misses, skipped, cycles;
    int64_t ti_max, fastest;
    bool broke;
} step_result;

static int run_step(const taskset *ts, int cpu, int lowest, double ns_per_iter, int64_t step_ns,
                    double miss_ratio, step_result *sr, char *err, size_t errlen)
{
    static rtg_periodic_cfg cfg;
    static uint64_t iters[MAX_TASKS];
    static rtg_trigger tasks[MAX_TASKS];
    static int prio[MAX_TASKS];
    memset(&cfg, 0, sizeof cfg);
    cfg.nthreads = ts->n;
    cfg.policy = RTG_POL_FIFO;
    cfg.period_ns = INT64_MAX;
    for (int i = 0; i < ts->n; i++) {
        cfg.cpus[i] = cpu;
        iters[i] = (uint64_t)llround((double)ts->work_ns[i] / ns_per_iter);
        tasks[i] = (rtg_trigger){.kind = RTG_TRIGGER_TIMER, .cycle = payload, .arg = &iters[i]};
        if (ts->period[i] < cfg.period_ns)
            cfg.period_ns = ts->period[i];
    }
    rm_priorities(ts, lowest, prio);
    cfg.periods_ns = ts->period;
    cfg.priorities = prio;
    cfg.triggers = tasks;
    cfg.duration_ns = step_ns;
    cfg.start_delay_ns = 20000000;
    cfg.window_ns = step_ns;
    rtg_clock_init(&cfg.clock, RTG_CLOCK_MONOTONIC, err, errlen);
    rtg_periodic_run run;
    if (rtg_periodic(&cfg, &run, err, errlen) != 0)
        return -1;
    memset(sr, 0, sizeof *sr);
    sr->planned = utilisation(ts);
    sr->tasks = ts->n;
    sr->fastest = cfg.period_ns;
    int top = 0;
    for (int i = 0; i < ts->n; i++) {
        const rtg_periodic_thread *t = &run.t[i];
        uint64_t deadlines = t->cycles + t->skipped;
        double ratio = deadlines ? (double)(t->misses + t->skipped) / (double)deadlines : 1.0;
        sr->worst_ratio = ratio > sr->worst_ratio ? ratio : sr->worst_ratio;
        sr->task_misses[i] = t->misses + t->skipped;
        sr->task_period[i] = ts->period[i];
        if (prio[i] > prio[top])
            top = i;
    }
    /* Only the system preempts the top task: its Ts over the planned work is what
     * the work really cost this step (interrupts, stalls, calibration error). */
    sr->inflation = ts->work_ns[top] > 0 && run.t[top].ts.count
                        ? rtg_dist_avg(&run.t[top].ts) / (double)ts->work_ns[top] : 1.0;
    sr->measured = utilisation(ts) * sr->inflation;
    sr->misses = run.all.misses;
    sr->skipped = run.all.skipped;
    sr->cycles = run.all.cycles;
    sr->ti_max = run.all.ti.count ? run.all.ti.max : 0;
    sr->broke = sr->misses + sr->skipped > 0 && sr->worst_ratio > miss_ratio;
    rtg_periodic_free(&run);
    return 0;
}

static void put_step(rtg_json *arr, int k, const step_result *s)
{
    rtg_json *j = rtg_j_push(arr, rtg_j_obj());
    rtg_j_set(j, "step", rtg_j_int(k));
    rtg_j_set(j, "utilisation", rtg_j_num(s->planned));
    rtg_j_set(j, "measured_utilisation", rtg_j_num(s->measured));
    rtg_j_set(j, "work_inflation", rtg_j_num(s->inflation));
    rtg_j_set(j, "tasks", rtg_j_int(s->tasks));
    rtg_j_set(j, "fastest_period_ns", rtg_j_int(s->fastest));
    rtg_j_set(j, "cycles", rtg_j_int((int64_t)s->cycles));
    rtg_j_set(j, "misses", rtg_j_int((int64_t)s->misses));
    rtg_j_set(j, "skipped", rtg_j_int((int64_t)s->skipped));
    rtg_j_set(j, "worst_task_miss_ratio", rtg_j_num(s->worst_ratio));
    rtg_j_set(j, "ti_max_ns", rtg_j_int(s->ti_max));
    rtg_j_set(j, "held", rtg_j_bool(!s->broke));
    rtg_json *tm = rtg_j_set(j, "task_misses", rtg_j_arr());
    rtg_json *tp = rtg_j_set(j, "task_periods_ns", rtg_j_arr());
    for (int i = 0; i < s->tasks; i++) {
        rtg_j_push(tm, rtg_j_int((int64_t)s->task_misses[i]));
        rtg_j_push(tp, rtg_j_int(s->task_period[i]));
    }
}

static int hartstone_run(const rtg_opts *o, rtg_result *res)
{
    const char *series = rtg_opt_str(o, "series");
    int64_t base = (int64_t)(rtg_opt_num(o, "base-period-ms") * 1e6);
    double u0 = rtg_opt_num(o, "task-utilisation");
    int64_t step_ns = (int64_t)(rtg_opt_num(o, "step-s") * 1e9);
    int max_steps = (int)rtg_opt_int(o, "max-steps");
    double miss_ratio = rtg_opt_num(o, "miss-ratio");
    int lowest = (int)rtg_opt_int(o, "priority");
    int cpu = rtg_behav_cpu(o);
    char err[512];
    if (cpu < 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    if (rtg_behav_self(cpu, RTG_POL_FIFO, 99, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    double ns_per_iter = calibrate();
    /* the controller only sleeps in joins from here; drop it below the tasks anyway */
    if (rtg_behav_self(cpu, RTG_POL_OTHER, 0, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    double limit = rt_limit();
    rtg_json *steps = rtg_j_set(res->extra, "steps", rtg_j_arr());
    double breakdown = 0, first_miss = -1;
    int k = 0;
    const char *stopped = "max-steps";
    step_result sr = {0};
    for (; k < max_steps && !rtg_stop; k++) {
        taskset ts;
        if (build_step(series, k, base, u0, &ts) != 0) {
            stopped = "task-limit";
            break;
        }
        int top = lowest + ts.n - 1;
        if (top > 98) {
            stopped = "priority-limit";
            break;
        }
        if (utilisation(&ts) > limit + 1e-9) {
            stopped = "rt-throttling-limit";
            break;
        }
        if (run_step(&ts, cpu, lowest, ns_per_iter, step_ns, miss_ratio, &sr, err, sizeof err) != 0)
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
        put_step(steps, k, &sr);
        if (sr.misses + sr.skipped > 0 && first_miss < 0)
            first_miss = sr.planned;
        if (sr.broke) {
            stopped = "breakdown";
            k++;
            break;
        }
        breakdown = sr.planned;
    }
    rtg_j_set(res->metrics, "breakdown_utilisation", rtg_j_scalar_num(breakdown, "fraction"));
    rtg_j_set(res->metrics, "steps", rtg_j_scalar_int(k, "count"));
    rtg_j_set(res->metrics, "first_miss_utilisation",
              first_miss < 0 ? rtg_j_scalar_num(NAN, "fraction") : rtg_j_scalar_num(first_miss, "fraction"));
    rtg_json *h = rtg_j_set(res->extra, "hartstone", rtg_j_obj());
    rtg_j_set(h, "series", rtg_j_str(series));
    rtg_j_set(h, "stopped_by", rtg_j_str(stopped));
    rtg_j_set(h, "utilisation_limit", rtg_j_num(limit));
    rtg_j_set(h, "ns_per_iteration", rtg_j_num(ns_per_iter));
    rtg_j_set(h, "kilo_iterations_per_s", rtg_j_num(1e6 / ns_per_iter));
    rtg_j_set(h, "base_period_ns", rtg_j_int(base));
    rtg_j_set(h, "task_utilisation", rtg_j_num(u0));
    rtg_j_set(h, "miss_ratio", rtg_j_num(miss_ratio));
    rtg_behav_env_cpu(res, cpu);
    return RTG_EXIT_OK;
}

static const rtg_metric hartstone_metrics[] = {
    {"breakdown_utilisation", RTG_METRIC_SCALAR, "fraction", 0, "the highest planned utilisation of a step without breakdown"},
    {"steps", RTG_METRIC_SCALAR, "count", 0, "steps run"},
    {"first_miss_utilisation", RTG_METRIC_SCALAR, "fraction", 0, "planned utilisation of the first step with a miss (null when none)"},
    {0},
};

const rtg_test rtg_test_hartstone = {
    .name = "hartstone",
    .summary = "Hartstone PH series: five harmonic periodic tasks, load raised step by step to the first miss",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = hartstone_opts,
    .metrics = hartstone_metrics,
    .flags = RTG_TEST_RT,
    .run = hartstone_run,
};

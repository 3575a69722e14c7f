/* spin: a disturbance with ground truth. A thread pinned to --cpu at
 * --policy/--priority busy-spins --busy-us every --period-us (absolute
 * deadlines, on the cycle driver: a late burst is run at once, never skipped)
 * and records the exact CLOCK_MONOTONIC start and end of every busy period,
 * printed as "events": [[start_ns, end_ns], ...]. A latency run on the same CPU
 * at a lower priority must show each one; it also serves as a load. The driver
 * adds the spinner's own Ti/Ts/Tw. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "periodic/periodic.h"
#include "rt.h"
#include "samples.h"
#include "test.h"

static const rtg_opt spin_opts[] = {
    {"cpu", RTG_OPT_INT, "0", 0, RTG_MAX_CPUS - 1, NULL, "CPU the spinning thread is pinned to"},
    {"priority", RTG_OPT_INT, "90", 1, 99, NULL,
     "real-time priority of the spinning thread (ignored for other)"},
    {"busy-us", RTG_OPT_INT, "1000", 1, 1000000, NULL,
     "busy time per period in microseconds (at most half of --period-us)"},
    {"period-us", RTG_OPT_INT, "100000", 2, 10000000, NULL, "period of the busy bursts in microseconds"},
    {"duration-s", RTG_OPT_NUM, "5", 0.01, 3600, NULL, "how long to run, in seconds"},
    {"start-delay-ms", RTG_OPT_INT, "100", 0, 60000, NULL,
     "first busy period this long after the thread is ready"},
    {"start-at-ns", RTG_OPT_INT, NULL, 1, 9.2e18, NULL,
     "first busy period at this CLOCK_MONOTONIC instant (aligns with another process)"},
    {0},
};

typedef struct {
    int cpu;
    rtg_policy policy;
    int priority;
    bool allow_fallback;
    int64_t busy_ns, period_ns, duration_ns, start_ns;
    int64_t (*events)[2];     /* preallocated, touched */
    size_t cap, count;
} spinner;

/* Busy from s until at least busy_ns later; bounded by construction, and cut
 * short when the run must stop. */
static void busy_period(const spinner *sp, const rtg_cycle_ctx *c, int64_t *start, int64_t *end)
{
    int64_t s = rtg_mono_ns(), e = s;
    while (e - s < sp->busy_ns && !rtg_cycle_stopping(c))
        e = rtg_mono_ns();
    *start = s;
    *end = e;
}

static void spin_cycle(void *arg, rtg_cycle_ctx *c)
{
    spinner *sp = arg;
    if (c->cycle >= sp->cap) {
        c->end = true;
        return;
    }
    busy_period(sp, c, &sp->events[c->cycle][0], &sp->events[c->cycle][1]);
    sp->count = c->cycle + 1;
}

static int run_spinner(spinner *sp, rtg_periodic_run *run, rtg_result *res)
{
    static rtg_periodic_cfg cfg;   /* large (cpu table); not on the stack */
    memset(&cfg, 0, sizeof cfg);
    rtg_trigger tr = {.kind = RTG_TRIGGER_TIMER, .cycle = spin_cycle, .arg = sp};
    cfg.nthreads = 1;
    cfg.cpus[0] = sp->cpu;
    cfg.policy = sp->policy;
    cfg.priority = sp->priority;
    cfg.allow_fallback = sp->allow_fallback;
    cfg.period_ns = sp->period_ns;
    cfg.start_at_ns = sp->start_ns;
    cfg.duration_ns = sp->duration_ns;
    cfg.catch_up = true;
    cfg.triggers = &tr;
    char err[512];
    rtg_clock_init(&cfg.clock, RTG_CLOCK_MONOTONIC, err, sizeof err);
    if (rtg_periodic(&cfg, run, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    return RTG_EXIT_OK;
}

static void report(const spinner *sp, const rtg_periodic_run *run, rtg_result *res)
{
    rtg_dist busy;
    rtg_json *ev = rtg_j_set(res->extra, "events", rtg_j_arr());
    bool have = rtg_dist_init(&busy, 0, 0) == 0;
    for (size_t k = 0; k < sp->count; k++) {
        rtg_json *pair = rtg_j_push(ev, rtg_j_arr());
        rtg_j_push(pair, rtg_j_int(sp->events[k][0]));
        rtg_j_push(pair, rtg_j_int(sp->events[k][1]));
        if (have)
            rtg_dist_add(&busy, sp->events[k][1] - sp->events[k][0]);
    }
    rtg_periodic_report(run, res);   /* Ti/Ts/Tw, env.threads, run_start_ns */
    if (have) {
        rtg_j_set(res->metrics, "busy", rtg_j_dist(&busy, "ns"));
        rtg_dist_free(&busy);
    }
    rtg_j_set(res->metrics, "count", rtg_j_scalar_int((int64_t)sp->count, "count"));
    rtg_json *cpus = rtg_j_set(res->env, "cpus", rtg_j_arr());
    rtg_j_push(cpus, rtg_j_int(sp->cpu));
}

static int spin_run(const rtg_opts *o, rtg_result *res)
{
    spinner sp;
    memset(&sp, 0, sizeof sp);
    sp.busy_ns = rtg_opt_int(o, "busy-us") * 1000;
    sp.period_ns = rtg_opt_int(o, "period-us") * 1000;
    if (2 * sp.busy_ns > sp.period_ns)
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--busy-us %lld is more than half of --period-us %lld; keep the busy time at most 50%% of the period so the CPU is never hogged.",
                        (long long)(sp.busy_ns / 1000), (long long)(sp.period_ns / 1000));
    int cpus[1];
    char what[64], err[512];
    snprintf(what, sizeof what, "%lld", (long long)rtg_opt_int(o, "cpu"));
    if (rtg_cpu_list_parse(what, "--cpu", cpus, 1, err, sizeof err) < 0)
        return rtg_fail(res, RTG_EXIT_USAGE, "%s", err);
    sp.cpu = cpus[0];
    rtg_policy_parse(rtg_opt_str(o, "policy"), &sp.policy);
    sp.priority = (int)rtg_opt_int(o, "priority");
    sp.allow_fallback = rtg_opt_flag(o, "allow-fallback");
    sp.duration_ns = (int64_t)(rtg_opt_num(o, "duration-s") * 1e9);
    sp.cap = (size_t)(sp.duration_ns / sp.period_ns) + 2;
    sp.events = calloc(sp.cap, sizeof *sp.events);   /* calloc + mlockall: touched */
    if (!sp.events)
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu events; shorten --duration-s.", sp.cap);
    rtg_touch(sp.events, sp.cap * sizeof *sp.events);   /* fault the pages in before the loop */
    if (rtg_opt_given(o, "start-at-ns")) {
        sp.start_ns = rtg_opt_int(o, "start-at-ns");
        if (sp.start_ns < rtg_mono_ns() + 10000000) {
            free(sp.events);
            return rtg_fail(res, RTG_EXIT_USAGE,
                            "--start-at-ns %lld is not at least 10 ms in the future (now is %lld); give a later instant.",
                            (long long)sp.start_ns, (long long)rtg_mono_ns());
        }
        if (sp.start_ns > rtg_mono_ns() + RTG_START_AT_MAX_NS) {
            free(sp.events);
            return rtg_fail(res, RTG_EXIT_USAGE,
                            "--start-at-ns %lld is more than a day in the future (now is %lld); give an instant within a day.",
                            (long long)sp.start_ns, (long long)rtg_mono_ns());
        }
    } else {
        sp.start_ns = rtg_mono_ns() + rtg_opt_int(o, "start-delay-ms") * 1000000;
    }
    rtg_periodic_run run;
    int status = run_spinner(&sp, &run, res);
    if (status == RTG_EXIT_OK) {
        report(&sp, &run, res);
        rtg_periodic_free(&run);
    }
    free(sp.events);
    return status;
}

static const rtg_metric spin_metrics[] = {
    {"busy", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "actual length of each busy period (only when a burst ran)"},
    {"count", RTG_METRIC_SCALAR, "count", 0, "busy periods run"},
    RTG_PERIODIC_METRIC_AS(ti, 0, "the spinner's own wake-up latency: its wake-up minus the burst's deadline"),
    RTG_PERIODIC_METRIC_AS(ts, 0, "the spinner's busy time per period, as the cycle driver measured it"),
    RTG_PERIODIC_METRIC_AS(tw, 0, "the next burst's deadline minus the end of the burst"),
    RTG_PERIODIC_METRIC_AS(misses, 0, "bursts that ended after the next burst was due"),
    RTG_PERIODIC_METRIC_AS(cycles, 0, "bursts run by the cycle driver"),
    RTG_PERIODIC_METRIC_AS(skipped, 0, "burst deadlines skipped after an overrun (0: bursts are at most half the period)"),
    RTG_PERIODIC_METRIC(dropped, 0, ""),
    RTG_PERIODIC_METRIC_AS(ti_window_max, 0, "the spinner's largest wake-up latency per window"),
    {0},
};

const rtg_test rtg_test_spin = {
    .name = "spin",
    .summary = "disturbance with ground truth: busy-spin X us every Y us on one CPU, recording each burst",
    .kind = RTG_KIND_INSTRUMENT,
    .opts = spin_opts,
    .metrics = spin_metrics,
    .flags = RTG_TEST_RT | RTG_TEST_NO_CPUS,
    .run = spin_run,
};

/* overhead: the cost of one timestamp for each clock, measured as the published
 * method does: the same loop of n iterations timed with and without a timestamp
 * per iteration, the difference divided by n; the median over rounds is the
 * metric. The thread is pinned to one CPU so rounds do not straddle a migration. */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "rt.h"
#include "samples.h"
#include "test.h"

/* The published bound for one timestamp (docs/method.md). */
#define RTG_TIMESTAMP_BOUND_NS 100.0

static const rtg_opt overhead_opts[] = {
    {"iterations", RTG_OPT_INT, "1000000", 1000, 100000000, NULL,
     "loop iterations per round (each round runs the loop with and without timestamps)"},
    {"rounds", RTG_OPT_INT, "11", 1, 1000, NULL, "rounds; the median round is reported"},
    {0},
};

/* Pin to the first CPU of --cpus, or else to the CPU we are on now. */
static int pin_for_stability(const rtg_opts *o, rtg_result *res)
{
    int cpus[RTG_MAX_CPUS];
    int cpu = -1;
    if (rtg_opt_given(o, "cpus") && rtg_opt_cpus(o, "cpus", cpus, RTG_MAX_CPUS) > 0)
        cpu = cpus[0];
    else
#ifdef RTG_POSIX_ONLY
        cpu = rtg_allowed_cpus(cpus, RTG_MAX_CPUS) > 0 ? cpus[0] : -1;   /* -1: not pinned (no affinity in POSIX) */
#else
        cpu = sched_getcpu();
#endif
    char err[256];
    if (cpu >= 0 && rtg_pin_cpu(cpu, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    rtg_j_set(res->env, "cpu", rtg_j_int(cpu));
    return RTG_EXIT_OK;
}

/* Round costs in ns as a distribution (rounded to whole ns, the unit of rtg_dist). */
static rtg_json *rounds_dist(const double *v, int n)
{
    rtg_dist d;
    if (rtg_dist_init(&d, 0, 0) != 0)
        return rtg_j_null();
    for (int i = 0; i < n; i++)
        rtg_dist_add(&d, (int64_t)llround(v[i]));
    rtg_json *j = rtg_j_dist(&d, "ns");
    rtg_dist_free(&d);
    return j;
}

/* Measure one clock: rounds until done or interrupted; puts metric NAME (median)
 * and NAME_rounds into the result. Returns the median, or NAN when no round ran. */
static double measure_clock(const rtg_clock *c, long n, int rounds, const char *name,
                            rtg_result *res)
{
    double *v = malloc(sizeof(double) * (size_t)rounds);
    if (!v)
        return NAN;
    int done = 0;
    rtg_clock_cost_warmup(c, n);
    while (done < rounds && !rtg_stop)
        v[done++] = rtg_clock_cost_round_ns(c, n);
    double median = NAN;
    if (done > 0) {
        median = rtg_median(v, done);
        char key[64];
        rtg_j_set(res->metrics, name, rtg_j_scalar_num(round(median * 100.0) / 100.0, "ns"));
        snprintf(key, sizeof key, "%s_rounds", name);
        rtg_j_set(res->metrics, key, rounds_dist(v, done));
    }
    free(v);
    return median;
}

static void report_resolution(rtg_result *res)
{
    struct timespec r;
    if (clock_getres(CLOCK_MONOTONIC, &r) == 0)
        rtg_j_set(res->env, "clock_resolution_ns", rtg_j_int(rtg_timespec_ns(&r)));
}

/* TSC clock if usable; otherwise env.tsc says why and the metric is omitted. */
static int init_tsc(rtg_clock *c, rtg_result *res)
{
    char why[512];
    if (!rtg_tsc_invariant(why, sizeof why)) {
        rtg_j_set(res->env, "tsc", rtg_j_strf("unavailable: %s", why));
        return -1;
    }
    if (rtg_clock_init(c, RTG_CLOCK_TSC, why, sizeof why) != 0) {
        rtg_j_set(res->env, "tsc", rtg_j_strf("unavailable: %s", why));
        return -1;
    }
    rtg_j_set(res->env, "tsc", rtg_j_str("invariant"));
    rtg_j_set(res->env, "tsc_hz", rtg_j_num(round(1e9 / c->ns_per_tick)));
    return 0;
}

static int overhead_run(const rtg_opts *o, rtg_result *res)
{
    long n = (long)rtg_opt_int(o, "iterations");
    int rounds = (int)rtg_opt_int(o, "rounds");
    int st = pin_for_stability(o, res);
    if (st != RTG_EXIT_OK)
        return st;
    report_resolution(res);

    rtg_clock mono;
    char err[256];
    if (rtg_clock_init(&mono, RTG_CLOCK_MONOTONIC, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    double mono_ns = measure_clock(&mono, n, rounds, "timestamp_monotonic", res);
    if (!isnan(mono_ns))
        rtg_verdict(res, "timestamp_monotonic", mono_ns < RTG_TIMESTAMP_BOUND_NS,
                    "%.1f ns per CLOCK_MONOTONIC timestamp (published bound < %.0f ns)",
                    mono_ns, RTG_TIMESTAMP_BOUND_NS);

    rtg_clock tsc;
    if (!rtg_stop && init_tsc(&tsc, res) == 0) {
        double tsc_ns = measure_clock(&tsc, n, rounds, "timestamp_tsc", res);
        if (!isnan(tsc_ns))
            rtg_verdict(res, "timestamp_tsc", tsc_ns < RTG_TIMESTAMP_BOUND_NS,
                        "%.1f ns per TSC timestamp (published bound < %.0f ns)",
                        tsc_ns, RTG_TIMESTAMP_BOUND_NS);
    }
    return RTG_EXIT_OK;
}

static const rtg_metric overhead_metrics[] = {
    {"timestamp_monotonic", RTG_METRIC_SCALAR, "ns", 0, "cost of one CLOCK_MONOTONIC timestamp, median over the rounds"},
    {"timestamp_monotonic_rounds", RTG_METRIC_DISTRIBUTION, "ns", 0, "cost of one CLOCK_MONOTONIC timestamp in each round"},
    {"timestamp_tsc", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "cost of one TSC timestamp, median over the rounds (only with an invariant TSC)"},
    {"timestamp_tsc_rounds", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "cost of one TSC timestamp in each round (only with an invariant TSC)"},
    {0},
};

const rtg_test rtg_test_overhead = {
    .name = "overhead",
    .summary = "cost of one timestamp per clock (loop with and without timestamps)",
    .kind = RTG_KIND_INSTRUMENT,
    .opts = overhead_opts,
    .metrics = overhead_metrics,
    .flags = RTG_TEST_RT,
    .run = overhead_run,
};

/* tick (CLK-P-DUR): how long, and how often, the OS takes the CPU away from a
 * running real-time thread. One thread at --policy/--priority, pinned to one
 * CPU, reads the clock in a tight loop for --duration-s; whenever two
 * consecutive readings are more than --threshold-ns apart the CPU was taken away
 * (timer tick, another interrupt, a higher-priority thread, a host stall) and
 * the gap (start = the reading before it, length) is stored in a preallocated
 * array. After the run: the distribution of gap lengths (gap), their number
 * (gaps), the fraction of the run they took (stolen_fraction), and the
 * periodicity: the most common interval between consecutive gap starts (the
 * mode of their log-linear histogram, refined by the mean of the intervals
 * within 2 % of it: dominant_period_ns), compared with the tick period
 * 1 s / CONFIG_HZ read from the kernel configuration. A gap below the threshold
 * is invisible; a loop iteration (one clock read, env.timestamp_cost_ns) is the
 * resolution. The loop runs at most --duration-s (stops early on Ctrl-C); runs
 * near a second may meet RT throttling, which then shows as a long gap. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "clock.h"
#include "gaploop.h"
#include "samples.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt tick_opts[] = {
    {"duration-s", RTG_OPT_NUM, "0.5", 0.01, 60, NULL, "how long the loop reads the clock"},
    {"threshold-ns", RTG_OPT_INT, "1000", 50, 1000000000, NULL,
     "a pause between two clock readings longer than this is a gap"},
    {"max-gaps", RTG_OPT_INT, "1000000", 100, 100000000, NULL, "gaps stored (more are counted only)"},
    {"events-above-ns", RTG_OPT_INT, "100000", 50, 1000000000, NULL,
     "list every gap at least this long under \"events\" as [start_ns, end_ns] (at most 10000)"},
    {"clock", RTG_OPT_ENUM, "monotonic", 0, 0, "monotonic|tsc", "clock the loop reads"},
    {"timeout-s", RTG_OPT_NUM, "120", 1, 3600, NULL, "watchdog: stop the run after this many seconds"},
    {0},
};

#define MAX_EVENTS 10000
#define MODE_WINDOW 0.02

/* CONFIG_HZ of the running kernel, from /boot/config-<release> or
 * /proc/config.gz; 0 when neither says. */
static long config_hz(char *src, size_t len)
{
    struct utsname u;
    char cmd[256], line[256];
    long hz = 0;
#ifdef RTG_POSIX_ONLY
    (void)u, (void)cmd, (void)line, (void)hz;
    snprintf(src, len, "unknown: the POSIX-only build reads no kernel configuration");
    return 0;
#endif
    if (uname(&u) != 0)
        return 0;
    snprintf(cmd, sizeof cmd, "/boot/config-%s", u.release);
    FILE *f = fopen(cmd, "r");
    snprintf(src, len, "%s", cmd);
    bool piped = false;
    if (!f) {
        f = popen("gzip -dc /proc/config.gz 2>/dev/null", "r");
        snprintf(src, len, "/proc/config.gz");
        piped = true;
    }
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "CONFIG_HZ=", 10) == 0)
            hz = strtol(line + 10, NULL, 10);
    piped ? pclose(f) : fclose(f);
    return hz;
}

/* The mode of the intervals between consecutive gap starts, refined. */
static double dominant_interval(const rtg_gaploop *g, size_t stored, double *share)
{
    rtg_dist d;
    *share = 0;
    if (stored < 3 || rtg_dist_init(&d, 0, 0) != 0)
        return 0;
    for (size_t i = 1; i < stored; i++)
        rtg_dist_add(&d, g->start[i] - g->start[i - 1]);
    size_t best = 0;
    for (size_t b = 1; b < RTG_HDR_BUCKETS; b++)
        if (d.hdr[b] > d.hdr[best])
            best = b;
    double mid = 0.5 * (double)(rtg_hdr_lower(best) + rtg_hdr_upper(best));
    rtg_dist_free(&d);
    double sum = 0;
    size_t k = 0;
    for (size_t i = 1; i < stored; i++) {
        double iv = (double)(g->start[i] - g->start[i - 1]);
        if (fabs(iv - mid) <= MODE_WINDOW * mid) {
            sum += iv;
            k++;
        }
    }
    *share = (double)k / (double)(stored - 1);
    return k ? sum / (double)k : mid;
}

/* The gaps the clock tick causes, apart from the rest (other interrupts, other
 * threads, host stalls): the tick's phase is the mode of the gap starts modulo the
 * tick period (bins as wide as the tolerance), refined by the mean offset of the
 * starts within the tolerance of that bin; a gap is the tick's when it starts within
 * the tolerance of the phase and is shorter than half the period (a longer one
 * swallowed the next tick: a stall, not a tick's processing). */
#define TICK_PHASE_TOL 0.005
#define TICK_PHASE_MIN_NS 10000.0

static void split_tick_gaps(const rtg_gaploop *g, size_t stored, double tick, rtg_result *res, rtg_json *per)
{
    double tol = TICK_PHASE_TOL * tick > TICK_PHASE_MIN_NS ? TICK_PHASE_TOL * tick : TICK_PHASE_MIN_NS;
    size_t nbins = (size_t)ceil(tick / tol);
    uint64_t *bins = calloc(nbins ? nbins : 1, sizeof *bins);
    rtg_dist on, off;
    if (!bins || rtg_dist_init(&on, 0, 0) != 0) {
        free(bins);
        return;
    }
    if (rtg_dist_init(&off, 0, 0) != 0) {
        rtg_dist_free(&on);
        free(bins);
        return;
    }
    for (size_t i = 0; i < stored; i++) {
        double ph = fmod((double)(g->start[i] - g->t_begin), tick);
        size_t b = (size_t)(ph / tol);
        bins[b < nbins ? b : nbins - 1]++;
    }
    size_t best = 0;
    for (size_t b = 1; b < nbins; b++)
        if (bins[b] > bins[best])
            best = b;
    free(bins);
    double centre = ((double)best + 0.5) * tol, sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < stored; i++) {
        double d = fmod((double)(g->start[i] - g->t_begin) - centre + 1.5 * tick, tick) - 0.5 * tick;
        if (fabs(d) <= tol) {
            sum += d;
            k++;
        }
    }
    double phase = centre + (k ? sum / (double)k : 0);
    int64_t stalls = 0;
    for (size_t i = 0; i < stored; i++) {
        double d = fmod((double)(g->start[i] - g->t_begin) - phase + 1.5 * tick, tick) - 0.5 * tick;
        bool long_gap = (double)g->len[i] >= 0.5 * tick;
        stalls += long_gap;
        rtg_dist_add(stored >= 3 && !long_gap && fabs(d) <= tol ? &on : &off, g->len[i]);
    }
    double run = (double)(g->t_end - g->t_begin);
    rtg_json *m = res->metrics;
    rtg_j_set(m, "tick_gap", rtg_j_dist(&on, "ns"));
    rtg_j_set(m, "other_gap", rtg_j_dist(&off, "ns"));
    rtg_j_set(m, "tick_gaps", rtg_j_scalar_int((int64_t)on.count, "count"));
    rtg_j_set(m, "ticks_in_run", rtg_j_scalar_int((int64_t)(run / tick), "count"));
    rtg_j_set(m, "stalls", rtg_j_scalar_int(stalls, "count"));
    rtg_j_set(per, "tick_tolerance_ns", rtg_j_num(tol));
    rtg_j_set(per, "tick_phase_ns", rtg_j_num(fmod((double)g->t_begin + phase, tick)));
    rtg_dist_free(&on);
    rtg_dist_free(&off);
}

static void report_events(const rtg_gaploop *g, size_t stored, int64_t above, rtg_result *res)
{
    rtg_json *ev = rtg_j_set(res->extra, "events", rtg_j_arr());
    size_t listed = 0;
    for (size_t i = 0; i < stored && listed < MAX_EVENTS; i++)
        if (g->len[i] >= above) {
            rtg_json *pair = rtg_j_push(ev, rtg_j_arr());
            rtg_j_push(pair, rtg_j_int(g->start[i]));
            rtg_j_push(pair, rtg_j_int(g->start[i] + g->len[i]));
            listed++;
        }
}

static void report(const rtg_gaploop *g, const rtg_opts *o, rtg_result *res)
{
    size_t stored = rtg_gaploop_stored(g);
    rtg_gaploop_report(g, res);
    double run = (double)(g->t_end - g->t_begin);
    rtg_json *m = res->metrics;
    rtg_j_set(m, "gaps_per_second", rtg_j_scalar_num(run > 0 ? (double)g->n * 1e9 / run : 0, "1/s"));
    double share;
    double dom = dominant_interval(g, stored, &share);
    rtg_j_set(m, "dominant_period_ns", rtg_j_scalar_num(dom, "ns"));
    rtg_j_set(m, "dominant_share", rtg_j_scalar_num(share, "ratio"));
    char src[300] = "";
    long hz = config_hz(src, sizeof src);
    rtg_json *per = rtg_j_set(res->extra, "periodicity", rtg_j_obj());
    rtg_j_set(per, "dominant_period_ns", rtg_j_num(dom));
    rtg_j_set(per, "dominant_share", rtg_j_num(share));
    rtg_j_set(per, "config_hz", hz > 0 ? rtg_j_int(hz) : rtg_j_null());
    rtg_j_set(per, "config_hz_source", hz > 0 ? rtg_j_str(src) : rtg_j_null());
    if (hz > 0) {
        double tick = 1e9 / (double)hz;
        rtg_j_set(m, "tick_period_ns", rtg_j_scalar_num(tick, "ns"));
        rtg_j_set(per, "tick_period_ns", rtg_j_num(tick));
        rtg_j_set(per, "dominant_over_tick", rtg_j_num(dom / tick));
        rtg_j_set(per, "is_tick", rtg_j_bool(dom > 0 && fabs(dom / tick - 1) <= 0.05));
        split_tick_gaps(g, stored, tick, res, per);
    } else {
        rtg_j_set(per, "is_tick", rtg_j_null());
    }
    report_events(g, stored, rtg_opt_int(o, "events-above-ns"), res);
    rtg_micro_method(res, "gap: from the last clock reading before the CPU was taken away to the first after "
                          "it came back (consecutive readings more than --threshold-ns apart)");
}

static int tick_run(const rtg_opts *o, rtg_result *res)
{
    static rtg_gaploop g;
    memset(&g, 0, sizeof g);
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, false, 1, 0, NULL, NULL);
    if (status != RTG_EXIT_OK)
        return status;
    char err[512];
    rtg_clock_id cid;
    rtg_clock_parse(rtg_opt_str(o, "clock"), &cid);
    if (rtg_clock_init(&g.clock, cid, err, sizeof err) != 0) {
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    g.duration_ns = (int64_t)(rtg_opt_num(o, "duration-s") * 1e9);
    g.threshold_ns = rtg_opt_int(o, "threshold-ns");
    if (rtg_gaploop_alloc(&g, (size_t)rtg_opt_int(o, "max-gaps")) != 0) {
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu gaps; lower --max-gaps.", g.cap);
    }
    rtg_role loop = {"clock loop", rtg_gaploop_main, &g, 0, RTG_SCN_CPU, RTG_AT_STARTED, RTG_PRIM_SEM, 0};
    rtg_scn_add(&s, &loop);
    s.deadline_ends_run = true;   /* the deadline ends the loop early: what was measured is kept */
    status = rtg_scn_join(&s, res, "the loop");
    if (status == RTG_EXIT_OK)
        report(&g, o, res);
    if (rtg_scn_leaked(&s))
        return status;
    rtg_gaploop_free(&g);
    return status;
}

static const rtg_metric tick_metrics[] = {
    {"gap", RTG_METRIC_DISTRIBUTION, "ns", 0, "each gap above --threshold-ns the clock-reading loop saw"},
    {"gaps", RTG_METRIC_SCALAR, "count", 0, "gaps seen"},
    {"gaps_not_stored", RTG_METRIC_SCALAR, "count", 0, "gaps beyond --max-gaps, counted but not stored"},
    {"loops", RTG_METRIC_SCALAR, "count", 0, "iterations of the loop"},
    {"stolen_fraction", RTG_METRIC_SCALAR, "ratio", 0, "share of the run's time spent in gaps"},
    {"gaps_per_second", RTG_METRIC_SCALAR, "1/s", 0, "gaps per second of run"},
    {"run_ns", RTG_METRIC_SCALAR, "ns", 0, "length of the run"},
    {"dominant_period_ns", RTG_METRIC_SCALAR, "ns", 0, "the most common interval between gaps"},
    {"dominant_share", RTG_METRIC_SCALAR, "ratio", 0, "share of the intervals near the dominant period"},
    {"tick_period_ns", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "the kernel tick period, 10^9 / CONFIG_HZ (when CONFIG_HZ is known)"},
    {"tick_gap", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "the gaps that recur at the tick period (start on the tick's phase, shorter than half the period): CLK-P-DUR"},
    {"other_gap", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "every other gap: other interrupts and threads, host stalls (when the tick period is known)"},
    {"tick_gaps", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "gaps on the tick's phase"},
    {"ticks_in_run", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "tick periods in the run"},
    {"stalls", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "gaps of half a tick period or longer (a stall: never counted as a tick)"},
    {0},
};

const rtg_test rtg_test_tick = {
    .name = "tick",
    .summary = "CLK-P-DUR: gaps a tight clock-reading loop sees on one CPU (tick duration and periodicity)",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = tick_opts,
    .metrics = tick_metrics,
    .flags = RTG_TEST_RT,
    .run = tick_run,
};

/* periodic_report: a periodic run as a result's metrics and env (periodic_report.c). */
#ifndef RTG_PERIODIC_REPORT_H
#define RTG_PERIODIC_REPORT_H
#include "json.h"
#include "periodic/cycle.h"
#include "test.h"

/* The metrics rtg_periodic_put_metrics writes, declared once for the metric
 * tables of the tests that report a periodic run (test.h: rtg_metric): name,
 * kind, unit, what it means. Every one is also written per thread (NAME#i). */
#define RTG_PM_ti RTG_METRIC_DISTRIBUTION, "ns", "wake-up latency: the thread's wake-up minus its deadline"
#define RTG_PM_ts RTG_METRIC_DISTRIBUTION, "ns", "payload time of a cycle, from wake-up to the end of its work"
#define RTG_PM_tw RTG_METRIC_DISTRIBUTION, "ns", "slack: the next deadline minus the end of the cycle (below 0 is a miss)"
#define RTG_PM_misses RTG_METRIC_SCALAR, "count", "cycles that ended after the next deadline"
#define RTG_PM_skipped RTG_METRIC_SCALAR, "count", "deadlines already past after an overrun, skipped (--overrun skip)"
#define RTG_PM_cycles RTG_METRIC_SCALAR, "count", "cycles measured (cycles + skipped = deadlines elapsed)"
#define RTG_PM_dropped RTG_METRIC_SCALAR, "count", \
    "cycles lost to a full ring before the collector read them (should be 0)"
#define RTG_PM_ti_window_max RTG_METRIC_SERIES, "ns", "the largest ti of each window of --window-s"
/* The window counts (cfg.window_counts): one series each, for all threads together. */
#define RTG_PM_window_cycles RTG_METRIC_SERIES, "count", "the cycles (wake-ups) due in each window of --window-s, all threads"
#define RTG_PM_ti_window_sum RTG_METRIC_SERIES, "ns", \
    "the sum of the ti of each window's cycles, all threads (a window's average: this over window_cycles)"
#define RTG_PM_window_misses RTG_METRIC_SERIES, "count", "the cycles of each window that ended after the next deadline, all threads"
#define RTG_PM_window_skipped RTG_METRIC_SERIES, "count", "the deadlines due in each window that were skipped after an overrun, all threads"
#define RTG_PM_ROW_(name, kind, unit, help, flags, when) {name, kind, unit, RTG_METRIC_PER_THREAD | (flags), help when}
#define RTG_PM_ROW_AS_(name, kind, unit, help, flags, own) {name, kind, unit, RTG_METRIC_PER_THREAD | (flags), own}
#define RTG_PM_ROW(...) RTG_PM_ROW_(__VA_ARGS__)
#define RTG_PM_ROW_AS(...) RTG_PM_ROW_AS_(__VA_ARGS__)
/* A row of the merged thread only (not per thread): the window counts. */
#define RTG_PM_ROW_ALL_(name, kind, unit, help, flags, when) {name, kind, unit, (flags), help when}
#define RTG_PM_ROW_ALL(...) RTG_PM_ROW_ALL_(__VA_ARGS__)
#define RTG_PERIODIC_METRIC_ALL(name, flags, when) RTG_PM_ROW_ALL(#name, RTG_PM_##name, flags, when)
/* One row: RTG_METRIC_* flags added, `when` (a string literal, "" for none)
 * appended to the meaning, e.g. " (realtime and pretest)". */
#define RTG_PERIODIC_METRIC(name, flags, when) RTG_PM_ROW(#name, RTG_PM_##name, flags, when)
/* One row whose meaning the test words for itself (its cycles are bursts...). */
#define RTG_PERIODIC_METRIC_AS(name, flags, help) RTG_PM_ROW_AS(#name, RTG_PM_##name, flags, help)
/* The four rows of the window counts (a test that sets cfg.window_counts). */
#define RTG_PERIODIC_WINDOW_COUNTS(flags, when)                                                       \
    RTG_PERIODIC_METRIC_ALL(window_cycles, flags, when), RTG_PERIODIC_METRIC_ALL(ti_window_sum, flags, when), \
        RTG_PERIODIC_METRIC_ALL(window_misses, flags, when), RTG_PERIODIC_METRIC_ALL(window_skipped, flags, when)
/* All eight rows, in the order they are written. */
#define RTG_PERIODIC_METRICS(flags, when)                                                             \
    RTG_PERIODIC_METRIC(ti, flags, when), RTG_PERIODIC_METRIC(ts, flags, when),                      \
        RTG_PERIODIC_METRIC(tw, flags, when), RTG_PERIODIC_METRIC(misses, flags, when),              \
        RTG_PERIODIC_METRIC(skipped, flags, when), RTG_PERIODIC_METRIC(cycles, flags, when),         \
        RTG_PERIODIC_METRIC(dropped, flags, when), RTG_PERIODIC_METRIC(ti_window_max, flags, when)

/* Put the run into a result: metrics ti, ts, tw (dist), misses, cycles, dropped
 * skipped (scalar), ti_window_max (series), with cfg.window_counts the merged
 * window_cycles, ti_window_sum, window_misses, window_skipped (series), and per thread the same with suffix "#i"
 * (ti#0, misses#0, ...); env.threads = [{"index","cpu","tid","policy","priority",
 * "fallback","nvcsw","nivcsw"}], env.period_ns, run_start_ns, run_end_ns. With the host-stall observer running, also
 * env.stalls.metrics ti, ts, tw (and "#i"): touched cycles and the figures without. */
void rtg_periodic_report(const rtg_periodic_run *run, rtg_result *res);
/* env.period_ns (when the threads shared one period), env.run_start_ns and
 * env.run_end_ns: the run's own facts, written once here for every test that reports
 * a periodic run (rtg_periodic_report calls it; a test writing its own threads does). */
void rtg_periodic_put_env(const rtg_periodic_run *run, rtg_json *env);
/* One thread's (or the merged) Ti/Ts/Tw, cycles, misses... as metrics named
 * prefix + name + suffix (rtg_periodic_report uses "" and "#i"). */
void rtg_periodic_put_metrics(rtg_json *metrics, const rtg_periodic_thread *t, const char *prefix,
                              const char *suffix);
/* The env.threads entry of one thread (index, cpu, tid, policy, priority,
 * fallback, nvcsw, nivcsw); returns it so a test can add fields (e.g. a role). */
rtg_json *rtg_periodic_put_thread(rtg_json *threads, const rtg_periodic_thread *t, int index);

#endif

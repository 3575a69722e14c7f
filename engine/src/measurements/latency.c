/* latency: the cyclictest-class measurement. One measuring thread per CPU (or
 * --threads N pinned round-robin), each waking every --interval-us at absolute
 * deadlines with an empty payload; Ti is the wake-up latency. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stall.h"
#include "clock.h"
#include "periodic/periodic.h"
#include "rt.h"
#include "output.h"
#include "split.h"
#include "test.h"

static const rtg_opt latency_opts[] = {
    {"interval-us", RTG_OPT_INT, "1000", 50, 1000000, NULL, "wake-up period in microseconds"},
    {"duration-s", RTG_OPT_NUM, "10", 0.01, 31536000, NULL,
     "how long to measure, in seconds (ignored when --cycles is given)"},
    {"cycles", RTG_OPT_INT, NULL, 1, 1e12, NULL, "cycles per thread; wins over --duration-s"},
    {"threads", RTG_OPT_INT, NULL, 1, 1024, NULL,
     "measuring threads (default: one per CPU of --cpus or per allowed CPU), pinned round-robin"},
    {"clock", RTG_OPT_ENUM, "monotonic", 0, 0, "monotonic|tsc",
     "clock for the timestamps (tsc: invariant TSC calibrated against CLOCK_MONOTONIC)"},
    {"histogram", RTG_OPT_INT, NULL, 1, 1000000, NULL,
     "add a linear 1 us histogram of Ti up to MAX_US (like cyclictest -h)"},
    {"samples", RTG_OPT_STR, NULL, 0, 0, NULL, "write every cycle to FILE (docs/samples.md)"},
    {"samples-format", RTG_OPT_ENUM, "csv", 0, 0, "csv|binary", "format of --samples"},
    {"status", RTG_OPT_STR, NULL, 0, 0, NULL,
     "write one JSON line per window of --window-s to FILE (fd:N: to the open descriptor N): per "
     "thread its cycles, min/avg/max/p99 of ti, misses, skipped deadlines and overflows, for a live view "
     "(docs/samples.md); its size per window does not depend on the rate"},
    {"window-s", RTG_OPT_NUM, "1", 0.001, 3600, NULL, "window of the ti_window_max series and the window counts, in seconds"},
    {"max-latency-us", RTG_OPT_INT, NULL, 1, 1e9, NULL,
     "fail the run (exit 3, verdict max_latency) when any wake-up is later than LIMIT us"},
    {"break", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "with --max-latency-us: stop at the first wake-up above the limit (like cyclictest -b)"},
    {"overrun", RTG_OPT_ENUM, "skip", 0, 0, "skip|catch-up",
     "after a late cycle: skip the deadlines already past, counted as skipped (like cyclictest), "
     "or catch up by running them back to back"},
    {"start-delay-ms", RTG_OPT_INT, "100", 0, 60000, NULL,
     "first deadline this long after the threads are ready"},
    {"start-at-ns", RTG_OPT_INT, NULL, 1, 9.2e18, NULL,
     "first deadline at this CLOCK_MONOTONIC instant (aligns a run with another process)"},
    {"split", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "split Ti into ti_irq (deadline -> timer interrupt) and ti_sched (interrupt -> thread "
     "running) from the kernel's timer and sched trace events (root, tracefs; tracefs is mounted at "
     "/sys/kernel/tracing when it is not, as rtla does)"},
    {"no-mount-tracefs", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "with --split: refuse instead of mounting tracefs when it is not mounted"},
    {0},
};

/* CPUs of the measuring threads: thread i on cpus[i % ncpus]. */
static int assign_cpus(const rtg_opts *o, rtg_periodic_cfg *cfg)
{
    static int cpus[RTG_MAX_CPUS];
    int ncpus = rtg_opt_given(o, "cpus") ? rtg_opt_cpus(o, "cpus", cpus, RTG_MAX_CPUS)
                                         : rtg_allowed_cpus(cpus, RTG_MAX_CPUS);
    if (ncpus < 1)
        return -1;
    cfg->nthreads = rtg_opt_given(o, "threads") ? (int)rtg_opt_int(o, "threads") : ncpus;
    for (int i = 0; i < cfg->nthreads; i++)
        cfg->cpus[i] = cpus[i % ncpus];
    return 0;
}

static FILE *open_samples(const rtg_opts *o, rtg_periodic_cfg *cfg, rtg_output *file, rtg_result *res, int *status)
{
    const char *path = rtg_opt_str(o, "samples");
    *status = RTG_EXIT_OK;
    if (!path)
        return NULL;
    cfg->samples_binary = strcmp(rtg_opt_str(o, "samples-format"), "binary") == 0;
    char why[256];
    if (rtg_output_open(file, path, RTG_OUTPUT_GROWING, why, sizeof why) != 0) {
        *status = rtg_fail(res, RTG_EXIT_FAIL, "cannot write --samples %.200s (%s); give a regular file path.",
                           path, why);
        return NULL;
    }
    return file->f;
}

/* --status FILE, or fd:N for a descriptor the caller left open. */
static FILE *open_status(const rtg_opts *o, rtg_output *file, rtg_result *res, int *status)
{
    const char *path = rtg_opt_str(o, "status");
    *status = RTG_EXIT_OK;
    if (!path)
        return NULL;
    bool fd_form = strncmp(path, "fd:", 3) == 0;
    if (fd_form || rtg_output_stream_fd(path) >= 0) {
        /* a reader that closes its end must not end the measurement (status.h) */
        struct sigaction ign;   /* sigaction, not signal(): POSIX names one behaviour */
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGPIPE, &ign, NULL);
    }
    if (fd_form) {
        char *end;
        long fd = strtol(path + 3, &end, 10);
        if (path[3] == '\0' || *end != '\0' || fd < 0 || fd > 1 << 20) {
            *status = rtg_fail(res, RTG_EXIT_USAGE, "--status %s is not fd:N with N a descriptor number; "
                               "give a file or fd:3.", path);
            return NULL;
        }
        int dupped = dup((int)fd);
        FILE *f = dupped < 0 ? NULL : fdopen(dupped, "w");
        if (!f) {
            if (dupped >= 0)
                close(dupped);
            *status = rtg_fail(res, RTG_EXIT_FAIL, "cannot write --status %s (%s); pass an open descriptor.",
                               path, strerror(errno));
        }
        return f;
    }
    char why[256];
    if (rtg_output_open(file, path, RTG_OUTPUT_GROWING, why, sizeof why) != 0) {
        *status = rtg_fail(res, RTG_EXIT_FAIL, "cannot write --status %.200s (%s); give a regular file path or "
                           "fd:N.", path, why);
        return NULL;
    }
    return file->f;
}

/* The status is a view: a write that failed is not the measurement's failure (status.h). */
static void close_status(rtg_periodic_cfg *cfg, rtg_output *file)
{
    if (file->f)
        rtg_output_close(file, true, NULL, 0);
    else if (cfg->status)
        fclose(cfg->status);   /* fd:N */
}

static int latency_run(const rtg_opts *o, rtg_result *res)
{
    static rtg_periodic_cfg cfg;   /* large (cpu table); not on the stack */
    char err[512];
    if (rtg_opt_flag(o, "no-mount-tracefs") && !rtg_opt_flag(o, "split"))
        return rtg_fail(res, RTG_EXIT_USAGE, "--no-mount-tracefs only applies with --split; add --split or drop it.");
    memset(&cfg, 0, sizeof cfg);
    if (assign_cpus(o, &cfg) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    rtg_policy_parse(rtg_opt_str(o, "policy"), &cfg.policy);
    cfg.priority = (int)rtg_opt_int(o, "priority");
    cfg.allow_fallback = rtg_opt_flag(o, "allow-fallback");
    cfg.period_ns = rtg_opt_int(o, "interval-us") * 1000;
    cfg.catch_up = strcmp(rtg_opt_str(o, "overrun"), "catch-up") == 0;
    cfg.start_delay_ns = rtg_opt_int(o, "start-delay-ms") * 1000000;
    if (rtg_opt_given(o, "start-at-ns")) {
        cfg.start_at_ns = rtg_opt_int(o, "start-at-ns");
        if (cfg.start_at_ns < rtg_mono_ns() + 10000000)
            return rtg_fail(res, RTG_EXIT_USAGE,
                            "--start-at-ns %lld is not at least 10 ms in the future (now is %lld); give a later instant.",
                            (long long)cfg.start_at_ns, (long long)rtg_mono_ns());
        if (cfg.start_at_ns > rtg_mono_ns() + RTG_START_AT_MAX_NS)
            return rtg_fail(res, RTG_EXIT_USAGE,
                            "--start-at-ns %lld is more than a day in the future (now is %lld); give an instant within a day.",
                            (long long)cfg.start_at_ns, (long long)rtg_mono_ns());
    }
    if (rtg_opt_given(o, "cycles"))
        cfg.cycles = (uint64_t)rtg_opt_int(o, "cycles");
    else
        cfg.duration_ns = (int64_t)(rtg_opt_num(o, "duration-s") * 1e9);
    rtg_clock_id cid;
    rtg_clock_parse(rtg_opt_str(o, "clock"), &cid);
    if (rtg_clock_init(&cfg.clock, cid, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    cfg.window_ns = (int64_t)(rtg_opt_num(o, "window-s") * 1e9);
    cfg.window_counts = true;   /* a window's average and late periods (docs/engine.md) */
    if (rtg_opt_given(o, "histogram")) {
        cfg.lin_bucket_ns = 1000;
        cfg.lin_buckets = (size_t)rtg_opt_int(o, "histogram");
    }
    bool limited = rtg_opt_given(o, "max-latency-us");
    int64_t limit_ns = limited ? rtg_opt_int(o, "max-latency-us") * 1000 : 0;
    if (limited && rtg_opt_flag(o, "break"))
        cfg.stop_above_ns = limit_ns;
    int status;
    rtg_output samples_file = {0}, status_file = {0};   /* output.h: growing files, renamed in at once */
    cfg.samples = open_samples(o, &cfg, &samples_file, res, &status);
    if (status != RTG_EXIT_OK)
        return status;
    cfg.status = open_status(o, &status_file, res, &status);
    if (status != RTG_EXIT_OK) {
        rtg_output_close(&samples_file, true, NULL, 0);
        return status;
    }

    rtg_split *split = NULL;
    if (rtg_opt_flag(o, "split")) {
        char note[256];
        split = rtg_split_start(cfg.cpus, cfg.nthreads, !rtg_opt_flag(o, "no-mount-tracefs"), note,
                                sizeof note, err, sizeof err);
        if (note[0])    /* the measurement says what it changed on the system */
            rtg_j_push(rtg_j_set(res->env, "notes", rtg_j_arr()), rtg_j_str(note));
        if (!split) {
            rtg_output_close(&samples_file, true, NULL, 0);
            close_status(&cfg, &status_file);
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
        }
    }
    rtg_stall_start(res, cfg.cpus, cfg.nthreads, cfg.policy);   /* host stalls beside the run (stall.h) */
    rtg_periodic_run run;
    int rc = rtg_periodic(&cfg, &run, err, sizeof err);
    rtg_split_stop(split);
    char why[256];
    if (cfg.samples && rtg_output_close(&samples_file, true, why, sizeof why) != 0 && rc == 0) {
        rtg_json *notes = rtg_j_get(res->env, "notes");
        rtg_j_push(notes ? notes : rtg_j_set(res->env, "notes", rtg_j_arr()),
                   rtg_j_strf("the --samples file is incomplete: its last write failed (%s)", why));
    }
    close_status(&cfg, &status_file);
    if (rc != 0) {
        rtg_split_free(split);
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    rtg_periodic_report(&run, res);
    if (split) {
        int tids[RTG_MAX_CPUS];
        int n = run.nthreads < RTG_MAX_CPUS ? run.nthreads : RTG_MAX_CPUS;
        for (int i = 0; i < n; i++)
            tids[i] = run.t[i].tid;
        rtg_split_report(split, tids, n, res);
        rtg_split_free(split);
    }
    rtg_json *jc = rtg_j_set(res->env, "cpus", rtg_j_arr());
    for (int i = 0; i < cfg.nthreads; i++) {
        bool seen = false;
        for (int k = 0; k < i; k++)
            seen = seen || cfg.cpus[k] == cfg.cpus[i];
        if (!seen)
            rtg_j_push(jc, rtg_j_int(cfg.cpus[i]));
    }
    status = RTG_EXIT_OK;
    if (limited) {
        bool pass = run.all.ti.count > 0 ? run.all.ti.max <= limit_ns : true;
        rtg_verdict(res, "max_latency", pass,
                    "max wake-up latency %.1f us %s the limit %lld us%s",
                    run.all.ti.count ? (double)run.all.ti.max / 1000.0 : 0.0,
                    pass ? "is within" : "exceeds", (long long)(limit_ns / 1000),
                    run.stopped_above ? " (run stopped at the first breach)" : "");
        if (!pass)
            status = RTG_EXIT_VERDICT;
    }
    rtg_periodic_free(&run);
    return status;
}

static const rtg_metric latency_metrics[] = {
    RTG_PERIODIC_METRICS(0, ""),
    RTG_PERIODIC_WINDOW_COUNTS(0, ""),
    {"ti_irq", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_PER_THREAD | RTG_METRIC_CONDITIONAL,
     "with --split: the deadline to the timer interrupt handling the thread's timer"},
    {"ti_sched", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_PER_THREAD | RTG_METRIC_CONDITIONAL,
     "with --split: the timer interrupt to the thread running"},
    {"split_lost", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "with --split: trace events the kernel dropped (the split is then incomplete)"},
    {"split_unmatched", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "with --split: wake-ups seen without their timer's expiry"},
    {0},
};

const rtg_test rtg_test_latency = {
    .name = "latency",
    .summary = "wake-up latency of periodic threads at absolute deadlines (cyclictest-class)",
    .kind = RTG_KIND_LATENCY,
    .opts = latency_opts,
    .metrics = latency_metrics,
    .flags = RTG_TEST_RT,
    .run = latency_run,
};

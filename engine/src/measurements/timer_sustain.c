/* timer-sustain (IRQ_S_SUS analogue): the shortest period at which a periodic
 * interrupt source is served without losing one expiration. The source is a POSIX
 * timer (CLOCK_MONOTONIC, timer_create, its expiry a signal); the thread serving
 * it runs at --policy/--priority pinned to one CPU and takes each expiration with
 * sigtimedwait. An expiration that comes while the previous one is still
 * unserved is lost: the kernel counts it as an overrun (timer_getoverrun), as
 * the published test counts interrupts the system missed. Each probe runs one
 * period for --probe-s (at least 100 expirations); the sweep starts at
 * --max-period-us and halves the period while a probe loses nothing, down to
 * --min-period-us; at the first lossy period it bisects between the last
 * loss-free period and it, to --precision-pct or --max-probes. A lossy probe is
 * repeated --retries times and the period counts as lossy only when every attempt
 * lost (one host stall on a virtual machine loses an expiration at any period;
 * the rule of the tire sweep's late probes).  Bounded: every
 * probe ends by its own clock at twice its planned length plus 0.5 s, and there
 * are at most --max-probes of them. POSIX interfaces only (timer_create,
 * sigtimedwait, timer_getoverrun), so the POSIX-only build has it too.
 * The host-stall observer (stall.h) runs beside it: an expiration lost while the
 * observer saw the whole machine stopped (a VM's host stall) is counted as such in
 * its probe (lost_in_stalls), so a reader can tell a period the system could not
 * serve from one a stall of the host broke. The search itself stays strict: any
 * lost expiration makes an attempt lossy. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "rt.h"
#include "stall.h"
#include "test.h"

static const rtg_opt sustain_opts[] = {
    {"max-period-us", RTG_OPT_INT, "1000", 2, 1000000, NULL, "first (longest) period probed"},
    {"min-period-us", RTG_OPT_INT, "10", 1, 1000000, NULL, "shortest period probed"},
    {"probe-s", RTG_OPT_NUM, "0.5", 0.01, 60, NULL, "length of one probe (at least 100 expirations)"},
    {"precision-pct", RTG_OPT_NUM, "10", 0.1, 50, NULL,
     "bisection stops when the lossy period is within this share of the loss-free one"},
    {"retries", RTG_OPT_INT, "1", 0, 10, NULL,
     "a lossy probe is repeated this many times; the period is lossy only when every attempt lost"},
    {"max-probes", RTG_OPT_INT, "24", 1, 100, NULL, "probes at most, retries included (the sweep's bound)"},
    {0},
};

#define MAX_PROBES 100
#define MIN_EXPIRATIONS 100
#define MAX_LOSSES 64        /* losses per probe judged against the stalls; more count as outside */

typedef struct {
    int64_t period_ns, expirations, lost, max_late_ns, lost_in_stalls;
    int attempt;
    bool completed;
} probe;

/* Where a probe lost expirations: between the expiration served before (from) and the
 * one whose overrun count said so (to). Judged against the observer's stalls once the
 * probe is over and the observer has caught up (rtg_stall_sync). */
typedef struct {
    int64_t from, to, lost;
} loss;

static int run_probe(int signo, int64_t period_ns, double probe_s, probe *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->period_ns = period_ns;
    int64_t want = (int64_t)(probe_s * 1e9) / period_ns;
    if (want < MIN_EXPIRATIONS)
        want = MIN_EXPIRATIONS;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_SIGNAL;
    sev.sigev_signo = signo;
    timer_t tm;
    if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0) {
        snprintf(err, errlen, "timer_create failed (%s).", strerror(errno));
        return -1;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    int64_t first = rtg_mono_ns() + 1000000;
    int64_t limit = first + 2 * want * period_ns + 500000000;
    struct itimerspec its = {.it_interval = rtg_ns_timespec(period_ns), .it_value = rtg_ns_timespec(first)};
    if (timer_settime(tm, TIMER_ABSTIME, &its, NULL) != 0) {
        snprintf(err, errlen, "timer_settime failed (%s).", strerror(errno));
        timer_delete(tm);
        return -1;
    }
    struct timespec poll = {0, 100000000};
    static loss losses[MAX_LOSSES];
    int nl = 0;
    int64_t served = first - period_ns;     /* when the expiration before was taken */
    while (p->expirations < want && !rtg_stop) {
        siginfo_t si;
        int got = sigtimedwait(&set, &si, &poll);
        int64_t now = rtg_mono_ns();
        if (got == signo) {
            int ov = timer_getoverrun(tm);
            if (ov < 0)
                ov = 0;
            p->expirations += 1 + ov;
            p->lost += ov;
            if (ov > 0 && nl < MAX_LOSSES)
                losses[nl++] = (loss){served, now, ov};
            served = now;
            int64_t late = now - (first + (p->expirations - 1) * period_ns);
            if (late > p->max_late_ns)
                p->max_late_ns = late;
        }
        if (now > limit)
            break;
    }
    p->completed = p->expirations >= want;
    struct itimerspec off = {{0, 0}, {0, 0}};
    timer_settime(tm, 0, &off, NULL);
    timer_delete(tm);
    /* a signal of the last expiration may still be pending: take it */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&set, NULL, &zero) == signo) {
    }
    if (nl > 0) {
        rtg_stall_sync();   /* a stall that ended with the probe is recorded */
        for (int i = 0; i < nl; i++)
            if (rtg_stall_touches(losses[i].from, losses[i].to))
                p->lost_in_stalls += losses[i].lost;
    }
    return 0;
}

static int sustain_run(const rtg_opts *o, rtg_result *res)
{
    int64_t max_p = rtg_opt_int(o, "max-period-us") * 1000, min_p = rtg_opt_int(o, "min-period-us") * 1000;
    double precision = rtg_opt_num(o, "precision-pct") / 100.0;
    int retries = (int)rtg_opt_int(o, "retries");
    double probe_s = rtg_opt_num(o, "probe-s");
    int max_probes = (int)rtg_opt_int(o, "max-probes");
    if (min_p > max_p)
        return rtg_fail(res, RTG_EXIT_USAGE, "--min-period-us (%lld) is above --max-period-us (%lld); swap them.",
                        (long long)(min_p / 1000), (long long)(max_p / 1000));
    int cpus[RTG_MAX_CPUS];
    int n = rtg_opt_given(o, "cpus") ? rtg_opt_cpus(o, "cpus", cpus, RTG_MAX_CPUS)
                                     : rtg_allowed_cpus(cpus, RTG_MAX_CPUS);
    if (n < 1)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU to run on.");
    int cpu = rtg_opt_given(o, "cpus") ? cpus[0] : cpus[n - 1];
    char err[300];
    /* the timer's signal is process-directed: blocked before any thread is started (the
     * observer inherits the mask), or it would be delivered to that thread and kill it */
    int signo = SIGRTMIN + 2;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    rtg_policy policy = RTG_POL_FIFO;
    const char *pol = rtg_opt_str(o, "policy");
    if (pol)
        rtg_policy_parse(pol, &policy);
    /* host stalls beside the sweep (stall.h), its observer placed off the measured CPU
     * before this thread is pinned there (a pinned thread's threads see one CPU) */
    rtg_stall_start(res, &cpu, 1, policy);
#ifndef RTG_POSIX_ONLY
    if (rtg_pin_cpu(cpu, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
#else
    cpu = -1;
#endif
    rtg_prefault_stack(16 * 1024);

    static probe probes[MAX_PROBES];
    int np = 0;
    int64_t good = 0, bad = 0, p = max_p;
    while (np < max_probes && !rtg_stop) {
        bool ok = false;
        for (int attempt = 0; attempt <= retries && np < max_probes && !rtg_stop && !ok; attempt++) {
            if (run_probe(signo, p, probe_s, &probes[np], err, sizeof err) != 0)
                return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
            probes[np].attempt = attempt;
            ok = probes[np].completed && probes[np].lost == 0;
            np++;
        }
        if (rtg_stop || (!ok && np == max_probes && probes[np - 1].attempt < retries))
            break;                       /* interrupted, or out of probes before the retries said lossy */
        if (ok)
            good = p;
        else
            bad = p;
        if (!good)                       /* lost at the longest period: nothing shorter can hold */
            break;
        if (!bad) {                      /* halving while nothing is lost */
            if (p == min_p)
                break;
            p = p / 2 > min_p ? p / 2 : min_p;
            continue;
        }
        if ((double)(good - bad) <= precision * (double)good)
            break;
        p = (good + bad) / 2 / 1000 * 1000;   /* whole microseconds */
        if (p <= bad || p >= good)
            break;
    }

    rtg_json *m = res->metrics;
    rtg_json *sw = rtg_j_set(res->extra, "sweep", rtg_j_obj());
    if (good) {
        rtg_j_set(m, "shortest_period", rtg_j_scalar_int(good, "ns"));
        for (int i = np - 1; i >= 0; i--)
            if (probes[i].period_ns == good) {
                rtg_j_set(m, "expirations_at_shortest", rtg_j_scalar_int(probes[i].expirations, "count"));
                break;
            }
    }
    if (bad)
        rtg_j_set(m, "first_lossy_period", rtg_j_scalar_int(bad, "ns"));
    int64_t lost = 0, in_stalls = 0;
    for (int i = 0; i < np; i++)
        lost += probes[i].lost, in_stalls += probes[i].lost_in_stalls;
    rtg_j_set(m, "probes", rtg_j_scalar_int(np, "count"));
    rtg_j_set(m, "lost", rtg_j_scalar_int(lost, "count"));
    if (rtg_stall_observing())
        rtg_j_set(m, "lost_in_stalls", rtg_j_scalar_int(in_stalls, "count"));
    /* what the shortest period means: a bound where the sweep stopped at its floor */
    const char *limit = !good ? "lost at the longest period probed"
                        : !bad ? "nothing lost down to --min-period-us: the shortest period is at or below it"
                        : (double)(good - bad) <= precision * (double)good ? "bisected to --precision-pct"
                        : "stopped by --max-probes or an interruption before --precision-pct";
    rtg_j_set(sw, "limit", rtg_j_str(limit));
    rtg_j_set(sw, "shortest_is_bound", rtg_j_bool(good && !bad));
    rtg_j_set(sw, "source", rtg_j_str("POSIX timer (CLOCK_MONOTONIC) signal, served by one thread with sigtimedwait; "
                                      "lost = timer_getoverrun"));
    rtg_json *arr = rtg_j_set(sw, "probes", rtg_j_arr());
    for (int i = 0; i < np; i++) {
        rtg_json *x = rtg_j_push(arr, rtg_j_obj());
        rtg_j_set(x, "period_ns", rtg_j_int(probes[i].period_ns));
        rtg_j_set(x, "expirations", rtg_j_int(probes[i].expirations));
        rtg_j_set(x, "lost", rtg_j_int(probes[i].lost));
        if (rtg_stall_observing())
            rtg_j_set(x, "lost_in_stalls", rtg_j_int(probes[i].lost_in_stalls));
        rtg_j_set(x, "max_late_ns", rtg_j_int(probes[i].max_late_ns));
        rtg_j_set(x, "completed", rtg_j_bool(probes[i].completed));
        rtg_j_set(x, "attempt", rtg_j_int(probes[i].attempt));
    }
    rtg_j_set(res->env, "measure_cpu", rtg_j_int(cpu));
    return RTG_EXIT_OK;
}

static const rtg_metric sustain_metrics[] = {
    {"shortest_period", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL,
     "IRQ_S_SUS analogue: the shortest period probed with no expiration lost (absent when the longest lost)"},
    {"first_lossy_period", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL,
     "the longest period probed that lost an expiration (absent when none did)"},
    {"expirations_at_shortest", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "expirations served without a loss at the shortest period"},
    {"probes", RTG_METRIC_SCALAR, "count", 0, "probes run"},
    {"lost", RTG_METRIC_SCALAR, "count", 0, "expirations lost over every probe"},
    {"lost_in_stalls", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "of those, lost while the host-stall observer saw the machine stopped (absent where no observer ran)"},
    {0},
};

const rtg_test rtg_test_timer_sustain = {
    .name = "timer-sustain",
    .summary = "IRQ_S_SUS analogue: the shortest period of a POSIX timer served by one thread without a lost "
               "expiration (overruns counted, the period swept downward)",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = sustain_opts,
    .metrics = sustain_metrics,
    .flags = RTG_TEST_RT,
    .run = sustain_run,
};

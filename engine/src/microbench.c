/* microbench: see microbench.h. */
#include "portable.h"
#include "microbench.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "json.h"
#include "samples.h"
#include "stall.h"

_Atomic int rtg_micro_abort;

#define WATCH_SLICE_NS 50000000LL
#define GRACE_NS 2000000000LL

/* The last CPU of the list that is not cpu, or -1 when cpu is the only one. */
static int other_cpu(const int *cpus, int n, int cpu)
{
    for (int i = n - 1; i >= 0; i--)
        if (cpus[i] != cpu)
            return cpus[i];
    return -1;
}

/* The watchdog outranks every worker (99) so a runaway worker cannot starve it,
 * and sits on another CPU so its 50 ms wake-ups do not disturb the measurement. */
static void become_watchdog(rtg_bench *b)
{
    int all[RTG_MAX_CPUS];
    int n = rtg_allowed_cpus(all, RTG_MAX_CPUS);
    b->watchdog_cpu = other_cpu(all, n, b->cpu);
    char err[256];
    if (b->watchdog_cpu >= 0)
        rtg_pin_cpu(b->watchdog_cpu, err, sizeof err);
    if (b->policy != RTG_POL_OTHER) {
        rtg_sched s;
        rtg_sched_apply(&s, RTG_POL_FIFO, 99, true, err, sizeof err);
    }
}

int rtg_micro_setup(rtg_bench *b, const rtg_opts *o, rtg_result *res, bool needs_priorities)
{
    return rtg_micro_setup_timeout(b, o, res, needs_priorities, (int64_t)(rtg_opt_num(o, "timeout-s") * 1e9));
}

int rtg_micro_setup_timeout(rtg_bench *b, const rtg_opts *o, rtg_result *res, bool needs_priorities,
                            int64_t timeout)
{
    memset(b, 0, sizeof *b);
    atomic_store(&rtg_micro_abort, 0);
    b->ncpus = rtg_opt_given(o, "cpus") ? rtg_opt_cpus(o, "cpus", b->cpus, RTG_MAX_CPUS)
                                        : rtg_allowed_cpus(b->cpus, RTG_MAX_CPUS);
    if (b->ncpus < 1)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    b->cpu = rtg_opt_given(o, "cpus") ? b->cpus[0] : b->cpus[b->ncpus - 1];
    b->spread = rtg_opt_given(o, "cpus") && b->ncpus > 1;
    rtg_policy_parse(rtg_opt_str(o, "policy"), &b->policy);
    /* main applied the policy to this thread; under --allow-fallback it may be other */
    if (rtg_opt_flag(o, "allow-fallback") && sched_getscheduler(0) == SCHED_OTHER)
        b->policy = RTG_POL_OTHER;
    if (needs_priorities && b->policy == RTG_POL_OTHER) {
        rtg_policy asked;
        rtg_policy_parse(rtg_opt_str(o, "policy"), &asked);
        if (asked != RTG_POL_OTHER) {   /* --allow-fallback gave other: nothing to fall back to */
            char emu[200];
            if (rtg_emulation(emu, sizeof emu) == 1)
                return rtg_fail(res, RTG_EXIT_FAIL, "%s is not real time here: %s; run the engine on a "
                                "machine of its architecture.", rtg_policy_name(asked), emu);
            return rtg_fail(res, RTG_EXIT_FAIL,
                            "this test relies on real-time priority order, but %s could not be had here "
                            "(--allow-fallback fell back to other); run as root or with CAP_SYS_NICE.",
                            rtg_policy_name(asked));
        }
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "this test relies on real-time priority order, which --policy other cannot give; "
                        "use --policy fifo or rr (as root or with CAP_SYS_NICE).");
    }
    b->priority = (int)rtg_opt_int(o, "priority");
    b->deadline_ns = rtg_mono_ns() + timeout;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    b->deadline_rt = rtg_ns_timespec(rtg_timespec_ns(&rt) + timeout);
    /* the host-stall observer goes off the measured CPUs (with the watchdog);
     * before the watchdog pins this thread, which narrows the allowed CPUs */
    rtg_stall_start(res, b->spread ? b->cpus : &b->cpu, b->spread ? b->ncpus : 1, b->policy);
    become_watchdog(b);
    rtg_j_set(res->env, "measure_cpu", rtg_j_int(b->cpu));
    rtg_j_set(res->env, "watchdog_cpu", b->watchdog_cpu >= 0 ? rtg_j_int(b->watchdog_cpu) : rtg_j_null());
    rtg_j_set(res->env, "timeout_ns", rtg_j_int(timeout));
    return RTG_EXIT_OK;
}

static void raise_abort(void (*unblock)(void *), void *ctx)
{
    atomic_store(&rtg_micro_abort, 1);
    if (unblock)
        unblock(ctx);
}

int rtg_micro_join(rtg_bench *b, pthread_t *th, int n, void (*unblock)(void *), void *ctx)
{
    int left = 0;
    bool aborted = false;
    for (int i = 0; i < n; i++) {
        for (;;) {
            int64_t now = rtg_mono_ns();
            int64_t limit = aborted ? b->deadline_ns + GRACE_NS : b->deadline_ns;
            if (!aborted && (rtg_stop || now >= b->deadline_ns)) {
                b->timed_out = !rtg_stop;
                aborted = true;
                raise_abort(unblock, ctx);
                continue;
            }
            if (aborted && now >= limit) {
                left = n - i;   /* give up: the process exit ends them */
                return left;
            }
            int64_t until = now + WATCH_SLICE_NS < limit ? now + WATCH_SLICE_NS : limit;
            struct timespec ts = rtg_ns_timespec(until);
            int rc = rtg_join_until(th[i], NULL, &ts);
            if (rc == 0)
                break;
            if (aborted && unblock)
                unblock(ctx);
        }
    }
    return left;
}

int rtg_samples_init(rtg_samples *s, size_t cap)
{
    s->n = 0;
    s->cap = cap;
    s->v = calloc(cap ? cap : 1, sizeof *s->v);
    s->at = calloc(cap ? cap : 1, sizeof *s->at);
    if (!s->v || !s->at) {
        free(s->v), free(s->at);
        s->v = s->at = NULL;
        return -1;
    }
    rtg_touch(s->v, (cap ? cap : 1) * sizeof *s->v);   /* touched before the run (a memset after calloc is optimised away) */
    rtg_touch(s->at, (cap ? cap : 1) * sizeof *s->at);
    return 0;
}

void rtg_samples_free(rtg_samples *s)
{
    free(s->v);
    free(s->at);
    s->v = s->at = NULL;
    s->n = s->cap = 0;
}

void rtg_samples_report(rtg_result *res, const char *name, const rtg_samples *s)
{
    rtg_dist d;
    if (rtg_dist_init(&d, 0, 0) != 0)
        return;
    rtg_dist_add_array(&d, s->v, s->n);
    rtg_j_set(res->metrics, name, rtg_j_dist(&d, "ns"));
    rtg_dist_free(&d);
    if (!rtg_stall_observing())
        return;
    rtg_stall_sync();   /* a stall that ended with the last sample is recorded */
    rtg_dist clean;
    if (rtg_dist_init(&clean, 0, 0) != 0)
        return;
    uint64_t touched = 0, unknown = 0;
    for (size_t i = 0; i < s->n; i++) {
        bool known = s->at && s->at[i] != 0;
        if (!known)
            unknown++;   /* no span: kept, it cannot be judged */
        else if (rtg_stall_touches(s->at[i], s->at[i] + s->v[i])) {
            touched++;
            continue;
        }
        rtg_dist_add(&clean, s->v[i]);
    }
    rtg_stall_put_metric(res, name, touched, unknown, &clean);
    rtg_dist_free(&clean);
}

void rtg_micro_method(rtg_result *res, const char *what)
{
    rtg_json *m = rtg_j_set(res->extra, "method", rtg_j_obj());
    rtg_j_set(m, "timed", rtg_j_str(what));
    rtg_j_set(m, "correction", rtg_j_str("none: every sample includes the cost of one timestamp read "
                                         "(env.timestamp_cost_ns); nothing is subtracted"));
}

void rtg_sleep_until(int64_t t_ns)
{
    struct timespec ts = rtg_ns_timespec(t_ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !rtg_micro_stopping())
        ;
}

void rtg_busy_ns(int64_t ns)
{
    int64_t end = rtg_mono_ns() + ns;
    while (rtg_mono_ns() < end && !rtg_micro_stopping())
        ;
}

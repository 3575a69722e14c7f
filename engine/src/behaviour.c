/* behaviour: threads, bounded waits, /proc facts, locks and the inversion
 * scenario shared by the behaviour tests (see behaviour.h). */
#include "behaviour.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "portable.h"
#include "scenario.h"

#define LOOK_NS 20000LL   /* between two looks at a thread's state */

static int os_policy(rtg_policy p)
{
    return p == RTG_POL_FIFO ? SCHED_FIFO : p == RTG_POL_RR ? SCHED_RR : SCHED_OTHER;
}

int rtg_behav_cpu(const rtg_opts *o)
{
    int cpus[RTG_MAX_CPUS];
    if (rtg_opt_given(o, "cpus") && rtg_opt_cpus(o, "cpus", cpus, RTG_MAX_CPUS) > 0)
        return cpus[0];
    int n = rtg_allowed_cpus(cpus, RTG_MAX_CPUS);
    return n > 0 ? cpus[n - 1] : -1;
}

int rtg_behav_other_cpu(int cpu)
{
    int cpus[RTG_MAX_CPUS];
    int n = rtg_allowed_cpus(cpus, RTG_MAX_CPUS);
    for (int i = 0; i < n; i++)
        if (cpus[i] != cpu)
            return cpus[i];
    return -1;
}

int rtg_behav_self(int cpu, rtg_policy pol, int prio, char *err, size_t errlen)
{
    if (rtg_pin_cpu(cpu, err, errlen) != 0)
        return -1;
    char emu[200];
    if (pol != RTG_POL_OTHER && rtg_emulation(emu, sizeof emu) == 1) {
        snprintf(err, errlen, "%s is not real time here: %s; run the engine on a machine of its "
                 "architecture.", rtg_policy_name(pol), emu);
        return -1;
    }
    struct sched_param sp = {.sched_priority = pol == RTG_POL_OTHER ? 0 : prio};
    int rc = pthread_setschedparam(pthread_self(), os_policy(pol), &sp);
    if (rc != 0) {
        snprintf(err, errlen, "could not set %s priority %d on the controlling thread (%s); run as root or grant CAP_SYS_NICE.",
                 rtg_policy_name(pol), prio, strerror(rc));
        return -1;
    }
    return 0;
}

int rtg_behav_start(pthread_t *th, void *(*fn)(void *), void *arg, int cpu, rtg_policy pol, int prio,
                 char *err, size_t errlen)
{
    return rtg_spawn_thread(th, pol, prio, cpu, 256, fn, arg, err, errlen) == 0 ? 0 : -1;
}

int rtg_behav_tid(void)
{
    return rtg_thread_tid();
}

int64_t rtg_behav_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return rtg_timespec_ns(&ts);
}

void rtg_behav_sleep_ns(int64_t ns)
{
    struct timespec ts = rtg_ns_timespec(ns);
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* The fields of /proc/self/task/TID/stat after "(comm)", space separated. */
static bool read_stat_fields(int tid, char *buf, size_t len, char **after)
{
#ifdef RTG_POSIX_ONLY
    (void)tid, (void)buf, (void)len, (void)after;
    return false;   /* no /proc in the POSIX-only build: unknown */
#endif
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');   /* comm may hold spaces or ')' */
    if (!p || p[1] != ' ')
        return false;
    *after = p + 2;
    return true;
}

char rtg_behav_task_state(int tid)
{
    char buf[1024], *a;
    return read_stat_fields(tid, buf, sizeof buf, &a) ? a[0] : 0;
}

bool rtg_behav_wait_blocked(int tid, rtg_prim prim, int64_t timeout_ns)
{
    int64_t end = rtg_mono_ns() + timeout_ns;
    for (;;) {
        if (rtg_thread_blocked_on(tid, prim))
            return true;
        if (rtg_mono_ns() > end)
            return false;
        rtg_behav_sleep_ns(LOOK_NS);   /* the look, not the sleep, ends the wait */
    }
}

bool rtg_behav_wait_blocked_at(int tid, int prio, rtg_prim prim, int64_t timeout_ns)
{
#ifdef RTG_POSIX_ONLY
    (void)tid, (void)prim, (void)timeout_ns;
    return rtg_blocked_above(prio) == 0;
#else
    (void)prio;
    return tid > 0 && rtg_behav_wait_blocked(tid, prim, timeout_ns);
#endif
}

int rtg_behav_effective_rt_prio(int tid)
{
    char buf[1024], *a;
    if (!read_stat_fields(tid, buf, sizeof buf, &a))
        return -1;
    /* field 18 "priority" is the 16th after the state: task_prio() = prio - 100,
     * i.e. -1 - rt_priority for a real-time task, boosts included */
    char *save = NULL, *tok = strtok_r(a, " ", &save);
    for (int i = 0; tok && i < 15; i++)
        tok = strtok_r(NULL, " ", &save);
    if (!tok)
        return -1;
    long v = strtol(tok, NULL, 10);
    return v < 0 ? (int)(-1 - v) : 0;
}

static atomic_llong seq_counter;

int64_t rtg_behav_seq(void)
{
    return atomic_fetch_add(&seq_counter, 1) + 1;
}

/* ---- the inversion scenario, on the fixture ---- */

typedef struct {
    const rtg_inv_cfg *cfg;
    rtg_inv_result *r;
    rtg_lock lock;
    _Atomic int held;          /* 1 low holds the lock, -1 it could not take it */
    int low_tid;
    int low_rc, high_rc;
} inversion;

/* Safety bound of low's critical section in wall time: it needs cs_ns of CPU,
 * which it only gets once high and medium are done; never reached normally. */
#define LOW_WALL_BOUND_NS 10000000000LL

static void *low_main(void *p)
{
    inversion *v = p;
    v->low_rc = rtg_lock_acquire(&v->lock);
    if (v->low_rc != 0) {
        atomic_store(&v->held, -1);
        rtg_scn_here();
        return NULL;
    }
    v->r->t_held = rtg_mono_ns();
    int64_t cpu0 = rtg_behav_thread_cpu_ns();
    atomic_store(&v->held, 1);
    rtg_scn_here();
    /* CPU time, not wall time: while preempted the section does not progress */
    while (rtg_behav_thread_cpu_ns() - cpu0 < v->cfg->cs_ns && rtg_mono_ns() - v->r->t_held < LOW_WALL_BOUND_NS)
        ;
    v->r->t_low_release = rtg_mono_ns();
    rtg_lock_release(&v->lock);
    return NULL;
}

static void *high_main(void *p)
{
    inversion *v = p;
    v->r->t_request = rtg_mono_ns();
    if (v->cfg->kind == RTG_PRIM_SPIN)
        rtg_scn_here();   /* it is about to spin: nothing to see blocked */
    v->high_rc = rtg_lock_acquire_until(&v->lock, v->r->t_request + v->cfg->timeout_ns);
    if (v->high_rc == 0) {
        v->r->t_acquire = rtg_mono_ns();
        v->r->s_acquire = rtg_behav_seq();
        v->r->acquired = true;
        rtg_lock_release(&v->lock);
    } else {
        v->r->timed_out = v->high_rc == ETIMEDOUT;
    }
    return NULL;
}

static void *medium_main(void *p)
{
    inversion *v = p;
    v->r->s_med_start = rtg_behav_seq();
    int64_t s = rtg_mono_ns(), e = s;
    v->r->t_med_start = s;
    while (e - s < v->cfg->hog_ns)   /* stops itself: bounded hog */
        e = rtg_mono_ns();
    v->r->t_med_end = e;
    v->r->s_med_end = rtg_behav_seq();
    return NULL;
}

/* The facts the verdicts need, read as soon as each thread is in place. */
static int inversion_placed(rtg_scenario *s, int role, int tid, void *p)
{
    inversion *v = p;
    if (role == RTG_INV_LOW) {
        if (atomic_load(&v->held) < 0) {
            rtg_scn_abort(s, "the low-priority thread could not take the %s lock (%s); this system cannot run the scenario.",
                          rtg_lock_name(v->cfg->kind), strerror(v->low_rc));
            return -1;
        }
        v->low_tid = tid;
        v->r->low_prio_before = rtg_behav_effective_rt_prio(tid);
    } else if (role == RTG_INV_HIGH) {
        v->r->high_state = rtg_behav_task_state(tid);
        v->r->low_prio_waiting = rtg_behav_effective_rt_prio(v->low_tid);
    }
    return 0;
}

static void make_plan(rtg_inv_plan *plan, inversion *v)
{
    memset(plan, 0, sizeof *plan);
    plan->fn[RTG_INV_LOW] = low_main;
    plan->fn[RTG_INV_MEDIUM] = medium_main;
    plan->fn[RTG_INV_HIGH] = high_main;
    plan->at[RTG_INV_LOW] = RTG_AT_HERE;
    plan->at[RTG_INV_HIGH] = v->cfg->kind == RTG_PRIM_SPIN ? RTG_AT_HERE : RTG_AT_BLOCKED;
    plan->blocks_on[RTG_INV_HIGH] = v->cfg->kind;
    plan->at[RTG_INV_MEDIUM] = RTG_AT_STARTED;
    plan->order[0] = RTG_INV_LOW;
    plan->order[1] = RTG_INV_HIGH;
    plan->order[2] = RTG_INV_MEDIUM;
    plan->arg = v;
    plan->placed = inversion_placed;
}

const rtg_metric rtg_inversion_metrics[] = {
    {"high_wait", RTG_METRIC_SCALAR, "ns", 0, "how long the high thread waited for the lock (its timeout when it never got it)"},
    {"high_timed_out", RTG_METRIC_SCALAR, "count", 0, "1 when the high thread's wait timed out, else 0"},
    {"medium_hog", RTG_METRIC_SCALAR, "ns", 0, "how long the medium thread ran"},
    {"low_hold", RTG_METRIC_SCALAR, "ns", 0, "how long the low thread held the lock"},
    {"low_priority_before", RTG_METRIC_SCALAR, "priority", 0, "the low thread's priority before high asked for the lock"},
    {"low_priority_while_high_waits", RTG_METRIC_SCALAR, "priority", 0, "the low thread's priority while high waited (boosted when inherited)"},
    {0},
};

void rtg_inversion_report(const rtg_inv_cfg *cfg, const rtg_inv_result *r, rtg_result *res)
{
    rtg_json *m = res->metrics;
    if (r->acquired)
        rtg_j_set(m, "high_wait", rtg_j_scalar_int(r->t_acquire - r->t_request, "ns"));
    else
        rtg_j_set(m, "high_wait", rtg_j_scalar_int(cfg->timeout_ns, "ns"));
    rtg_j_set(m, "high_timed_out", rtg_j_scalar_int(r->timed_out ? 1 : 0, "count"));
    rtg_j_set(m, "medium_hog", rtg_j_scalar_int(r->t_med_end - r->t_med_start, "ns"));
    rtg_j_set(m, "low_hold", rtg_j_scalar_int(r->t_low_release - r->t_held, "ns"));
    rtg_j_set(m, "low_priority_before", rtg_j_scalar_int(r->low_prio_before, "priority"));
    rtg_j_set(m, "low_priority_while_high_waits", rtg_j_scalar_int(r->low_prio_waiting, "priority"));
    rtg_json *sc = rtg_j_set(res->extra, "scenario", rtg_j_obj());
    rtg_j_set(sc, "lock", rtg_j_str(rtg_lock_name(cfg->kind)));
    rtg_j_set(sc, "cpu", rtg_j_int(cfg->cpu));
    rtg_j_set(sc, "priority_low", rtg_j_int(cfg->prio_low));
    rtg_j_set(sc, "priority_medium", rtg_j_int(cfg->prio_med));
    rtg_j_set(sc, "priority_high", rtg_j_int(cfg->prio_high));
    rtg_j_set(sc, "priority_controller", rtg_j_int(cfg->prio_ctl));
    rtg_j_set(sc, "critical_section_cpu_ns", rtg_j_int(cfg->cs_ns));
    rtg_j_set(sc, "hog_ns", rtg_j_int(cfg->hog_ns));
    rtg_j_set(sc, "timeout_ns", rtg_j_int(cfg->timeout_ns));
    char st[2] = {(char)(r->high_state ? r->high_state : '?'), 0};
    rtg_j_set(sc, "high_state_while_waiting", rtg_j_str(st));
    /* instants relative to high's request, ns (null when it did not happen) */
    rtg_json *t = rtg_j_set(sc, "timeline_ns", rtg_j_obj());
    rtg_j_set(t, "low_took_lock", rtg_j_int(r->t_held - r->t_request));
    rtg_j_set(t, "high_requested", rtg_j_int(0));
    rtg_j_set(t, "medium_started", rtg_j_int(r->t_med_start - r->t_request));
    rtg_j_set(t, "low_released", rtg_j_int(r->t_low_release - r->t_request));
    rtg_j_set(t, "high_acquired", r->acquired ? rtg_j_int(r->t_acquire - r->t_request) : rtg_j_null());
    rtg_j_set(t, "medium_stopped", rtg_j_int(r->t_med_end - r->t_request));
}

void rtg_behav_env_cpu(rtg_result *res, int cpu)
{
    rtg_json *c = rtg_j_set(res->env, "cpus", rtg_j_arr());
    rtg_j_push(c, rtg_j_int(cpu));
}

int rtg_inversion_run(const rtg_opts *o, rtg_prim kind, rtg_inv_cfg *cfg, rtg_inv_result *r,
                      rtg_result *res)
{
    memset(cfg, 0, sizeof *cfg);
    memset(r, 0, sizeof *r);
    r->low_prio_before = r->low_prio_waiting = -1;
    cfg->kind = kind;
    cfg->cs_ns = rtg_opt_int(o, "cs-ms") * 1000000;
    cfg->hog_ns = rtg_opt_int(o, "hog-ms") * 1000000;
    cfg->timeout_ns = 2 * (cfg->hog_ns + cfg->cs_ns) + 50000000;
    /* the watchdog ends the run only when something is wrong: past low's bound */
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, true, 3, LOW_WALL_BOUND_NS + 5000000000LL, NULL, NULL);
    if (status != RTG_EXIT_OK)
        return status;
    cfg->cpu = s.b.cpu;
    cfg->prio_low = s.b.priority;
    cfg->prio_med = cfg->prio_low + 1;
    cfg->prio_high = cfg->prio_low + 2;
    cfg->prio_ctl = s.b.policy == RTG_POL_OTHER ? 0 : 99;   /* the watchdog */
    static inversion v;     /* threads read it until joined */
    memset(&v, 0, sizeof v);
    v.cfg = cfg;
    v.r = r;
    char err[512];
    if (rtg_lock_init(&v.lock, kind, cfg->prio_high, err, sizeof err) != 0) {
        rtg_scn_join(&s, res, "the scenario");
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    rtg_inv_plan plan;
    make_plan(&plan, &v);
    rtg_inv_start(&s, &plan);
    status = rtg_scn_join(&s, res, "the priority-inversion scenario");
    if (rtg_scn_leaked(&s))
        return status;
    rtg_lock_destroy(&v.lock);
    if (status != RTG_EXIT_OK)
        return status;
    if (v.high_rc != 0 && v.high_rc != ETIMEDOUT)
        return rtg_fail(res, RTG_EXIT_FAIL, "the high-priority thread's timed wait on the %s lock failed (%s).",
                        rtg_lock_name(kind), strerror(v.high_rc));
    rtg_behav_env_cpu(res, cfg->cpu);
    rtg_inversion_report(cfg, r, res);
    return RTG_EXIT_OK;
}

/* tire: the application benchmark of docs/tire.md. A ring of --masses point masses
 * falls onto a floor and settles; each step is one symplectic Euler step split
 * among --threads solver threads (tire/solver.h, tire/team.h).
 *   realtime: the periodic driver paces steps at --period-ms; one driver thread
 *             runs share 0 and waits for the workers, so Ts is the whole
 *             parallel step; a late step is a miss, and runs late (catch-up:
 *             no step is ever dropped).
 *   realfast: --steps as fast as possible; wall time and the Ts distribution.
 *   pretest:  realtime at 0.5 ms.
 * In the real-time modes the host-stall observer (stall.h) runs beside the steps: a
 * late step whose span (its release to its end) overlapped a stall of the whole
 * machine is counted in late_in_stalls, so a miss of the host (a VM's vCPU stopped)
 * is told from the system's own. Every late step still counts as late. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tire/model.h"
#include "tire/solver.h"
#include "tire/team.h"

#include "clock.h"
#include "periodic/periodic.h"
#include "rt.h"
#include "samples.h"
#include "stall.h"
#include "test.h"

#define PRETEST_PERIOD_MS 0.5
#define MAX_LATE_SPANS 65536    /* late steps judged against the stalls; past it, no figure */
#define DEFAULT_PERIOD_MS 10.0

static const rtg_opt tire_opts[] = {
    {"masses", RTG_OPT_INT, "1000", 4, 20000000, NULL, "point masses of the ring (a multiple of 4)"},
    {"threads", RTG_OPT_INT, "1", 1, 1024, NULL,
     "solver threads over --cpus (more than the CPUs is allowed), placed as --pin says"},
    {"pin", RTG_OPT_ENUM, "round-robin", 0, 0, "round-robin|none",
     "round-robin: thread t pinned to the t-th CPU of --cpus, cyclically; none: every thread free on "
     "all of --cpus, placed by the scheduler (the study's threads under the fair scheduler)"},
    {"solver", RTG_OPT_ENUM, "locked", 0, 0, "locked|fast|paper",
     "locked: the published algorithm with per-node locks, double-buffered, one barrier a step; fast: "
     "structure of arrays, one barrier; paper: the published structure, in place under the node locks, "
     "each thread on its own period, no barrier"},
    {"lock", RTG_OPT_ENUM, "mutex", 0, 0, "mutex|sem|spin", "per-node lock of the locked solver"},
    {"mode", RTG_OPT_ENUM, "realtime", 0, 0, "realtime|realfast|pretest",
     "realtime: steps paced at --period-ms; realfast: as fast as possible; pretest: realtime at 0.5 ms"},
    {"period-ms", RTG_OPT_NUM, NULL, 0.05, 20, NULL,
     "step length, simulated and (realtime) wall, in ms (default 10; 0.5 in pretest mode)"},
    {"steps", RTG_OPT_INT, "6000", 1, 10000000, NULL, "steps to simulate"},
    {"radius-m", RTG_OPT_NUM, "0.3", 0.01, 10, NULL, "ring radius at rest, m"},
    {"drop-height-m", RTG_OPT_NUM, "0.2", 0, 100, NULL,
     "gap between the lowest node and the floor at t = 0, m"},
    {"gravity-mps2", RTG_OPT_NUM, "9.81", 0, 100, NULL, "gravity, m/s^2"},
    {"centroid-samples", RTG_OPT_INT, "16", 1, 1000, NULL,
     "steps (evenly spread) at which the centroid height is recorded"},
    {"stop-on-miss", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "realtime/pretest: stop computing at the first late step (a sweep only needs to know there was one)"},
    {"cost-every", RTG_OPT_INT, "8", 0, 1000000, NULL,
     "locked solver: time the spring, mass and lock phases of every N-th step (0: never; docs/tire.md)"},
    {"time-limit-s", RTG_OPT_NUM, "300", 0.1, 86400, NULL,
     "stop computing after this much wall time (verdict completed false, exit 3)"},
    {0},
};

/* A late step's span: from its release to when a thread finished its share. */
typedef struct {
    uint64_t step;
    int64_t from, to;
} late_span;

typedef struct {
    tire_state st;
    tire_solver *solver;
    tire_team *team;
    bool realtime;
    uint64_t steps;
    int64_t period_ns, start_ns, limit_ns;
    bool stop_on_miss;
    /* written by the stepping thread */
    bool halted, limit_hit;
    uint64_t late;
    int64_t first_contact_step;      /* -1: none yet */
    int64_t wall_start, wall_end;
    uint64_t nvcsw, nivcsw;          /* stepping thread, over the steps */
    uint64_t *wnvcsw, *wnivcsw;      /* each worker's own (index >= 1), over its life */
    int nthreads;
    int nsamples;
    uint64_t *sample_step;           /* ascending step numbers */
    double *sample_y;
    int next_sample;
    int64_t *ts;                     /* realfast: Ts of every step */
    double ts_avg;                   /* mean Ts of the computed steps, ns */
    /* the paper's solver: every thread steps on its own */
    bool paper;
    atomic_bool stop_all;            /* a miss (--stop-on-miss) or the time limit ends every thread */
    atomic_llong first_contact;      /* -1: none yet */
    unsigned char *late_flag;        /* per step: some thread finished it after its deadline */
    uint64_t *done;                  /* per thread: steps computed */
    int64_t *end_ns;                 /* per thread: when its last step ended */
    late_span *spans;                /* real-time: the late steps' spans (MAX_LATE_SPANS) */
    atomic_ullong nspans;            /* spans noted, also past MAX_LATE_SPANS */
} tire_run;

/* Note a late step's span, judged after the run (judge_late_spans). Any thread. */
static void note_late(tire_run *r, uint64_t step, int64_t now)
{
    if (!r->spans)
        return;
    unsigned long long i = atomic_fetch_add_explicit(&r->nspans, 1, memory_order_relaxed);
    if (i < MAX_LATE_SPANS)
        r->spans[i] = (late_span){step, r->start_ns + (int64_t)step * r->period_ns, now};
}

/* After a real-time run: late_in_stalls, the late steps (of those computed) every
 * late share of which overlapped an observed host stall. Absent where no observer
 * ran or more late shares were noted than kept. */
static void judge_late_spans(tire_run *r, rtg_result *res)
{
    unsigned long long n = atomic_load(&r->nspans);
    if (!r->spans || !rtg_stall_observing() || n > MAX_LATE_SPANS)
        return;
    rtg_stall_sync();   /* a stall that ended with the last steps is recorded */
    uint64_t steps = r->st.step, in = 0;
    unsigned char *seen = calloc(steps ? steps : 1, 1);
    if (!seen)
        return;
    for (unsigned long long i = 0; i < n; i++)
        if (r->spans[i].step < steps)
            seen[r->spans[i].step] |= rtg_stall_touches(r->spans[i].from, r->spans[i].to) ? 2 : 1;
    for (uint64_t k = 0; k < steps; k++)
        in += seen[k] == 2;
    free(seen);
    rtg_j_set(res->metrics, "late_in_stalls", rtg_j_scalar_int((int64_t)in, "count"));
}

/* The observer of a real-time run, started before its first deadline is set (it
 * may take a moment to look at the clock): measured CPUs = the pinned ones, or any
 * (cpus[0] < 0: the threads run free on the allowed CPUs). */
static void start_observer(const int *cpus, int nthreads, const rtg_opts *o, rtg_result *res)
{
    rtg_policy policy = RTG_POL_FIFO;
    rtg_policy_parse(rtg_opt_str(o, "policy"), &policy);
    rtg_stall_start(res, cpus[0] >= 0 ? cpus : NULL, cpus[0] >= 0 ? nthreads : 0, policy);
}

/* One step with its bookkeeping; the clock is read only for the limits. */
static void do_step(tire_run *r)
{
    bool sample = r->next_sample < r->nsamples && r->sample_step[r->next_sample] == r->st.step + 1;
    double cy = 0.0;
    int contact = tire_team_step(r->team, sample, &cy);
    if (contact && r->first_contact_step < 0)
        r->first_contact_step = (int64_t)r->st.step;
    if (sample)
        r->sample_y[r->next_sample++] = cy;
}

static void payload(void *arg, rtg_cycle_ctx *c)
{
    tire_run *r = arg;
    uint64_t cycle = c->cycle;
    if (r->halted)
        return;
    if (cycle == 0) {
        r->wall_start = rtg_mono_ns();
        rtg_thread_switches(&r->nvcsw, &r->nivcsw, -1);
    }
    do_step(r);
    int64_t now = rtg_mono_ns();
    int64_t deadline_end = r->start_ns + (int64_t)(cycle + 1) * r->period_ns;
    if (now > deadline_end) {
        r->late++;
        note_late(r, cycle, now);
        if (r->stop_on_miss)
            r->halted = true;
    }
    if (now - r->wall_start > r->limit_ns)
        r->halted = r->limit_hit = true;
    if (r->halted || cycle + 1 == r->steps) {
        r->wall_end = now;
        rtg_thread_switches(&r->nvcsw, &r->nivcsw, 1);
    }
}

static int run_realfast(tire_run *r, rtg_result *res)
{
    rtg_dist ts;
    if (rtg_dist_init(&ts, 0, 0) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for the step statistics.");
    rtg_thread_switches(&r->nvcsw, &r->nivcsw, -1);
    r->wall_start = rtg_mono_ns();
    uint64_t k;
    for (k = 0; k < r->steps && !rtg_stop; k++) {
        int64_t t1 = rtg_mono_ns();
        do_step(r);
        int64_t t2 = rtg_mono_ns();
        r->ts[k] = t2 - t1;
        if (t2 - r->wall_start > r->limit_ns) {
            r->limit_hit = true;
            k++;
            break;
        }
    }
    r->wall_end = rtg_mono_ns();
    rtg_thread_switches(&r->nvcsw, &r->nivcsw, 1);
    rtg_dist_add_array(&ts, r->ts, k);
    r->ts_avg = rtg_dist_avg(&ts);
    rtg_j_set(res->metrics, "ts", rtg_j_dist(&ts, "ns"));
    rtg_dist_free(&ts);
    return RTG_EXIT_OK;
}

/* The cycle driver's settings of a real-time run (the driver's or the paper's
 * solver): nthreads threads on cpus, the options' policy and priority, r->steps
 * cycles of r->period_ns, a late step run late rather than dropped (catch-up),
 * and the first deadline 200 ms ahead in r->start_ns (the payloads need the
 * deadlines to see a late step themselves: --stop-on-miss). 0, or -1 with the
 * sentence in err. */
static int paced_cfg(rtg_periodic_cfg *cfg, tire_run *r, int nthreads, const int *cpus, const rtg_opts *o,
                     char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->nthreads = nthreads;
    for (int t = 0; t < nthreads; t++)
        cfg->cpus[t] = cpus[t];
    rtg_policy_parse(rtg_opt_str(o, "policy"), &cfg->policy);
    cfg->priority = (int)rtg_opt_int(o, "priority");
    cfg->allow_fallback = rtg_opt_flag(o, "allow-fallback");
    cfg->period_ns = r->period_ns;
    cfg->cycles = r->steps;
    cfg->catch_up = true;
    if (rtg_clock_init(&cfg->clock, RTG_CLOCK_MONOTONIC, err, errlen) != 0)
        return -1;
    r->start_ns = rtg_mono_ns() + 200000000LL;
    cfg->start_at_ns = r->start_ns;
    return 0;
}

static int run_realtime(tire_run *r, const rtg_opts *o, const int *cpus, rtg_result *res)
{
    static rtg_periodic_cfg cfg;
    char err[512];
    start_observer(cpus, r->nthreads, o, res);
    if (paced_cfg(&cfg, r, 1, cpus, o, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    rtg_trigger stepper = {.kind = RTG_TRIGGER_TIMER, .cycle = payload, .arg = r};
    cfg.triggers = &stepper;
    rtg_periodic_run run;
    if (rtg_periodic(&cfg, &run, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    rtg_periodic_report(&run, res);
    r->ts_avg = rtg_dist_avg(&run.all.ts);
    rtg_periodic_free(&run);
    judge_late_spans(r, res);
    return RTG_EXIT_OK;
}

/* ---- the paper's solver: each thread on its own, in place, no barrier ---- */

typedef struct {
    tire_run *r;
    int t;
    rtg_policy policy;
    int priority;
    bool allow_fallback;
    int cpu;
    rtg_sched sched;
    char err[256];
    bool failed;
} paper_arg;

static paper_arg paper_args[1024];
static rtg_trigger paper_triggers[1024];

static void paper_contact(tire_run *r, int t, uint64_t step)
{
    if (!tire_solver_out(r->solver, t)->contact)
        return;
    long long seen = atomic_load(&r->first_contact);
    while ((seen < 0 || (long long)step < seen) &&
           !atomic_compare_exchange_weak(&r->first_contact, &seen, (long long)step))
        ;
}

/* One step of thread t on its own timer: its share in place, then was it in time. */
static void paper_cycle(void *arg, rtg_cycle_ctx *c)
{
    paper_arg *a = arg;
    tire_run *r = a->r;
    if (atomic_load_explicit(&r->stop_all, memory_order_relaxed)) {
        c->skip = c->end = c->end_run = true;
        return;
    }
    tire_solver_part_inplace(r->solver, a->t, c->cycle);
    int64_t now = rtg_mono_ns();
    paper_contact(r, a->t, c->cycle);
    r->done[a->t] = c->cycle + 1;
    r->end_ns[a->t] = now;
    if (now > r->start_ns + (int64_t)(c->cycle + 1) * r->period_ns) {
        r->late_flag[c->cycle] = 1;
        note_late(r, c->cycle, now);
        if (r->stop_on_miss) {
            r->halted = true;
            atomic_store(&r->stop_all, true);
            c->end = c->end_run = true;
        }
    }
    if (now - r->start_ns > r->limit_ns) {
        r->limit_hit = r->halted = true;
        atomic_store(&r->stop_all, true);
        c->end = c->end_run = true;
    }
}

/* After the run: the steps every thread computed, the late ones among them (a
 * thread that ran ahead computed parts of later steps, which are not steps of the
 * model yet: counted, they made more steps late than computed under a time limit),
 * and the one in-place state put where tire_cur expects it. */
static void paper_settle(tire_run *r)
{
    uint64_t steps = r->steps;
    int64_t end = r->start_ns;
    for (int t = 0; t < r->nthreads; t++) {
        if (r->done[t] < steps)
            steps = r->done[t];
        if (r->end_ns[t] > end)
            end = r->end_ns[t];
    }
    r->late = 0;
    for (uint64_t k = 0; k < steps; k++)
        r->late += r->late_flag[k] != 0;
    tire_state *st = &r->st;
    if (steps & 1) {
        size_t bytes = (size_t)st->p.n * sizeof(double);
        memcpy(st->s[1].x, st->s[0].x, bytes);
        memcpy(st->s[1].y, st->s[0].y, bytes);
        memcpy(st->s[1].vx, st->s[0].vx, bytes);
        memcpy(st->s[1].vy, st->s[0].vy, bytes);
    }
    st->step = steps;
    long long fc = atomic_load(&r->first_contact);
    r->first_contact_step = fc < 0 ? -1 : fc;
    r->wall_end = end;
}

/* env.solver_threads of the paper's solver: every thread a peer ("own"), none a driver. */
static void paper_thread_entry(rtg_json *a, int t, int cpu, const rtg_sched *s)
{
    rtg_json *j = rtg_j_push(a, rtg_j_obj());
    rtg_j_set(j, "index", rtg_j_int(t));
    rtg_j_set(j, "cpu", rtg_j_int(cpu));
    rtg_j_set(j, "role", rtg_j_str("own"));
    rtg_j_set(j, "policy", rtg_j_str(rtg_policy_name(s->policy)));
    rtg_j_set(j, "priority", rtg_j_int(s->priority));
    rtg_j_set(j, "fallback", rtg_j_bool(s->fallback));
}

static int run_paper_realtime(tire_run *r, const rtg_opts *o, const int *cpus, rtg_result *res)
{
    static rtg_periodic_cfg cfg;
    char err[512];
    for (int t = 0; t < r->nthreads; t++) {
        paper_args[t] = (paper_arg){.r = r, .t = t};
        paper_triggers[t] = (rtg_trigger){.kind = RTG_TRIGGER_TIMER, .cycle = paper_cycle, .arg = &paper_args[t]};
    }
    start_observer(cpus, r->nthreads, o, res);
    if (paced_cfg(&cfg, r, r->nthreads, cpus, o, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    cfg.triggers = paper_triggers;
    r->wall_start = r->start_ns;
    rtg_periodic_run run;
    if (rtg_periodic(&cfg, &run, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    rtg_periodic_report(&run, res);
    r->ts_avg = rtg_dist_avg(&run.all.ts);
    rtg_json *a = rtg_j_set(res->env, "solver_threads", rtg_j_arr());
    for (int t = 0; t < r->nthreads; t++) {
        r->wnvcsw[t] = run.t[t].nvcsw;
        r->wnivcsw[t] = run.t[t].nivcsw;
        paper_thread_entry(a, t, cpus[t], &run.t[t].sched);
    }
    r->nvcsw = r->wnvcsw[0];
    r->nivcsw = r->wnivcsw[0];
    rtg_periodic_free(&run);
    paper_settle(r);
    judge_late_spans(r, res);
    /* the run's misses are its late steps (a step is late when any thread's share was) */
    rtg_j_set(res->metrics, "misses", rtg_j_scalar_int((int64_t)r->late, "count"));
    return RTG_EXIT_OK;
}

static void *paper_realfast_thread(void *arg)
{
    paper_arg *a = arg;
    tire_run *r = a->r;
    if ((a->cpu >= 0 && rtg_pin_cpu(a->cpu, a->err, sizeof a->err) != 0) ||
        rtg_sched_apply(&a->sched, a->policy, a->priority, a->allow_fallback, a->err, sizeof a->err) != 0) {
        a->failed = true;
        atomic_store(&r->stop_all, true);
        return NULL;
    }
    uint64_t nv = 0, niv = 0;
    rtg_thread_switches(&nv, &niv, -1);
    uint64_t k;
    for (k = 0; k < r->steps && !rtg_stop && !atomic_load_explicit(&r->stop_all, memory_order_relaxed); k++) {
        int64_t t1 = a->t == 0 ? rtg_mono_ns() : 0;
        tire_solver_part_inplace(r->solver, a->t, k);
        int64_t now = rtg_mono_ns();
        if (a->t == 0)
            r->ts[k] = now - t1;
        paper_contact(r, a->t, k);
        if (now - r->wall_start > r->limit_ns) {
            r->limit_hit = true;
            atomic_store(&r->stop_all, true);
            k++;
            break;
        }
    }
    r->done[a->t] = k;
    r->end_ns[a->t] = rtg_mono_ns();
    rtg_thread_switches(&nv, &niv, 1);
    r->wnvcsw[a->t] = nv;
    r->wnivcsw[a->t] = niv;
    return NULL;
}

static int run_paper_realfast(tire_run *r, const rtg_opts *o, const int *cpus, rtg_result *res)
{
    rtg_policy pol;
    rtg_policy_parse(rtg_opt_str(o, "policy"), &pol);
    static pthread_t th[1024];
    char err[512] = "";
    r->wall_start = rtg_mono_ns();
    int started = 0;
    for (int t = 0; t < r->nthreads; t++) {
        paper_args[t] = (paper_arg){.r = r, .t = t, .policy = pol, .priority = (int)rtg_opt_int(o, "priority"),
                                    .allow_fallback = rtg_opt_flag(o, "allow-fallback"), .cpu = cpus[t]};
        if (rtg_spawn_thread(&th[t], RTG_POL_OTHER, 0, -1, 256, paper_realfast_thread, &paper_args[t], err,
                             sizeof err) != 0) {
            atomic_store(&r->stop_all, true);
            break;
        }
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    if (started < r->nthreads)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    for (int t = 0; t < r->nthreads; t++)
        if (paper_args[t].failed)
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", paper_args[t].err);
    r->nvcsw = r->wnvcsw[0];
    r->nivcsw = r->wnivcsw[0];
    paper_settle(r);
    rtg_dist ts;
    if (rtg_dist_init(&ts, 0, 0) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for the step statistics.");
    rtg_dist_add_array(&ts, r->ts, r->done[0]);
    r->ts_avg = rtg_dist_avg(&ts);
    rtg_j_set(res->metrics, "ts", rtg_j_dist(&ts, "ns"));
    rtg_dist_free(&ts);
    rtg_json *a = rtg_j_set(res->env, "solver_threads", rtg_j_arr());
    for (int t = 0; t < r->nthreads; t++)
        paper_thread_entry(a, t, cpus[t], &paper_args[t].sched);
    return RTG_EXIT_OK;
}

/* Centroid samples at steps spread evenly over the run. */
static int plan_samples(tire_run *r, int wanted)
{
    int n = wanted < (int64_t)r->steps ? wanted : (int)r->steps;
    r->sample_step = calloc((size_t)n, sizeof *r->sample_step);
    r->sample_y = calloc((size_t)n, sizeof *r->sample_y);
    if (!r->sample_step || !r->sample_y)
        return -1;
    int m = 0;
    for (int j = 1; j <= n; j++) {
        uint64_t s = (uint64_t)((double)r->steps * j / n + 0.5);
        if (s < 1)
            s = 1;
        if (m == 0 || s > r->sample_step[m - 1])
            r->sample_step[m++] = s;
    }
    r->nsamples = m;
    return 0;
}

static void put_physics(const tire_run *r, double dt, double period_ms, double e0, rtg_result *res)
{
    const tire_params *p = &r->st.p;
    rtg_json *ph = rtg_j_set(res->extra, "physics", rtg_j_obj());
    rtg_j_set(ph, "step_s", rtg_j_num(dt));
    rtg_j_set(ph, "period_ms", rtg_j_num(period_ms));
    rtg_j_set(ph, "steps_done", rtg_j_int((int64_t)r->st.step));
    rtg_j_set(ph, "simulated_s", rtg_j_num((double)r->st.step * dt));
    rtg_j_set(ph, "first_contact_s", r->first_contact_step >= 0
                                         ? rtg_j_num((double)r->first_contact_step * dt)
                                         : rtg_j_null());
    rtg_j_set(ph, "first_contact_step", r->first_contact_step >= 0 ? rtg_j_int(r->first_contact_step)
                                                                    : rtg_j_null());
    rtg_json *c = rtg_j_set(ph, "centroid_height_m", rtg_j_arr());
    for (int j = 0; j < r->next_sample; j++) {
        rtg_json *pt = rtg_j_push(c, rtg_j_arr());
        rtg_j_push(pt, rtg_j_num((double)r->sample_step[j] * dt));
        rtg_j_push(pt, rtg_j_num(r->sample_y[j]));
    }
    rtg_j_set(ph, "rest_height_m", rtg_j_num(tire_centroid_y(&r->st)));
    rtg_j_set(ph, "energy_initial_j", rtg_j_num(e0));
    rtg_j_set(ph, "energy_j", rtg_j_num(tire_energy(&r->st)));
    int64_t nonfinite, below;
    tire_scan(&r->st, &nonfinite, &below);
    rtg_j_set(ph, "nan", rtg_j_bool(nonfinite > 0));
    rtg_j_set(ph, "below_floor", rtg_j_int(below));
    char hex[17];
    tire_checksum(&r->st, hex);
    rtg_j_set(ph, "checksum", rtg_j_str(hex));
    rtg_json *m = rtg_j_set(ph, "model", rtg_j_obj());
    rtg_j_set(m, "total_mass_kg", rtg_j_num(p->total_mass));
    rtg_j_set(m, "node_mass_kg", rtg_j_num(p->m));
    rtg_j_set(m, "k_over_m_ring", rtg_j_num(TIRE_KAPPA_RING));
    rtg_j_set(m, "k_over_m_opposite", rtg_j_num(TIRE_KAPPA_OPP));
    rtg_j_set(m, "c_over_m_ring", rtg_j_num(TIRE_GAMMA_RING));
    rtg_j_set(m, "c_over_m_opposite", rtg_j_num(TIRE_GAMMA_OPP));
    rtg_j_set(m, "prestrain", rtg_j_num(TIRE_PRESTRAIN));
    rtg_j_set(m, "springs", rtg_j_int(p->n + p->n / 2));
    /* Gershgorin bound of the stiffness per unit mass: 2 (2 k_ring + k_opp) / m */
    double wmax = sqrt(2.0 * (2.0 * TIRE_KAPPA_RING + TIRE_KAPPA_OPP));
    rtg_j_set(m, "dt_omega_max", rtg_j_num(dt * wmax));
}

/* The cost-equation constants measured in the run (docs/tire.md "Cost
 * equation"): per thread, the phase times of the sampled steps divided by what
 * each phase counts (2e + 1 springs, e masses, 6e + 4 lock operations, the lock
 * phases including the copies they guard), and the thread's context switches
 * per step. Metrics: the mean over the threads. */
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Median of the kept samples of one phase (sorted in place: read after the run). */
static double kept_median(int64_t *v, uint64_t samples)
{
    size_t m = samples < TIRE_PHASE_KEEP ? (size_t)samples : TIRE_PHASE_KEEP;
    qsort(v, m, sizeof *v, cmp_i64);
    return m % 2 ? (double)v[m / 2] : 0.5 * ((double)v[m / 2 - 1] + (double)v[m / 2]);
}

static void put_cost(tire_run *r, int every, rtg_result *res)
{
    if (!tire_solver_phase_times(r->solver, 0) || r->st.step == 0)
        return;
    rtg_json *c = rtg_j_set(res->extra, "cost", rtg_j_obj());
    rtg_j_set(c, "every", rtg_j_int(every));
    rtg_json *a = rtg_j_set(c, "threads", rtg_j_arr());
    double sum_spring = 0, sum_mass = 0, sum_ipc = 0, sum_nsw = 0, share = 0;
    int timed = 0;
    for (int t = 0; t < r->nthreads; t++) {
        tire_phase_times *pt = tire_solver_phase_times(r->solver, t);
        int64_t lo, hi;
        tire_range(r->st.p.n, r->nthreads, t, &lo, &hi);
        int64_t e = hi - lo, ops = e > 0 ? 6 * e + 4 : 0;
        uint64_t nv = t == 0 ? r->nvcsw : r->wnvcsw[t], niv = t == 0 ? r->nivcsw : r->wnivcsw[t];
        /* eq. 2's Nswitch: the switches the solver's code did not ask for. An
         * involuntary switch (ru_nivcsw) is the kernel taking the CPU: a time
         * slice ended or a task preempted the thread. The voluntary ones are
         * planned or belong to another term: the sleep until the next period,
         * the wait for the release and the others' shares (the barrier), a wait
         * on a contended node lock (the IPC term). Under FIFO with a CPU a
         * thread, nothing preempts: Nswitch is 0, as the study's argument has it. */
        double nsw = (double)niv / (double)r->st.step;
        rtg_json *j = rtg_j_push(a, rtg_j_obj());
        rtg_j_set(j, "index", rtg_j_int(t));
        rtg_j_set(j, "e", rtg_j_int(e));
        rtg_j_set(j, "lock_ops", rtg_j_int(ops));
        rtg_j_set(j, "samples", rtg_j_int((int64_t)pt->samples));
        rtg_j_set(j, "read_ns", rtg_j_int(pt->read_ns));
        rtg_j_set(j, "spring_ns", rtg_j_int(pt->spring_ns));
        rtg_j_set(j, "mass_ns", rtg_j_int(pt->mass_ns));
        rtg_j_set(j, "write_ns", rtg_j_int(pt->write_ns));
        rtg_j_set(j, "nvcsw", rtg_j_int((int64_t)nv));
        rtg_j_set(j, "nivcsw", rtg_j_int((int64_t)niv));
        rtg_j_set(j, "nswitch_per_step", rtg_j_num(nsw));
        sum_nsw += nsw;
        if (pt->samples == 0 || e == 0)
            continue;
        /* Medians over the sampled steps: one step preempted in a phase (a
         * host stall, an interrupt) must not move the constant. */
        static const char *const names[4] = {"read_ns_median", "spring_ns_median", "mass_ns_median",
                                             "write_ns_median"};
        double med[4];
        for (int ph = 0; ph < 4; ph++) {
            med[ph] = kept_median(pt->kept[ph], pt->samples);
            rtg_j_set(j, names[ph], rtg_j_num(med[ph]));
        }
        if (med[0] + med[1] + med[2] + med[3] > share)
            share = med[0] + med[1] + med[2] + med[3];
        double ts = med[1] / (double)(2 * e + 1);
        double tm = med[2] / (double)e;
        double ti = (med[0] + med[3]) / (double)ops;
        rtg_j_set(j, "t_spring_ns", rtg_j_num(ts));
        rtg_j_set(j, "t_mass_ns", rtg_j_num(tm));
        rtg_j_set(j, "t_ipc_ns", rtg_j_num(ti));
        sum_spring += ts, sum_mass += tm, sum_ipc += ti;
        timed++;
    }
    rtg_json *mt = res->metrics;
    rtg_j_set(mt, "nswitch_per_step", rtg_j_scalar_num(sum_nsw / r->nthreads, "count/step"));
    if (timed > 0) {
        rtg_j_set(mt, "t_spring", rtg_j_scalar_num(sum_spring / timed, "ns"));
        rtg_j_set(mt, "t_mass", rtg_j_scalar_num(sum_mass / timed, "ns"));
        rtg_j_set(mt, "t_ipc", rtg_j_scalar_num(sum_ipc / timed, "ns"));
        rtg_j_set(mt, "t_share", rtg_j_scalar_num(share, "ns"));
    }
}

static void put_metrics(const tire_run *r, rtg_result *res)
{
    rtg_json *mt = res->metrics;
    int64_t n = r->st.p.n;
    rtg_j_set(mt, "steps", rtg_j_scalar_int((int64_t)r->st.step, "count"));
    double wall = (double)(r->wall_end - r->wall_start) / 1e9;
    rtg_j_set(mt, "wall_s", rtg_j_scalar_num(r->st.step ? wall : 0.0, "s"));
    /* Wall time of a step per mass: the cost the sweep and the fit read. */
    rtg_j_set(mt, "ns_per_mass_step", rtg_j_scalar_num(r->ts_avg / (double)n, "ns"));
    rtg_j_set(mt, "lock_ops_per_step", rtg_j_scalar_int(tire_solver_lock_ops(r->solver), "count"));
#ifndef RTG_POSIX_ONLY   /* per-thread counts (RUSAGE_THREAD) are Linux-only */
    rtg_j_set(mt, "nvcsw", rtg_j_scalar_int((int64_t)r->nvcsw, "count"));
    rtg_j_set(mt, "nivcsw", rtg_j_scalar_int((int64_t)r->nivcsw, "count"));
#endif
    if (r->realtime)
        rtg_j_set(mt, "late_steps", rtg_j_scalar_int((int64_t)r->late, "count"));
}

static int check_options(const rtg_opts *o, rtg_result *res, bool *realtime, double *period_ms)
{
    int64_t n = rtg_opt_int(o, "masses");
    if (n % 4 != 0)
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--masses %lld is not a multiple of 4 (the ring is built from four equal quadrants); give e.g. %lld.",
                        (long long)n, (long long)(n < 4 ? 4 : n / 4 * 4));
    int64_t k = rtg_opt_int(o, "threads");
    if (k > n)
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--threads %lld is more than --masses %lld; every thread needs at least one mass.",
                        (long long)k, (long long)n);
    const char *mode = rtg_opt_str(o, "mode");
    *realtime = strcmp(mode, "realfast") != 0;
    bool pretest = strcmp(mode, "pretest") == 0;
    if (pretest && rtg_opt_given(o, "period-ms"))
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--mode pretest runs at 0.5 ms; drop --period-ms or use --mode realtime.");
    *period_ms = rtg_opt_given(o, "period-ms") ? rtg_opt_num(o, "period-ms")
                 : pretest                      ? PRETEST_PERIOD_MS
                                                : DEFAULT_PERIOD_MS;
    if (!*realtime && rtg_opt_flag(o, "stop-on-miss"))
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--stop-on-miss needs --mode realtime or pretest (realfast has no deadlines).");
    return RTG_EXIT_OK;
}

static void put_solver_threads(const tire_run *r, const int *cpus, int k, rtg_result *res)
{
    rtg_json *a = rtg_j_set(res->env, "solver_threads", rtg_j_arr());
    for (int t = 0; t < k; t++) {
        rtg_json *j = rtg_j_push(a, rtg_j_obj());
        rtg_j_set(j, "index", rtg_j_int(t));
        rtg_j_set(j, "cpu", rtg_j_int(cpus[t]));
        rtg_j_set(j, "role", rtg_j_str(t == 0 ? (r->realtime ? "driver" : "main") : "worker"));
        if (t > 0) {
            const rtg_sched *s = tire_team_sched(r->team, t);
            rtg_j_set(j, "policy", rtg_j_str(rtg_policy_name(s->policy)));
            rtg_j_set(j, "priority", rtg_j_int(s->priority));
            rtg_j_set(j, "fallback", rtg_j_bool(s->fallback));
        }
    }
}

static void free_run(tire_run *r)
{
    tire_solver_free(r->solver);
    tire_state_free(&r->st);
    free(r->sample_step);
    free(r->sample_y);
    free(r->ts);
    free(r->wnvcsw);
    free(r->wnivcsw);
    free(r->late_flag);
    free(r->spans);
    free(r->done);
    free(r->end_ns);
}

static int tire_main(const rtg_opts *o, rtg_result *res)
{
    bool realtime = true;
    double period_ms = DEFAULT_PERIOD_MS;
    int status = check_options(o, res, &realtime, &period_ms);
    if (status != RTG_EXIT_OK)
        return status;
    static int allowed[RTG_MAX_CPUS], cpus[1024];
    int ncpus = rtg_opt_given(o, "cpus") ? rtg_opt_cpus(o, "cpus", allowed, RTG_MAX_CPUS)
                                         : rtg_allowed_cpus(allowed, RTG_MAX_CPUS);
    if (ncpus < 1)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    int k = (int)rtg_opt_int(o, "threads");
    bool pinned = strcmp(rtg_opt_str(o, "pin"), "none") != 0;
    for (int t = 0; t < k; t++)
        cpus[t] = pinned ? allowed[t % ncpus] : -1;
    if (!pinned) {
        char cerr[256];
        if (rtg_confine_cpus(allowed, ncpus, cerr, sizeof cerr) != 0)
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", cerr);
    }

    static tire_run r;
    memset(&r, 0, sizeof r);
    r.realtime = realtime;
    r.steps = (uint64_t)rtg_opt_int(o, "steps");
    r.period_ns = (int64_t)(period_ms * 1e6 + 0.5);
    r.limit_ns = (int64_t)(rtg_opt_num(o, "time-limit-s") * 1e9);
    r.stop_on_miss = rtg_opt_flag(o, "stop-on-miss");
    r.first_contact_step = -1;
    r.nthreads = k;
    double dt = period_ms / 1000.0;
    tire_params p;
    tire_params_init(&p, rtg_opt_int(o, "masses"), dt, rtg_opt_num(o, "radius-m"),
                     rtg_opt_num(o, "drop-height-m"), rtg_opt_num(o, "gravity-mps2"));
    char err[512] = "";
    if (tire_state_init(&r.st, &p) != 0 || plan_samples(&r, (int)rtg_opt_int(o, "centroid-samples")) != 0 ||
        (!realtime && !(r.ts = calloc(r.steps, sizeof *r.ts))) ||
        (realtime && !(r.spans = calloc(MAX_LATE_SPANS, sizeof *r.spans))) ||
        !(r.wnvcsw = calloc((size_t)k, sizeof *r.wnvcsw)) || !(r.wnivcsw = calloc((size_t)k, sizeof *r.wnivcsw))) {
        free_run(&r);
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %lld masses and %llu steps; use fewer.",
                        (long long)p.n, (unsigned long long)r.steps);
    }
    double e0 = tire_energy(&r.st);
    const char *sn = rtg_opt_str(o, "solver");
    tire_solver_kind kind = strcmp(sn, "fast") == 0    ? TIRE_SOLVER_FAST
                            : strcmp(sn, "paper") == 0 ? TIRE_SOLVER_PAPER
                                                       : TIRE_SOLVER_LOCKED;
    const char *ln = rtg_opt_str(o, "lock");
    tire_lock_kind lock = strcmp(ln, "sem") == 0    ? TIRE_LOCK_SEM
                          : strcmp(ln, "spin") == 0 ? TIRE_LOCK_SPIN
                                                    : TIRE_LOCK_MUTEX;
    r.solver = tire_solver_new(&r.st, kind, lock, k, err, sizeof err);
    if (!r.solver) {
        free_run(&r);
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    tire_solver_set_cost_every(r.solver, (int)rtg_opt_int(o, "cost-every"));
    if (kind == TIRE_SOLVER_PAPER) {
        r.paper = true;
        atomic_init(&r.stop_all, false);
        atomic_init(&r.first_contact, -1);
        if (!(r.late_flag = calloc(r.steps, 1)) || !(r.done = calloc((size_t)k, sizeof *r.done)) ||
            !(r.end_ns = calloc((size_t)k, sizeof *r.end_ns)) ||
            (!realtime && !(r.ts = calloc(r.steps, sizeof *r.ts)))) {
            free_run(&r);
            return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %llu steps; use fewer.",
                            (unsigned long long)r.steps);
        }
        status = realtime ? run_paper_realtime(&r, o, cpus, res) : run_paper_realfast(&r, o, cpus, res);
        for (int t = 1; t < k; t++) {
            r.nvcsw += r.wnvcsw[t];
            r.nivcsw += r.wnivcsw[t];
        }
    } else {
        tire_team_cfg tc = {.nthreads = k, .cpus = cpus, .allow_fallback = rtg_opt_flag(o, "allow-fallback"),
                            .priority = (int)rtg_opt_int(o, "priority")};
        rtg_policy_parse(rtg_opt_str(o, "policy"), &tc.policy);
        r.team = tire_team_start(r.solver, &tc, err, sizeof err);
        if (!r.team) {
            free_run(&r);
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
        }
        if (!realtime && cpus[0] >= 0 && rtg_pin_cpu(cpus[0], err, sizeof err) != 0) {
            tire_team_stop_each(r.team, r.wnvcsw, r.wnivcsw);
            free_run(&r);
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
        }
        put_solver_threads(&r, cpus, k, res);
        status = realtime ? run_realtime(&r, o, cpus, res) : run_realfast(&r, res);
        tire_team_stop_each(r.team, r.wnvcsw, r.wnivcsw);
        for (int t = 1; t < k; t++) {
            r.nvcsw += r.wnvcsw[t];
            r.nivcsw += r.wnivcsw[t];
        }
        r.team = NULL;
    }
    if (status == RTG_EXIT_OK) {
        put_metrics(&r, res);
        put_cost(&r, (int)rtg_opt_int(o, "cost-every"), res);
        put_physics(&r, dt, period_ms, e0, res);
        if (realtime) {
            rtg_verdict(res, "hard_realtime", r.late == 0 && !r.limit_hit,
                        "%llu of %llu steps ended after their deadline", (unsigned long long)r.late,
                        (unsigned long long)r.st.step);
        }
        rtg_verdict(res, "completed", r.st.step == r.steps, "%llu of %llu steps computed%s",
                    (unsigned long long)r.st.step, (unsigned long long)r.steps,
                    r.limit_hit ? " (stopped by --time-limit-s)" : r.halted ? " (stopped at the first miss)" : "");
        if (r.limit_hit)
            status = RTG_EXIT_VERDICT;
    }
    free_run(&r);
    return status;
}

static const rtg_metric tire_metrics[] = {
    RTG_PERIODIC_METRIC(ti, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    RTG_PERIODIC_METRIC(ts, 0, ""),
    RTG_PERIODIC_METRIC(tw, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    RTG_PERIODIC_METRIC(misses, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    RTG_PERIODIC_METRIC(skipped, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    RTG_PERIODIC_METRIC(cycles, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    RTG_PERIODIC_METRIC(dropped, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    RTG_PERIODIC_METRIC(ti_window_max, RTG_METRIC_CONDITIONAL, " (realtime and pretest)"),
    {"steps", RTG_METRIC_SCALAR, "count", 0, "steps computed"},
    {"wall_s", RTG_METRIC_SCALAR, "s", 0, "wall time of the computed steps"},
    {"ns_per_mass_step", RTG_METRIC_SCALAR, "ns", 0, "mean step time divided by the masses"},
    {"lock_ops_per_step", RTG_METRIC_SCALAR, "count", 0, "lock operations of one step (locked solver)"},
    {"nvcsw", RTG_METRIC_SCALAR, "count", RTG_METRIC_LINUX, "voluntary context switches of the solver threads over the steps"},
    {"nivcsw", RTG_METRIC_SCALAR, "count", RTG_METRIC_LINUX, "involuntary context switches of the solver threads over the steps"},
    {"t_spring", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "cost equation: time of one spring force, per thread (locked solver, sampled steps)"},
    {"t_mass", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "cost equation: time of one mass integration, per thread (locked solver, sampled steps)"},
    {"t_ipc", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "cost equation: time of one lock operation with the copy it guards, per thread (locked solver, sampled steps)"},
    {"t_share", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "cost equation: the slowest thread's four phases in one timed step (sum of its medians; locked solver)"},
    {"nswitch_per_step", RTG_METRIC_SCALAR, "count/step", RTG_METRIC_CONDITIONAL, "cost equation's Nswitch: unplanned (involuntary) context switches per solver thread and step; sleeps, barrier and lock waits are not counted (locked and paper solvers)"},
    {"late_steps", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "steps the payload saw finish late (realtime and pretest)"},
    {"late_in_stalls", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "of the late steps, those whose every late share overlapped an observed host stall (realtime and pretest; "
     "absent where no observer ran)"},
    {0},
};

const rtg_test rtg_test_tire = {
    .name = "tire",
    .summary = "tire model: a ring of point masses falls and settles; real-time (paced) or real-fast steps",
    .kind = RTG_KIND_APPLICATION,
    .opts = tire_opts,
    .metrics = tire_metrics,
    .flags = RTG_TEST_RT,
    .run = tire_main,
};

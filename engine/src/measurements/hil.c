/* hil: the hardware-in-the-loop loop (docs/method.md: T = Ti + Ts + Tw, with Ti from a
 * frame's arrival). --role both (default) runs a device thread and a simulation
 * thread in this process over loopback; --role sim / device run one side, the
 * other being at --address (another namespace, or a real device on a NIC).
 * Nothing but loopback or --address is ever contacted. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tire/model.h"
#include "tire/solver.h"
#include "tire/team.h"

#include "clock.h"
#include "hil/device.h"
#include "hil/link.h"
#include "hil/sim.h"
#include "rt.h"
#include "samples.h"
#include "test.h"

#define MAX_FRAMES 100000000LL
#define TIRE_MAX_DT 0.01     /* the tire's step stays well inside its stability bound */

static const rtg_opt hil_opts[] = {
    {"role", RTG_OPT_ENUM, "both", 0, 0, "both|sim|device",
     "both: device and simulation in this process over loopback; sim / device: one side, the other at --address"},
    {"address", RTG_OPT_STR, NULL, 0, 0, "HOST:PORT",
     "HOST:PORT (IPv4). --role sim: the address to listen on; --role device: the simulation's address"},
    {"period-us", RTG_OPT_INT, "1000", 20, 1000000, NULL, "the device sends one frame every period, in microseconds"},
    {"duration-s", RTG_OPT_NUM, "5", 0.01, 86400, NULL, "how long the device sends (ignored when --frames is given)"},
    {"frames", RTG_OPT_INT, NULL, 1, MAX_FRAMES, NULL, "frames to send; wins over --duration-s"},
    {"payload", RTG_OPT_ENUM, "none", 0, 0, "none|work|tire",
     "simulation step per frame: nothing, a spin of --work-us, or one tire-model step"},
    {"work-us", RTG_OPT_INT, "100", 0, 1000000, NULL, "--payload work: wall time of one step, in microseconds"},
    {"masses", RTG_OPT_INT, "1000", 4, 1000000, NULL, "--payload tire: masses of the ring (a multiple of 4)"},
    {"threads", RTG_OPT_INT, "1", 1, 64, NULL, "--payload tire: solver threads (the first is the simulation thread)"},
    {"solver", RTG_OPT_ENUM, "locked", 0, 0, "locked|fast", "--payload tire: solver (see the tire test)"},
    {"frame-bytes", RTG_OPT_INT, "64", HIL_MIN_FRAME, HIL_MAX_FRAME, NULL, "UDP payload of an input frame, bytes"},
    {"device-cpu", RTG_OPT_INT, NULL, 0, RTG_MAX_CPUS - 1, NULL,
     "CPU of the device thread (default: the first of --cpus or of the allowed CPUs)"},
    {"sim-cpu", RTG_OPT_INT, NULL, 0, RTG_MAX_CPUS - 1, NULL,
     "CPU of the simulation thread (default: the second of --cpus or of the allowed CPUs)"},
    {"linger-ms", RTG_OPT_INT, "200", 0, 60000, NULL,
     "after the last frame the device waits this long for late replies; none by then is lost"},
    {"start-delay-ms", RTG_OPT_INT, "100", 10, 60000, NULL, "first frame this long after start"},
    {"wait-s", RTG_OPT_NUM, "10", 0.1, 3600, NULL, "--role sim: give up when no frame arrives within this"},
    {"idle-ms", RTG_OPT_INT, "1000", 10, 3600000, NULL,
     "--role sim: stop when no frame arrives for this long after one did"},
    {"device-local", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "--role sim: the device runs on this host (same CLOCK_MONOTONIC), so Tw uses its send schedule"},
    {"sim-drop-every", RTG_OPT_INT, NULL, 2, 1000000000, NULL,
     "test of loss accounting: the simulation ignores every Nth frame (no reply)"},
    {0},
};

typedef struct {
    const char *role;
    bool run_sim, run_device;
    int64_t period_ns;
    uint64_t frames;
    int device_cpu, sim_cpu;
    int cpus[RTG_MAX_CPUS];
    int ncpus;
} hil_plan;

static bool cpu_allowed(const hil_plan *p, int cpu)
{
    int all[RTG_MAX_CPUS];
    int n = rtg_allowed_cpus(all, RTG_MAX_CPUS);
    for (int i = 0; i < n; i++)
        if (all[i] == cpu)
            return true;
    (void)p;
    return false;
}

/* Options that only make sense with another option: a usage error otherwise. */
static int check_pairs(const rtg_opts *o, const hil_plan *p, rtg_result *res)
{
    const char *payload = rtg_opt_str(o, "payload");
    if (rtg_opt_user(o, "work-us") && strcmp(payload, "work") != 0)
        return rtg_fail(res, RTG_EXIT_USAGE, "--work-us needs --payload work; add it or drop --work-us.");
    const char *tire_only[] = {"masses", "threads", "solver"};
    for (int i = 0; i < 3; i++)
        if (rtg_opt_user(o, tire_only[i]) && strcmp(payload, "tire") != 0)
            return rtg_fail(res, RTG_EXIT_USAGE, "--%s needs --payload tire; add it or drop --%s.",
                            tire_only[i], tire_only[i]);
    bool both = strcmp(p->role, "both") == 0;
    if (both && rtg_opt_given(o, "address"))
        return rtg_fail(res, RTG_EXIT_USAGE,
                        "--address needs --role sim or --role device (--role both runs over loopback).");
    if (!both && !rtg_opt_given(o, "address"))
        return rtg_fail(res, RTG_EXIT_USAGE, "--role %s needs --address HOST:PORT.", p->role);
    if (!p->run_sim) {
        const char *sim_only[] = {"sim-cpu", "sim-drop-every", "device-local", "wait-s", "idle-ms", "payload"};
        for (int i = 0; i < 6; i++)
            if (rtg_opt_user(o, sim_only[i]))
                return rtg_fail(res, RTG_EXIT_USAGE, "--%s is an option of the simulation; it needs --role sim or both.",
                                sim_only[i]);
    }
    if (!p->run_device && rtg_opt_user(o, "device-cpu"))
        return rtg_fail(res, RTG_EXIT_USAGE, "--device-cpu needs --role device or both.");
    if (strcmp(payload, "tire") == 0) {
        int64_t n = rtg_opt_int(o, "masses"), k = rtg_opt_int(o, "threads");
        if (n % 4 != 0)
            return rtg_fail(res, RTG_EXIT_USAGE, "--masses %lld is not a multiple of 4; give e.g. %lld.",
                            (long long)n, (long long)(n / 4 * 4));
        if (k > n)
            return rtg_fail(res, RTG_EXIT_USAGE, "--threads %lld is more than --masses %lld; every thread needs a mass.",
                            (long long)k, (long long)n);
    }
    return RTG_EXIT_OK;
}

static int plan_run(const rtg_opts *o, hil_plan *p, rtg_result *res)
{
    memset(p, 0, sizeof *p);
    p->role = rtg_opt_str(o, "role");
    p->run_sim = strcmp(p->role, "device") != 0;
    p->run_device = strcmp(p->role, "sim") != 0;
    int status = check_pairs(o, p, res);
    if (status != RTG_EXIT_OK)
        return status;
    p->period_ns = rtg_opt_int(o, "period-us") * 1000;
    double frames = rtg_opt_given(o, "frames") ? (double)rtg_opt_int(o, "frames")
                                               : rtg_opt_num(o, "duration-s") * 1e9 / (double)p->period_ns;
    if (frames > (double)MAX_FRAMES)
        return rtg_fail(res, RTG_EXIT_USAGE, "--duration-s %g at --period-us %lld is %.0f frames, more than %lld; "
                        "give a shorter duration or a longer period.", rtg_opt_num(o, "duration-s"),
                        (long long)(p->period_ns / 1000), frames, MAX_FRAMES);
    p->frames = frames < 1 ? 1 : (uint64_t)(frames + 0.5);
    p->ncpus = rtg_opt_given(o, "cpus") ? rtg_opt_cpus(o, "cpus", p->cpus, RTG_MAX_CPUS)
                                        : rtg_allowed_cpus(p->cpus, RTG_MAX_CPUS);
    if (p->ncpus < 1)
        return rtg_fail(res, RTG_EXIT_FAIL, "no CPU is available to this process; check its affinity.");
    p->device_cpu = rtg_opt_given(o, "device-cpu") ? (int)rtg_opt_int(o, "device-cpu") : p->cpus[0];
    p->sim_cpu = rtg_opt_given(o, "sim-cpu") ? (int)rtg_opt_int(o, "sim-cpu") : p->cpus[1 % p->ncpus];
    const char *which[] = {"device-cpu", "sim-cpu"};
    int cpu[] = {p->device_cpu, p->sim_cpu};
    for (int i = 0; i < 2; i++)
        if (rtg_opt_given(o, which[i]) && !cpu_allowed(p, cpu[i]))
            return rtg_fail(res, RTG_EXIT_USAGE, "--%s %d is not a CPU this process may run on; pick one of its allowed CPUs.",
                            which[i], cpu[i]);
    return RTG_EXIT_OK;
}

/* ---- the tire payload ---- */

typedef struct {
    tire_state st;
    tire_solver *solver;
    tire_team *team;
} hil_tire;

static double tire_step(void *arg, const rtg_cycle_ctx *c)
{
    (void)c;   /* one tire step is short (bounded by --masses) */
    hil_tire *t = arg;
    double cy = 0.0;
    tire_team_step(t->team, true, &cy);
    return cy;
}

static int tire_start(hil_tire *t, const rtg_opts *o, const hil_plan *p, rtg_json *env, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    double dt = (double)p->period_ns / 1e9;
    if (dt > TIRE_MAX_DT)
        dt = TIRE_MAX_DT;
    tire_params tp;
    tire_params_init(&tp, rtg_opt_int(o, "masses"), dt, 0.3, 0.2, 9.81);
    if (tire_state_init(&t->st, &tp) != 0) {
        snprintf(err, errlen, "out of memory for %lld masses; use fewer.", (long long)tp.n);
        return -1;
    }
    int k = (int)rtg_opt_int(o, "threads");
    tire_solver_kind kind = strcmp(rtg_opt_str(o, "solver"), "fast") == 0 ? TIRE_SOLVER_FAST : TIRE_SOLVER_LOCKED;
    t->solver = tire_solver_new(&t->st, kind, TIRE_LOCK_MUTEX, k, err, errlen);
    if (!t->solver)
        return -1;
    static int cpus[64];
    int start = 0;
    for (int i = 0; i < p->ncpus; i++)
        if (p->cpus[i] == p->sim_cpu)
            start = i;
    cpus[0] = p->sim_cpu;
    for (int i = 1; i < k; i++)
        cpus[i] = p->cpus[(start + i) % p->ncpus];
    tire_team_cfg tc = {.nthreads = k, .cpus = cpus, .allow_fallback = rtg_opt_flag(o, "allow-fallback"),
                        .priority = (int)rtg_opt_int(o, "priority")};
    rtg_policy_parse(rtg_opt_str(o, "policy"), &tc.policy);
    t->team = tire_team_start(t->solver, &tc, err, errlen);
    if (!t->team)
        return -1;
    rtg_j_set(env, "tire_step_s", rtg_j_num(dt));
    return 0;
}

static void tire_stop(hil_tire *t)
{
    uint64_t nv = 0, niv = 0;
    if (t->team)
        tire_team_stop(t->team, &nv, &niv);
    tire_solver_free(t->solver);
    tire_state_free(&t->st);
}

/* ---- running the roles ---- */

static void put_dist(rtg_result *res, const char *name, const rtg_dist *d)
{
    rtg_j_set(res->metrics, name, rtg_j_dist(d, "ns"));
}

/* Device side: round trips, and which frames were late (reply after the next
 * send instant) or lost (no reply by the end of --linger-ms). The device's own
 * cycle (Ti = send lag...) is under device_*. */
static void report_device(const hil_device *o, const rtg_periodic_thread *t, rtg_result *res)
{
    uint64_t lost = o->sent - o->received;
    rtg_json *m = res->metrics;
    rtg_j_set(m, "sent", rtg_j_scalar_int((int64_t)o->sent, "count"));
    rtg_j_set(m, "received", rtg_j_scalar_int((int64_t)o->received, "count"));
    rtg_j_set(m, "lost_frames", rtg_j_scalar_int((int64_t)lost, "count"));
    rtg_j_set(m, "late", rtg_j_scalar_int((int64_t)o->late, "count"));
    rtg_j_set(m, "misses", rtg_j_scalar_int((int64_t)(o->late + lost), "count"));
    rtg_j_set(m, "duplicate_replies", rtg_j_scalar_int((int64_t)o->duplicate, "count"));
    rtg_j_set(m, "bad_replies", rtg_j_scalar_int((int64_t)o->bad, "count"));
    rtg_j_set(m, "stale_replies", rtg_j_scalar_int((int64_t)o->stale, "count"));
    rtg_j_set(m, "send_errors", rtg_j_scalar_int((int64_t)o->send_errors, "count"));
    rtg_j_set(m, "send_lag_max", rtg_j_scalar_int(o->max_send_lag_ns, "ns"));
    put_dist(res, "round_trip", &o->round_trip);
    rtg_j_set(m, "device_ti", rtg_j_dist(&t->ti, "ns"));
    rtg_j_set(m, "device_ts", rtg_j_dist(&t->ts, "ns"));
    rtg_j_set(m, "device_tw", rtg_j_dist(&t->tw, "ns"));
    rtg_verdict(res, "no_frame_lost", lost == 0, "%llu of %llu frames got no reply",
                (unsigned long long)lost, (unsigned long long)o->sent);
    rtg_verdict(res, "no_deadline_missed", o->late + lost == 0,
                "%llu of %llu replies were not back before the next frame was due",
                (unsigned long long)(o->late + lost), (unsigned long long)o->sent);
}

static void report_sim(const hil_sim *o, const rtg_periodic_thread *t, rtg_result *res)
{
    rtg_json *m = res->metrics;
    rtg_j_set(m, "sim_received", rtg_j_scalar_int((int64_t)o->received, "count"));
    rtg_j_set(m, "sim_answered", rtg_j_scalar_int((int64_t)o->answered, "count"));
    rtg_j_set(m, "sim_ignored", rtg_j_scalar_int((int64_t)o->ignored, "count"));
    rtg_j_set(m, "sequence_gaps", rtg_j_scalar_int((int64_t)o->gaps, "count"));
    rtg_j_set(m, "reordered", rtg_j_scalar_int((int64_t)o->reordered, "count"));
    rtg_j_set(m, "bad_frames", rtg_j_scalar_int((int64_t)o->bad, "count"));
    rtg_j_set(m, "sim_overruns", rtg_j_scalar_int((int64_t)t->misses, "count"));
#ifndef RTG_POSIX_ONLY   /* per-thread counts (RUSAGE_THREAD) are Linux-only */
    rtg_j_set(m, "sim_nvcsw", rtg_j_scalar_int((int64_t)t->nvcsw, "count"));
    rtg_j_set(m, "sim_nivcsw", rtg_j_scalar_int((int64_t)t->nivcsw, "count"));
#endif
    put_dist(res, "ti", &t->ti);
    put_dist(res, "ts", &t->ts);
    put_dist(res, "tw", &t->tw);
    rtg_j_set(res->env, "ti_arrival",
              rtg_j_str(o->kernel_ts ? "kernel receive timestamp (SO_TIMESTAMPNS)"
                        : o->cfg.device_local ? "device send timestamp (no kernel receive timestamp)"
                                              : "unavailable (no kernel timestamp, device clock unknown): ti is 0"));
    rtg_j_set(res->env, "tw_reference",
              rtg_j_str(o->anchored ? "first arrival + k periods (device clock unknown)"
                                    : "device send schedule + one period"));
}

static int open_sockets(const rtg_opts *o, const hil_plan *p, int *sim_fd, int *dev_fd, bool *kts,
                        rtg_json *env, char *err, size_t errlen)
{
    struct sockaddr_in sa;
    *sim_fd = *dev_fd = -1;
    if (p->run_sim) {
        if (p->run_device) {
            memset(&sa, 0, sizeof sa);
            sa.sin_family = AF_INET;
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        } else if (hil_parse_address(rtg_opt_str(o, "address"), &sa, err, errlen) != 0) {
            return RTG_EXIT_USAGE;
        }
        if ((*sim_fd = hil_bind(&sa, true, kts, err, errlen)) < 0)
            return RTG_EXIT_FAIL;
        socklen_t len = sizeof sa;
        getsockname(*sim_fd, (struct sockaddr *)&sa, &len);
        char a[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, a, sizeof a);
        rtg_j_set(env, "sim_address", rtg_j_strf("%s:%u", a, ntohs(sa.sin_port)));
    }
    if (p->run_device) {
        struct sockaddr_in to = sa, local;
        if (!p->run_sim && hil_parse_address(rtg_opt_str(o, "address"), &to, err, errlen) != 0)
            return RTG_EXIT_USAGE;
        memset(&local, 0, sizeof local);
        local.sin_family = AF_INET;
        local.sin_addr.s_addr = p->run_sim ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
        if ((*dev_fd = hil_bind(&local, false, NULL, err, errlen)) < 0)
            return RTG_EXIT_FAIL;
        if (hil_connect(*dev_fd, &to, err, errlen) != 0)
            return RTG_EXIT_FAIL;
    }
    rtg_j_set(env, "transport", rtg_j_str(p->run_sim && p->run_device ? "loopback" : "address"));
    return RTG_EXIT_OK;
}

/* The driver's threads: the device's sender (a timer) first, then the
 * simulation (a frame trigger), then the device's receiver (a frame trigger on
 * the device's socket and CPU). */
static void plan_driver(const rtg_opts *o, const hil_plan *p, rtg_periodic_cfg *cfg, rtg_trigger *tr,
                        hil_device *dev, hil_sim *sim, int dev_fd, int sim_fd, int *dev_i, int *sim_i,
                        int *rx_i)
{
    rtg_policy_parse(rtg_opt_str(o, "policy"), &cfg->policy);
    cfg->priority = (int)rtg_opt_int(o, "priority");
    cfg->allow_fallback = rtg_opt_flag(o, "allow-fallback");
    cfg->period_ns = p->period_ns;
    cfg->cycles = p->frames + 1;   /* sizes the window series; each thread has its own bound */
    cfg->catch_up = true;          /* a late send goes out at once; no frame is skipped */
    cfg->start_delay_ns = rtg_opt_int(o, "start-delay-ms") * 1000000LL;
    char err[256];
    rtg_clock_init(&cfg->clock, RTG_CLOCK_MONOTONIC, err, sizeof err);
    cfg->triggers = tr;
    *dev_i = *sim_i = *rx_i = -1;
    int n = 0;
    if (p->run_device) {
        *dev_i = n;
        cfg->cpus[n] = p->device_cpu;
        tr[n++] = (rtg_trigger){.kind = RTG_TRIGGER_TIMER, .cycle = hil_device_cycle,
                                .collect = hil_device_collect, .arg = dev, .cycles = p->frames + 1};
    }
    if (p->run_sim) {
        *sim_i = n;
        cfg->cpus[n] = p->sim_cpu;
        tr[n++] = (rtg_trigger){.kind = RTG_TRIGGER_FRAME, .fd = sim_fd, .cycle = hil_sim_cycle,
                                .idle = hil_sim_idle, .arg = sim, .cycles = UINT64_MAX};
    }
    if (p->run_device) {
        *rx_i = n;
        cfg->cpus[n] = p->device_cpu;
        tr[n++] = (rtg_trigger){.kind = RTG_TRIGGER_FRAME, .fd = dev_fd, .cycle = hil_device_reply,
                                .idle = hil_device_rx_idle, .arg = dev, .cycles = UINT64_MAX};
    }
    cfg->nthreads = n;
}

static int hil_main(const rtg_opts *o, rtg_result *res)
{
    static hil_plan p;
    int status = plan_run(o, &p, res);
    if (status != RTG_EXIT_OK)
        return status;
    char err[512] = "";
    int sim_fd = -1, dev_fd = -1;
    bool kts = false, have_dev = false, have_run = false;
    static hil_sim sim;
    static hil_device dev;
    static hil_tire tire;
    static hil_work work;
    static rtg_periodic_cfg cfg;   /* large (cpu table); not on the stack */
    rtg_trigger tr[3];
    rtg_periodic_run run;
    memset(&tire, 0, sizeof tire);
    memset(&cfg, 0, sizeof cfg);
    memset(&work, 0, sizeof work);
    const char *payload = rtg_opt_str(o, "payload");
    rtg_j_set(res->env, "role", rtg_j_str(p.role));
    rtg_j_set(res->env, "frames_planned", rtg_j_int((int64_t)p.frames));
    status = open_sockets(o, &p, &sim_fd, &dev_fd, &kts, res->env, err, sizeof err);
    if (status == RTG_EXIT_OK && p.run_sim && strcmp(payload, "tire") == 0 &&
        tire_start(&tire, o, &p, res->env, err, sizeof err) != 0)
        status = RTG_EXIT_FAIL;
    if (status != RTG_EXIT_OK)
        goto out;

    if (p.run_sim) {
        hil_sim_cfg sc = {.fd = sim_fd, .period_ns = p.period_ns, .frames = p.frames,
                          .device_local = p.run_device || rtg_opt_flag(o, "device-local"),
                          .alone = !p.run_device,
                          .drop_every = rtg_opt_given(o, "sim-drop-every") ? (uint64_t)rtg_opt_int(o, "sim-drop-every") : 0};
        if (strcmp(payload, "work") == 0) {
            work.ns = rtg_opt_int(o, "work-us") * 1000;
            sc.step = hil_work_step;
            sc.step_arg = &work;
        } else if (strcmp(payload, "tire") == 0) {
            sc.step = tire_step;
            sc.step_arg = &tire;
        }
        int64_t start_ms = rtg_opt_int(o, "start-delay-ms");
        sc.first_wait_ns = p.run_device ? (start_ms + 10000) * 1000000LL
                                        : (int64_t)(rtg_opt_num(o, "wait-s") * 1e9);
        sc.idle_ns = p.run_device ? INT64_MAX / 4 : rtg_opt_int(o, "idle-ms") * 1000000LL;
        hil_sim_init(&sim, &sc);
    }
    if (p.run_device) {
        hil_device_cfg dc = {.fd = dev_fd, .period_ns = p.period_ns, .frames = p.frames,
                             .frame_bytes = (size_t)rtg_opt_int(o, "frame-bytes"),
                             .linger_ns = rtg_opt_int(o, "linger-ms") * 1000000LL};
        if (hil_device_init(&dev, &dc, err, sizeof err) != 0) {
            status = RTG_EXIT_FAIL;
            goto out;
        }
        have_dev = true;
    }
    int dev_i, sim_i, rx_i;
    plan_driver(o, &p, &cfg, tr, &dev, &sim, dev_fd, sim_fd, &dev_i, &sim_i, &rx_i);
    if (rtg_periodic(&cfg, &run, err, sizeof err) != 0) {
        status = RTG_EXIT_FAIL;
        goto out;
    }
    have_run = true;
    if (sim_i >= 0 && !rtg_stop && (sim.err[0] || run.t[sim_i].error[0])) {
        status = rtg_fail(res, RTG_EXIT_FAIL, "%s", sim.err[0] ? sim.err : run.t[sim_i].error);
        goto out;
    }
    rtg_json *th = rtg_j_set(res->env, "threads", rtg_j_arr());
    if (dev_i >= 0) {
        rtg_json *dj = rtg_periodic_put_thread(th, &run.t[dev_i], dev_i);
        rtg_j_set(dj, "role", rtg_j_str("device"));
        /* the device's receiving thread, with it on its CPU (not a separate role) */
        rtg_json *rj = rtg_j_set(dj, "receiver", rtg_j_obj());
        rtg_j_set(rj, "tid", rtg_j_int(run.t[rx_i].tid));
#ifdef RTG_POSIX_ONLY   /* per-thread counts are Linux-only: unknown */
        rtg_j_set(rj, "nvcsw", rtg_j_null());
        rtg_j_set(rj, "nivcsw", rtg_j_null());
#else
        rtg_j_set(rj, "nvcsw", rtg_j_int((int64_t)run.t[rx_i].nvcsw));
        rtg_j_set(rj, "nivcsw", rtg_j_int((int64_t)run.t[rx_i].nivcsw));
#endif
        if (run.t[rx_i].error[0] && !rtg_stop) {
            status = rtg_fail(res, RTG_EXIT_FAIL, "the device's %s", run.t[rx_i].error);
            goto out;
        }
        report_device(&dev, &run.t[dev_i], res);
    }
    if (sim_i >= 0) {
        rtg_j_set(rtg_periodic_put_thread(th, &run.t[sim_i], sim_i), "role", rtg_j_str("sim"));
        report_sim(&sim, &run.t[sim_i], res);
    }
    rtg_periodic_put_env(&run, res->env);
out:
    if (status != RTG_EXIT_OK && err[0] && !res->error[0])
        status = rtg_fail(res, status, "%s", err);
    if (have_run)
        rtg_periodic_free(&run);
    tire_stop(&tire);
    if (have_dev)
        hil_device_free(&dev);
    if (sim_fd >= 0)
        close(sim_fd);
    if (dev_fd >= 0)
        close(dev_fd);
    return status;
}

static const rtg_metric hil_metrics[] = {
    {"sent", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames the device sent (device side: --role both or device)"},
    {"received", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "replies the device received (device side: --role both or device)"},
    {"lost_frames", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames without a reply by the end of the linger (sent = received + lost_frames) (device side: --role both or device)"},
    {"late", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "replies that came after the next frame was due (device side: --role both or device)"},
    {"misses", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "late + lost_frames (device side: --role both or device)"},
    {"duplicate_replies", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "replies received twice (device side: --role both or device)"},
    {"bad_replies", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "replies that were malformed or not for a sent frame (device side: --role both or device)"},
    {"send_errors", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames the device failed to send (device side: --role both or device)"},
    {"send_lag_max", RTG_METRIC_SCALAR, "ns", RTG_METRIC_CONDITIONAL, "the largest lag of a send behind its scheduled instant (device side: --role both or device)"},
    {"round_trip", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "from the device's send to the reply in hand (device side: --role both or device)"},
    {"sim_received", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames the simulation received (simulation side: --role both or sim)"},
    {"sim_answered", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames the simulation answered (simulation side: --role both or sim)"},
    {"sim_ignored", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames the simulation ignored (--sim-drop-every) (simulation side: --role both or sim)"},
    {"sequence_gaps", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames that never arrived at the simulation (simulation side: --role both or sim)"},
    {"reordered", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames that arrived out of order (simulation side: --role both or sim)"},
    {"bad_frames", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "malformed frames (simulation side: --role both or sim)"},
    {"sim_overruns", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "frames whose reply ended after the next frame was due (tw < 0) (simulation side: --role both or sim)"},
    {"sim_nvcsw", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "voluntary context switches of the simulation thread (simulation side: --role both or sim)"},
    {"sim_nivcsw", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "involuntary context switches of the simulation thread (simulation side: --role both or sim)"},
    {"ti", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "from the frame's arrival to the simulation running (simulation side: --role both or sim)"},
    {"ts", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the simulation's step (simulation side: --role both or sim)"},
    {"tw", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the next expected frame minus the end of the reply (simulation side: --role both or sim)"},
    {"stale_replies", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "replies more than 2^20 frames late: not matched, their frames count as lost (device side)"},
    {"device_ti", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the device thread's wake-up latency: running minus the send instant (device side)"},
    {"device_ts", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the device thread's send time per frame (device side)"},
    {"device_tw", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL, "the next send instant minus the end of the send (device side)"},
    {0},
};

/* The loop talks UDP: unavailable where no datagram socket can be opened. */
static const char *hil_unavailable(char *why, size_t len)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd >= 0) {
        close(fd);
        return NULL;
    }
    snprintf(why, len, "unavailable here because no UDP socket can be opened (%s)", strerror(errno));
    return why;
}

const rtg_test rtg_test_hil = {
    .name = "hil",
    .summary = "hardware-in-the-loop: a device sends UDP frames each period, the simulation steps and replies",
    .kind = RTG_KIND_LOOP,
    .opts = hil_opts,
    .metrics = hil_metrics,
    .flags = RTG_TEST_RT,
    .unavailable = hil_unavailable,
    .run = hil_main,
};

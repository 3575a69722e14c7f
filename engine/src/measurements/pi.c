/* pi: priority inversion as a binary verdict per primitive (Rhealstone's
 * priority-inversion question). On one CPU under SCHED_FIFO a low-priority thread
 * holds a lock for a critical section that needs --cs-ms of CPU, a high-priority
 * thread asks for the lock (timed wait), and a medium-priority thread becomes
 * ready and hogs the CPU for --hog-ms, then stops by itself. The high thread was
 * protected when it got the lock before the medium one stopped: only an owner-
 * aware lock with priority inheritance lets low finish ahead of medium. A spin
 * lock is worse than blocking: high spins at its priority, low can never run, so
 * high's wait ends only at its timeout (bounded: 2 x (hog + cs) + 50 ms). */
#include <string.h>

#include "behaviour.h"
#include "test.h"

static const rtg_opt pi_opts[] = {
    {"primitive", RTG_OPT_ENUM, "pi-mutex", 0, 0, "pi-mutex|mutex|sem|spin",
     "the lock: mutex with priority inheritance, plain mutex, semaphore of value 1, pthread spin lock"},
    {"hog-ms", RTG_OPT_INT, "200", 10, 2000, NULL, "how long the medium thread hogs the CPU before it stops"},
    {"cs-ms", RTG_OPT_INT, "20", 1, 500, NULL, "CPU time the low thread needs inside the lock"},
    RTG_INVERSION_OPTS,
    {0},
};

static int pi_run(const rtg_opts *o, rtg_result *res)
{
    rtg_inv_cfg cfg;
    rtg_inv_result r;
    int status = rtg_inversion_run(o, rtg_prim_by_name(rtg_opt_str(o, "primitive"), RTG_PRIM_PI_MUTEX), &cfg, &r, res);
    if (status != RTG_EXIT_OK)
        return status;
    bool protected_ = r.acquired && r.t_acquire < r.t_med_end;
    if (protected_)
        rtg_verdict(res, "protected", true,
                    "%s: high got the lock after %.1f ms, before medium stopped hogging (low ran at priority %d while high waited)",
                    rtg_lock_name(cfg.kind), (double)(r.t_acquire - r.t_request) / 1e6, r.low_prio_waiting);
    else if (r.acquired)
        rtg_verdict(res, "protected", false,
                    "%s: vulnerable, high waited %.1f ms, until after medium's %.0f ms hog (low stayed at priority %d)",
                    rtg_lock_name(cfg.kind), (double)(r.t_acquire - r.t_request) / 1e6,
                    (double)(r.t_med_end - r.t_med_start) / 1e6, r.low_prio_waiting);
    else
        rtg_verdict(res, "protected", false,
                    "%s: vulnerable, high never got the lock within its %.0f ms timeout (the holder could not run)",
                    rtg_lock_name(cfg.kind), (double)cfg.timeout_ns / 1e6);
    return RTG_EXIT_OK;
}

const rtg_test rtg_test_pi = {
    .name = "pi",
    .summary = "priority inversion verdict per primitive: low holds, medium hogs, high waits (one CPU)",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = pi_opts,
    .metrics = rtg_inversion_metrics,
    .flags = RTG_TEST_RT,
    .run = pi_run,
};

/* mut-arc: MUT-B-ARC, priority-inversion avoidance of a mutex. On one CPU under
 * SCHED_FIFO: low locks the mutex, high asks for it, medium is made ready. With
 * priority inheritance the kernel runs low at high's priority while high waits
 * (seen in /proc/self/task/TID/stat), so low leaves the mutex and high takes it
 * before medium runs at all. --protocol none is the deliberately wrong mutex:
 * medium runs first (bounded: it stops after --hog-ms) and both verdicts fail;
 * --protocol protect (priority ceiling = high's priority) avoids it too. */
#include <string.h>

#include "behaviour.h"
#include "test.h"

static const rtg_opt mut_arc_opts[] = {
    {"protocol", RTG_OPT_ENUM, "inherit", 0, 0, "inherit|protect|none",
     "mutex protocol: priority inheritance, priority ceiling (at high's priority), or none"},
    {"hog-ms", RTG_OPT_INT, "50", 5, 2000, NULL, "how long the medium thread runs before it stops"},
    {"cs-ms", RTG_OPT_INT, "10", 1, 500, NULL, "CPU time the low thread needs inside the mutex"},
    RTG_INVERSION_OPTS,
    {0},
};

static int mut_arc_run(const rtg_opts *o, rtg_result *res)
{
    rtg_inv_cfg cfg;
    rtg_inv_result r;
    int status = rtg_inversion_run(o, rtg_mutex_protocol(rtg_opt_str(o, "protocol")), &cfg, &r, res);
    if (status != RTG_EXIT_OK)
        return status;

    /* Strict: high must have the mutex before medium ran at all (sequence numbers). */
    bool avoided = r.acquired && r.s_acquire < r.s_med_start;
    rtg_verdict(res, "inversion_avoided", avoided,
                avoided ? "high took the mutex %.2f ms after asking, before medium ran"
                        : "high waited %.2f ms and medium ran first: priority inversion",
                (double)((r.acquired ? r.t_acquire : r.t_request + cfg.timeout_ns) - r.t_request) / 1e6);
    bool boosted = r.low_prio_waiting >= cfg.prio_high;
    rtg_verdict(res, "holder_boosted", boosted,
                "the holder ran at priority %d while high (%d) waited (its own priority %d)",
                r.low_prio_waiting, cfg.prio_high, cfg.prio_low);
    return RTG_EXIT_OK;
}

const rtg_test rtg_test_mut_arc = {
    .name = "mut-arc",
    .summary = "MUT-B-ARC: a mutex avoids priority inversion (holder boosted, high served before medium)",
    .kind = RTG_KIND_MICRO_BEHAVIOUR,
    .opts = mut_arc_opts,
    .metrics = rtg_inversion_metrics,
    .flags = RTG_TEST_RT,
    .run = mut_arc_run,
};

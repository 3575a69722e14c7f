/* hil sim: the simulation side of the loop, a payload of the cycle driver's
 * FRAME trigger. The driver blocks on the socket and times each datagram from
 * its arrival (the kernel's receive stamp); this payload checks the frame, runs
 * one step, replies with its state and says when the next frame is due:
 *   Ti = sim running - frame arrival,
 *   Ts = the step,
 *   Tw = next expected frame - end of the reply (< 0: the next frame is due
 *        before this cycle was done).
 * Sequence numbers are checked: frames that never arrived are counted as gaps. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "hil/sim.h"
#include "test.h"

void hil_sim_init(hil_sim *s, const hil_sim_cfg *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->anchored = !cfg->device_local;
    s->started = rtg_mono_ns();
    s->end_by = INT64_MAX;
}

static void track_sequence(hil_sim *s, uint64_t seq)
{
    if (seq > s->expected)
        s->gaps += seq - s->expected;
    if (seq < s->expected)
        s->reordered++;
    else
        s->expected = seq + 1;
}

/* Nothing arrived for a while: whether to stop waiting; sets err for a silent device. */
bool hil_sim_idle(void *arg, int64_t now)
{
    hil_sim *s = arg;
    if (s->received == 0 && now - s->started > s->cfg.first_wait_ns) {
        snprintf(s->err, sizeof s->err,
                 "no frame arrived within %.1f s; check that the device sends to this address.",
                 (double)s->cfg.first_wait_ns / 1e9);
        return true;
    }
    if (now > s->end_by)
        return true;
    return s->received > 0 && now - s->last_arrival > s->cfg.idle_ns;
}

void hil_sim_cycle(void *arg, rtg_cycle_ctx *c)
{
    hil_sim *s = arg;
    const hil_sim_cfg *cfg = &s->cfg;
    hil_frame f;
    c->skip = true;   /* until the frame is known good and answered */
    if (c->frame_len < sizeof f) {
        s->bad++;
        return;
    }
    memcpy(&f, c->frame, sizeof f);
    if (f.magic != HIL_MAGIC_FRAME) {
        s->bad++;
        return;
    }
    s->received++;
    s->last_arrival = c->woke_ns;   /* the driver's stamp: no clock read on the reply's path */
    track_sequence(s, f.seq);
    if (cfg->drop_every && f.seq % cfg->drop_every == cfg->drop_every - 1) {
        s->ignored++;
        return;
    }
    /* Without the kernel's stamp, Ti runs from the device's send instant when
     * it shares this clock; else Ti is unknown and 0. */
    if (!c->kernel_ts)
        c->trigger_ns = cfg->device_local ? f.send_ns : c->trigger_ns;
    s->kernel_ts = s->kernel_ts || c->kernel_ts;
    if (s->anchor == 0) {
        /* Device clock unknown: the schedule is the first arrival + k periods. */
        s->anchor = c->trigger_ns;
        s->seq0 = f.seq;
        if (cfg->alone)   /* the frames are due by then: a backlog beyond is not worked off */
            s->end_by = s->anchor + (int64_t)cfg->frames * cfg->period_ns + cfg->idle_ns;
    }
    double state = cfg->step ? cfg->step(cfg->step_arg, c) : 0.0;
    int64_t t2 = rtg_mono_ns();
    if (rtg_cycle_stopping(c)) {   /* the step was cut short: no reply, no record */
        c->end = true;
        return;
    }
    hil_reply *rep = &s->rep;
    rep->magic = HIL_MAGIC_REPLY;
    rep->seq = f.seq;
    rep->send_ns = f.send_ns;
    rep->step++;
    rep->state = state;
    rep->sim_ns = t2;
    sendto(cfg->fd, rep, HIL_REPLY_BYTES, 0, c->from, c->from_len);
    c->skip = false;
    c->step_end_ns = t2;
    if (!s->anchored)
        c->next_ns = f.deadline_ns + cfg->period_ns;
    else
        c->next_ns = s->anchor + (int64_t)(f.seq - s->seq0 + 1) * cfg->period_ns;
    s->answered++;
    /* alone, the run ends with the last frame, or when as many as planned were
     * answered (a device that keeps sending) */
    if (cfg->alone && (f.seq + 1 >= cfg->frames || s->answered >= cfg->frames || t2 > s->end_by))
        c->end = true;
}

/* Spins on the clock: a fixed wall time per step whatever the CPU's speed, so a
 * slowed simulation is slow by exactly the amount asked; a stop of the run
 * ends the spin at once, however long the step. */
double hil_work_step(void *arg, const rtg_cycle_ctx *c)
{
    hil_work *w = arg;
    int64_t end = rtg_mono_ns() + w->ns;
    while (rtg_mono_ns() < end && !rtg_cycle_stopping(c))
        ;
    return (double)++w->steps;
}

/* periodic_trigger: a measuring thread's loop (periodic.h: the triggers). Wait
 * for the trigger (a deadline, a frame, an event), two timestamps around the
 * payload, one record into the thread's ring; nothing else happens in the loop.
 * The EVENT trigger's post side is event.c. */
#include "portable.h"
#include "periodic/periodic_trigger.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>   /* struct timeval (SO_RCVTIMEO) */

#define POLL_NS 20000000LL               /* FRAME/EVENT: idle hook every 20 ms by default */

static uint64_t cycles_of(const rtg_pd_worker *w)
{
    return w->tr->cycles ? w->tr->cycles : w->sh->cfg->cycles;
}

static void run_payload(rtg_pd_worker *w, rtg_cycle_ctx *c)
{
    if (w->tr->cycle)
        w->tr->cycle(w->tr->arg, c);
}

/* Store the cycle's record (numbered `number`: a timer's deadline index, so the
 * deadlines skipped after an overrun are the missing numbers, docs/samples.md;
 * otherwise the cycle); then whether the thread ends (the payload said so). */
static bool finish_cycle(rtg_pd_worker *w, const rtg_cycle_ctx *c, uint64_t number, int64_t t1, int64_t t2)
{
    rtg_pd_shared *sh = w->sh;
    if (!c->skip) {
        rtg_cycle *r = rtg_ring_slot(&w->ring);
        if (r) {
            r->deadline_ns = c->trigger_ns;
            r->cycle = number;
            r->ti = t1 - c->trigger_ns;
            r->ts = (c->step_end_ns ? c->step_end_ns : t2) - t1;
            r->tw = c->next_ns - t2;
            rtg_ring_publish(&w->ring);
        }
        int64_t stop_above = sh->cfg->stop_above_ns;
        if (stop_above > 0 && t1 - c->trigger_ns > stop_above) {
            rtg_pd_end_run(sh, &sh->stopped_above);
        }
    }
    if (c->end_run)
        rtg_pd_end_run(sh, &sh->ended_by_payload);
    return c->end || c->end_run;
}

static rtg_cycle_ctx new_ctx(const rtg_pd_worker *w, uint64_t k, int64_t t1)
{
    return (rtg_cycle_ctx){.thread = w->index, .cycle = k, .woke_ns = t1, .stopping = &w->sh->stop_run};
}

/* TIMER: 0 at the deadline, -1 when the run must stop (or the sleep failed). */
static int wait_deadline(rtg_pd_worker *w, int64_t d)
{
    struct timespec ts = rtg_ns_timespec(d);
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR && !rtg_pd_should_stop(w->sh))
        ;
    return rc == 0 ? 0 : -1;
}

/* The timer loop. After an overrun, deadlines already past are skipped (as
 * cyclictest does) and counted, unless catch_up asks to run them back to back. */
static void measure_timer(rtg_pd_worker *w)
{
    rtg_pd_shared *sh = w->sh;
    const rtg_periodic_cfg *cfg = sh->cfg;
    rtg_clock clk = cfg->clock;      /* own copy: resync below is not thread-safe */
    int64_t next_resync = sh->start_ns + 1000000000LL;
    const int64_t period = cfg->periods_ns ? cfg->periods_ns[w->index] : cfg->period_ns;
    const uint64_t ncycles = cycles_of(w);
    const int64_t end = cfg->duration_ns > 0 && !w->tr->cycles ? sh->start_ns + cfg->duration_ns : INT64_MAX;
    int64_t d = sh->start_ns;

    const bool catch_up = cfg->catch_up;
    uint64_t skipped = 0;

    for (uint64_t k = 0;; k++, d += period) {
        if (ncycles ? k >= ncycles : d >= end)
            break;
        if (rtg_pd_should_stop(sh))
            break;
        if (wait_deadline(w, d) != 0)
            break;
        int64_t t1 = rtg_clock_now(&clk);
        rtg_cycle_ctx c = new_ctx(w, k, t1);
        c.trigger_ns = d;
        c.next_ns = d + period;
        run_payload(w, &c);
        int64_t t2 = rtg_clock_now(&clk);
        if (finish_cycle(w, &c, (uint64_t)((d - sh->start_ns) / period), t1, t2))
            break;
        /* A TSC clock drifts ~1 us/s from the deadline time base; re-anchor it
         * once a second, after the cycle's timestamps are stored. */
        if (clk.id == RTG_CLOCK_TSC && d >= next_resync) {
            rtg_clock_resync(&clk);
            next_resync += 1000000000LL;
        }
        /* skip (and count) only deadlines that another cycle of this run would have taken:
         * after the last of --cycles nothing is skipped, the run simply ends */
        if (!catch_up && t2 > d + period && (!ncycles || k + 1 < ncycles)) {
            int64_t behind = (t2 - d - period) / period + 1;   /* deadlines now past */
            int64_t before_end = (end - d - 1) / period;          /* of those, due before the end */
            skipped += (uint64_t)(behind < before_end ? behind : (before_end > 0 ? before_end : 0));
            d += behind * period;
        }
    }
    w->skipped = skipped;
}

/* The kernel's receive instant of the datagram, CLOCK_REALTIME; false if absent. */
static bool rx_timestamp(struct msghdr *m, int64_t *rx_real)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
#ifdef SCM_TIMESTAMPNS
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *rx_real = rtg_timespec_ns(&ts);
            return true;
        }
#else
        (void)c, (void)rx_real;   /* no kernel receive stamp in POSIX */
#endif
    return false;
}

/* Nothing came (a poll timeout or an interrupted wait): whether the thread ends. */
static bool idle_ends(rtg_pd_worker *w, int64_t now)
{
    return rtg_pd_should_stop(w->sh) || (w->tr->idle && w->tr->idle(w->tr->arg, now));
}

/* FRAME: one cycle per datagram. Ti runs from its arrival: the kernel's stamp
 * (CLOCK_REALTIME, turned into an interval so the clocks' offset cancels). */
static void measure_frames(rtg_pd_worker *w)
{
    const rtg_trigger *tr = w->tr;
    const rtg_periodic_cfg *cfg = w->sh->cfg;
    rtg_clock clk = cfg->clock;
    const uint64_t ncycles = cycles_of(w);
    int64_t poll = tr->poll_ns > 0 ? tr->poll_ns : POLL_NS;
    struct timeval tv = {(time_t)(poll / 1000000000LL), (suseconds_t)(poll % 1000000000LL / 1000)};
    setsockopt(tr->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    union { char c[CMSG_SPACE(sizeof(struct timespec)) + 64]; struct cmsghdr align; } ctl;
    for (uint64_t k = 0; !ncycles || k < ncycles;) {
        if (rtg_pd_should_stop(w->sh))
            break;
        struct sockaddr_storage from;
        struct iovec iov = {w->frame, RTG_PD_FRAME_MAX};
        struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov,
                           .msg_iovlen = 1, .msg_control = ctl.c, .msg_controllen = sizeof ctl.c};
        ssize_t n = recvmsg(tr->fd, &m, 0);
        int64_t t1 = rtg_clock_now(&clk);
        if (n < 0) {
            /* ECONNREFUSED: a connected socket's peer is not listening (yet) */
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNREFUSED) {
                snprintf(w->out->error, sizeof w->out->error, "receiving a frame failed (%s).", strerror(errno));
                break;
            }
            if (idle_ends(w, t1))
                break;
            continue;
        }
        struct timespec rn;
        clock_gettime(CLOCK_REALTIME, &rn);
        rtg_cycle_ctx c = new_ctx(w, k++, t1);
        int64_t rx_real;
        c.kernel_ts = rx_timestamp(&m, &rx_real);
        c.trigger_ns = c.kernel_ts ? t1 - (rtg_timespec_ns(&rn) - rx_real) : t1;
        c.next_ns = c.trigger_ns + cfg->period_ns;
        c.frame = w->frame;
        c.frame_len = (size_t)n;
        c.from = (const struct sockaddr *)&from;
        c.from_len = m.msg_namelen;
        run_payload(w, &c);
        int64_t t2 = rtg_clock_now(&clk);
        if (finish_cycle(w, &c, c.cycle, t1, t2))
            break;
    }
}

/* EVENT: one cycle per post, Ti from the post instant. */
static void measure_events(rtg_pd_worker *w)
{
    const rtg_trigger *tr = w->tr;
    const rtg_periodic_cfg *cfg = w->sh->cfg;
    rtg_clock clk = cfg->clock;
    const uint64_t ncycles = cycles_of(w);
    int64_t poll = tr->poll_ns > 0 ? tr->poll_ns : POLL_NS;
    for (uint64_t k = 0; !ncycles || k < ncycles;) {
        if (rtg_pd_should_stop(w->sh))
            break;
        struct timespec ts = rtg_ns_timespec(rtg_mono_ns() + poll);
        int rc = rtg_sem_clockwait_mono(&tr->event->sem, &ts);
        int64_t t1 = rtg_clock_now(&clk);
        if (rc != 0) {
            if (idle_ends(w, t1))
                break;
            continue;
        }
        rtg_cycle_ctx c = new_ctx(w, k++, t1);
        void *first;
        c.trigger_ns = t1;
        if (rtg_ring_peek(&tr->event->posts, &first, 1) == 1) {
            c.trigger_ns = *(const int64_t *)first;
            rtg_ring_release(&tr->event->posts, 1);
        }
        c.next_ns = c.trigger_ns + cfg->period_ns;
        run_payload(w, &c);
        int64_t t2 = rtg_clock_now(&clk);
        if (finish_cycle(w, &c, c.cycle, t1, t2))
            break;
    }
}

void rtg_pd_measure(rtg_pd_worker *w)
{
    switch (w->tr->kind) {
    case RTG_TRIGGER_FRAME:
        measure_frames(w);
        break;
    case RTG_TRIGGER_EVENT:
        measure_events(w);
        break;
    default:
        measure_timer(w);
        break;
    }
}

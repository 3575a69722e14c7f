/* hil device: the controller stand-in, two threads of the cycle driver on the
 * device's CPU. The sender (TIMER trigger) sends frame k at the absolute instant
 * start + k * period and sleeps in between; the receiver (FRAME trigger on the
 * same socket) blocks in recvmsg, so a reply wakes it the way a bare ping-pong's
 * blocking recv is woken: hil_device_reply stamps the reply with the instant
 * recvmsg returned, checks it off in a bitmap window and puts its round trip
 * into a ring; the collector folds the ring into the round_trip distribution.
 * (Serving the socket from the sender's wait, a ppoll up to the next deadline
 * and then a recv, added about 2.6 us to every reply's wake-up on a KVM guest:
 * bench/hilwait.py, docs/performance.md.) Nothing grows with the run's length. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hil/device.h"
#include "test.h"

static size_t ring_capacity(int64_t period_ns)
{
    uint64_t need = (uint64_t)(2000000000LL / period_ns) + 1;   /* >= 2 s of replies */
    size_t cap = 1024;
    while (cap < need)
        cap <<= 1;
    return cap;
}

int hil_device_init(hil_device *d, const hil_device_cfg *cfg, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->cfg = *cfg;
    d->buf = calloc(1, cfg->frame_bytes);
    d->seen = calloc(HIL_SEEN_WINDOW / 64, sizeof *d->seen);
    if (!d->buf || !d->seen || rtg_ring_init(&d->rts, sizeof(int64_t), ring_capacity(cfg->period_ns)) != 0 ||
        rtg_dist_init(&d->round_trip, 0, 0) != 0) {
        hil_device_free(d);
        snprintf(err, errlen, "out of memory for the device's buffers; use a longer --period-us.");
        return -1;
    }
    rtg_touch((void *)d->seen, HIL_SEEN_WINDOW / 8);   /* fault the pages in before the loop */
    rtg_touch(d->buf, cfg->frame_bytes);
    return 0;
}

void hil_device_free(hil_device *d)
{
    free(d->buf);
    free((void *)d->seen);
    rtg_ring_free(&d->rts);
    rtg_dist_free(&d->round_trip);
    d->buf = NULL;
    d->seen = NULL;
}

/* The receiver sets a bit, the sender clears the bit of seq k - window: atomic words. */
static bool test_and_set(_Atomic uint64_t *bits, uint64_t seq)
{
    uint64_t i = seq % HIL_SEEN_WINDOW, m = 1ull << (i % 64);
    return atomic_fetch_or_explicit(&bits[i / 64], m, memory_order_relaxed) & m;
}

/* The receiver's cycle: one datagram, in hand since c->woke_ns. Records no
 * cycle of its own (the round trip goes to the device's ring). */
void hil_device_reply(void *arg, rtg_cycle_ctx *c)
{
    hil_device *d = arg;
    hil_reply r;
    int64_t now = c->woke_ns;
    uint64_t sent = atomic_load_explicit(&d->sent, memory_order_acquire);
    c->skip = true;
    memset(&r, 0, sizeof r);
    memcpy(&r, c->frame, c->frame_len < sizeof r ? c->frame_len : sizeof r);
    if (c->frame_len < sizeof r - sizeof r.sim_ns || r.magic != HIL_MAGIC_REPLY || r.seq >= sent) {
        d->bad++;
        return;
    }
    if (sent - r.seq > HIL_SEEN_WINDOW) {
        d->stale++;
        return;
    }
    if (test_and_set(d->seen, r.seq)) {
        d->duplicate++;
        return;
    }
    d->received++;
    if (now > atomic_load_explicit(&d->start_ns, memory_order_relaxed) + (int64_t)(r.seq + 1) * d->cfg.period_ns)
        d->late++;
    int64_t *slot = rtg_ring_slot(&d->rts);
    if (slot) {
        *slot = now - r.send_ns;
        rtg_ring_publish(&d->rts);
    }
}

/* The receiver keeps waiting until the sender ends the run (or a stop). */
bool hil_device_rx_idle(void *arg, int64_t now_ns)
{
    (void)arg, (void)now_ns;
    return false;
}

/* On the collector thread: fold the round trips. */
void hil_device_collect(void *arg)
{
    hil_device *d = arg;
    void *first;
    size_t n;
    while ((n = rtg_ring_peek(&d->rts, &first, 4096)) > 0) {
        rtg_dist_add_array(&d->round_trip, first, n);
        rtg_ring_release(&d->rts, n);
    }
}

/* After the last frame: the receiver takes late replies until the linger is over. */
static void linger(hil_device *d, const rtg_cycle_ctx *c)
{
    struct timespec until = rtg_ns_timespec(c->trigger_ns + d->cfg.linger_ns);
    while (!rtg_cycle_stopping(c) &&
           clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}

void hil_device_cycle(void *arg, rtg_cycle_ctx *c)
{
    hil_device *d = arg;
    uint64_t k = c->cycle;
    if (k == 0)
        atomic_store_explicit(&d->start_ns, c->trigger_ns, memory_order_relaxed);
    if (k >= d->cfg.frames) {
        linger(d, c);
        c->skip = true;
        c->end_run = true;   /* the simulation in this process stops too */
        return;
    }
    hil_frame f = {.magic = HIL_MAGIC_FRAME, .seq = k, .deadline_ns = c->trigger_ns};
    if (k >= HIL_SEEN_WINDOW) {   /* seq k - window leaves the window */
        uint64_t i = k % HIL_SEEN_WINDOW;
        atomic_fetch_and_explicit(&d->seen[i / 64], ~(1ull << (i % 64)), memory_order_relaxed);
    }
    f.send_ns = rtg_mono_ns();
    memcpy(d->buf, &f, sizeof f);
    atomic_store_explicit(&d->sent, k + 1, memory_order_release);   /* before its reply can come */
    if (send(d->cfg.fd, d->buf, d->cfg.frame_bytes, 0) < 0)
        d->send_errors++;   /* counted; the frame will show as lost */
    if (f.send_ns - c->trigger_ns > d->max_send_lag_ns)
        d->max_send_lag_ns = f.send_ns - c->trigger_ns;
}

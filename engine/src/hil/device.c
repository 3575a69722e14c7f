/* hil device: the controller stand-in, a payload of the cycle driver's TIMER
 * trigger with the socket served while waiting. Cycle k sends frame k at the
 * absolute instant start + k * period; between sends the driver hands every
 * reply to hil_device_service, which stamps it at once, checks it off in a
 * bitmap window and puts its round trip into a ring; the collector folds the
 * ring into the round_trip distribution. Nothing grows with the run's length. */
#include <errno.h>
#include <poll.h>
#ifdef RTG_POSIX_ONLY
#include <sys/select.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "hil/hil.h"
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
    rtg_touch(d->seen, HIL_SEEN_WINDOW / 8);   /* fault the pages in before the loop */
    rtg_touch(d->buf, cfg->frame_bytes);
    return 0;
}

void hil_device_free(hil_device *d)
{
    free(d->buf);
    free(d->seen);
    rtg_ring_free(&d->rts);
    rtg_dist_free(&d->round_trip);
    d->buf = NULL;
    d->seen = NULL;
}

static bool test_and_set(uint64_t *bits, uint64_t seq)
{
    uint64_t i = seq % HIL_SEEN_WINDOW, m = 1ull << (i % 64);
    bool was = bits[i / 64] & m;
    bits[i / 64] |= m;
    return was;
}

/* Read every reply waiting on the socket. */
void hil_device_service(void *arg)
{
    hil_device *d = arg;
    hil_reply r;
    while (1) {
        ssize_t n = recv(d->cfg.fd, &r, sizeof r, MSG_DONTWAIT);
        int64_t now = rtg_mono_ns();
        if (n < 0)
            return;   /* EAGAIN, or an ICMP error of a sim not yet listening */
        if ((size_t)n < sizeof r - sizeof r.sim_ns || r.magic != HIL_MAGIC_REPLY || r.seq >= d->sent) {
            d->bad++;
            continue;
        }
        if (d->sent - r.seq > HIL_SEEN_WINDOW) {
            d->stale++;
            continue;
        }
        if (test_and_set(d->seen, r.seq)) {
            d->duplicate++;
            continue;
        }
        d->received++;
        if (now > d->start_ns + (int64_t)(r.seq + 1) * d->cfg.period_ns)
            d->late++;
        int64_t *slot = rtg_ring_slot(&d->rts);
        if (slot) {
            *slot = now - r.send_ns;
            rtg_ring_publish(&d->rts);
        }
    }
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

/* After the last frame: take late replies until the linger is over. */
static void linger(hil_device *d, const rtg_cycle_ctx *c)
{
    struct pollfd p = {d->cfg.fd, POLLIN, 0};
    int64_t until = c->trigger_ns + d->cfg.linger_ns;
    while (!rtg_cycle_stopping(c)) {
        int64_t left = until - rtg_mono_ns();
        if (left <= 0)
            return;
        struct timespec ts = rtg_ns_timespec(left);
#ifdef RTG_POSIX_ONLY
        (void)p;   /* pselect: ppoll is not in POSIX.1-2008 */
        fd_set in;
        FD_ZERO(&in);
        FD_SET(d->cfg.fd, &in);
        if (pselect(d->cfg.fd + 1, &in, NULL, NULL, &ts, NULL) > 0)
#else
        if (ppoll(&p, 1, &ts, NULL) > 0)
#endif
            hil_device_service(d);
    }
}

void hil_device_cycle(void *arg, rtg_cycle_ctx *c)
{
    hil_device *d = arg;
    uint64_t k = c->cycle;
    if (k == 0)
        d->start_ns = c->trigger_ns;
    if (k >= d->cfg.frames) {
        linger(d, c);
        c->skip = true;
        c->end_run = true;   /* the simulation in this process stops too */
        return;
    }
    hil_frame f = {.magic = HIL_MAGIC_FRAME, .seq = k, .deadline_ns = c->trigger_ns};
    if (k >= HIL_SEEN_WINDOW) {   /* seq k - window leaves the window */
        uint64_t i = k % HIL_SEEN_WINDOW;
        d->seen[i / 64] &= ~(1ull << (i % 64));
    }
    f.send_ns = rtg_mono_ns();
    memcpy(d->buf, &f, sizeof f);
    d->sent++;
    if (send(d->cfg.fd, d->buf, d->cfg.frame_bytes, 0) < 0)
        d->send_errors++;   /* counted; the frame will show as lost */
    if (f.send_ns - c->trigger_ns > d->max_send_lag_ns)
        d->max_send_lag_ns = f.send_ns - c->trigger_ns;
}

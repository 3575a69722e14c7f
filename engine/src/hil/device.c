/* hil device: the controller stand-in. Sends frame k at the absolute instant
 * start + k * period (CLOCK_MONOTONIC) and, between sends, waits for replies,
 * stamping each when it has it in hand. Only the arrays are written in the loop;
 * what was late or lost is worked out afterwards from them. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "hil/hil.h"
#include "test.h"

void hil_device_out_free(hil_device_out *o)
{
    free(o->send_ns);
    free(o->reply_ns);
    o->send_ns = o->reply_ns = NULL;
}

/* Read every reply waiting on the socket. */
static void drain_replies(const hil_device_cfg *cfg, hil_device_out *o)
{
    hil_reply r;
    while (1) {
        ssize_t n = recv(cfg->fd, &r, sizeof r, MSG_DONTWAIT);
        int64_t now = rtg_mono_ns();
        if (n < 0)
            return;   /* EAGAIN, or an ICMP error of a sim not yet listening */
        if ((size_t)n < sizeof r - sizeof r.sim_ns || r.magic != HIL_MAGIC_REPLY || r.seq >= o->sent) {
            o->bad++;
            continue;
        }
        if (o->reply_ns[r.seq]) {
            o->duplicate++;
            continue;
        }
        o->reply_ns[r.seq] = now;
        o->received++;
    }
}

/* Take replies as they come until the instant `until`. */
static void receive_until(const hil_device_cfg *cfg, hil_device_out *o, int64_t until)
{
    struct pollfd p = {cfg->fd, POLLIN, 0};
    while (!rtg_stop) {
        int64_t left = until - rtg_mono_ns();
        if (left <= 0)
            return;
        struct timespec ts = rtg_ns_timespec(left);
        if (ppoll(&p, 1, &ts, NULL) > 0)
            drain_replies(cfg, o);
    }
}

int hil_device_run(const hil_device_cfg *cfg, hil_device_out *o)
{
    memset(o, 0, sizeof *o);
    o->tid = (int)syscall(SYS_gettid);
    size_t n = cfg->frames ? cfg->frames : 1;
    o->send_ns = calloc(n, sizeof *o->send_ns);
    o->reply_ns = calloc(n, sizeof *o->reply_ns);
    unsigned char *buf = calloc(1, cfg->frame_bytes);
    if (!o->send_ns || !o->reply_ns || !buf) {
        free(buf);
        snprintf(o->err, sizeof o->err, "out of memory for %llu frames; use fewer.",
                 (unsigned long long)cfg->frames);
        return -1;
    }
    memset(o->send_ns, 0, n * sizeof *o->send_ns);   /* fault the pages in before the loop */
    memset(o->reply_ns, 0, n * sizeof *o->reply_ns);
    if (hil_thread_setup(&cfg->th, &o->sched, o->err, sizeof o->err) != 0) {
        free(buf);
        return -1;
    }
    hil_frame f = {.magic = HIL_MAGIC_FRAME};
    for (uint64_t k = 0; k < cfg->frames && !rtg_stop; k++) {
        int64_t d = cfg->start_ns + (int64_t)k * cfg->period_ns;
        receive_until(cfg, o, d);
        if (rtg_stop)
            break;
        f.seq = k;
        f.deadline_ns = d;
        f.send_ns = rtg_mono_ns();
        memcpy(buf, &f, sizeof f);
        o->send_ns[k] = f.send_ns;
        o->sent++;
        if (send(cfg->fd, buf, cfg->frame_bytes, 0) < 0)
            o->send_errors++;   /* counted; the frame will show as lost */
        if (f.send_ns - d > o->max_send_lag_ns)
            o->max_send_lag_ns = f.send_ns - d;
    }
    receive_until(cfg, o, cfg->start_ns + (int64_t)o->sent * cfg->period_ns + cfg->linger_ns);
    free(buf);
    return 0;
}

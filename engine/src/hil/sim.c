/* hil sim: the simulation side of the loop. Blocks on its socket, wakes on a
 * frame, runs one payload step, replies with its state, and records per cycle
 *   Ti = sim running - frame arrival (the kernel's receive timestamp),
 *   Ts = the step,
 *   Tw = next expected frame - end of the reply (< 0: the next frame is due
 *        before this cycle was done).
 * Sequence numbers are checked: frames that never arrived are counted as gaps. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hil/hil.h"
#include "test.h"

#define POLL_NS 20000000LL   /* how often a blocked sim looks at the stop conditions */

static int64_t *alloc_touched(uint64_t n)
{
    int64_t *a = calloc(n ? n : 1, sizeof *a);
    if (a)
        memset(a, 0, (n ? n : 1) * sizeof *a);   /* fault the pages in before the loop */
    return a;
}

void hil_sim_out_free(hil_sim_out *o)
{
    free(o->ti);
    free(o->ts);
    free(o->tw);
    o->ti = o->ts = o->tw = NULL;
}

static void switches(uint64_t *nv, uint64_t *niv, int sign)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        *nv += (uint64_t)(sign * ru.ru_nvcsw);
        *niv += (uint64_t)(sign * ru.ru_nivcsw);
    }
}

/* The kernel's receive instant of the datagram, CLOCK_REALTIME; false if absent. */
static bool rx_timestamp(struct msghdr *m, int64_t *rx_real)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            *rx_real = rtg_timespec_ns(&ts);
            return true;
        }
    return false;
}

static void track_sequence(hil_sim_out *o, uint64_t seq, uint64_t *expected)
{
    if (seq > *expected)
        o->gaps += seq - *expected;
    if (seq < *expected)
        o->reordered++;
    else
        *expected = seq + 1;
}

/* Whether a blocked sim should give up waiting; sets err for a silent device. */
static bool should_stop(const hil_sim_cfg *cfg, hil_sim_out *o, int64_t now, int64_t started,
                        int64_t last_arrival)
{
    if (rtg_stop)
        return true;
    if (cfg->device_done && atomic_load(cfg->device_done))
        return true;
    if (o->received == 0 && now - started > cfg->first_wait_ns) {
        snprintf(o->err, sizeof o->err,
                 "no frame arrived within %.1f s; check that the device sends to this address.",
                 (double)cfg->first_wait_ns / 1e9);
        return true;
    }
    return o->received > 0 && now - last_arrival > cfg->idle_ns;
}

int hil_sim_run(const hil_sim_cfg *cfg, hil_sim_out *o)
{
    memset(o, 0, sizeof *o);
    o->tid = (int)syscall(SYS_gettid);
    o->ti = alloc_touched(cfg->frames);
    o->ts = alloc_touched(cfg->frames);
    o->tw = alloc_touched(cfg->frames);
    if (!o->ti || !o->ts || !o->tw) {
        snprintf(o->err, sizeof o->err, "out of memory for %llu frames; use fewer.",
                 (unsigned long long)cfg->frames);
        return -1;
    }
    if (hil_thread_setup(&cfg->th, &o->sched, o->err, sizeof o->err) != 0)
        return -1;
    struct timeval tv = {0, POLL_NS / 1000};
    setsockopt(cfg->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    unsigned char buf[HIL_MAX_FRAME + 64];
    union { char c[CMSG_SPACE(sizeof(struct timespec)) + 64]; struct cmsghdr align; } ctl;
    hil_reply rep;
    memset(&rep, 0, sizeof rep);
    uint64_t expected = 0, seq0 = 0;
    int64_t started = rtg_mono_ns(), last_arrival = 0, anchor = 0;
    o->anchored = !cfg->device_local;
    switches(&o->nvcsw, &o->nivcsw, -1);
    while (1) {
        struct sockaddr_storage from;
        struct iovec iov = {buf, sizeof buf};
        struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &iov,
                           .msg_iovlen = 1, .msg_control = ctl.c, .msg_controllen = sizeof ctl.c};
        ssize_t n = recvmsg(cfg->fd, &m, 0);
        int64_t t1 = rtg_mono_ns();
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                snprintf(o->err, sizeof o->err, "receiving a frame failed (%s).", strerror(errno));
                break;
            }
            if (should_stop(cfg, o, t1, started, last_arrival))
                break;
            continue;
        }
        struct timespec rn;
        clock_gettime(CLOCK_REALTIME, &rn);
        hil_frame f;
        if ((size_t)n < sizeof f) {
            o->bad++;
            continue;
        }
        memcpy(&f, buf, sizeof f);
        if (f.magic != HIL_MAGIC_FRAME) {
            o->bad++;
            continue;
        }
        o->received++;
        last_arrival = t1;
        track_sequence(o, f.seq, &expected);
        if (cfg->drop_every && f.seq % cfg->drop_every == cfg->drop_every - 1) {
            o->ignored++;
            continue;
        }
        /* Ti on the realtime clock from the kernel's stamp (an interval, so the
         * clock's offset cancels); else from the device's send instant. */
        int64_t rx_real, ti;
        bool kts = rx_timestamp(&m, &rx_real);
        if (kts)
            ti = rtg_timespec_ns(&rn) - rx_real;
        else
            ti = cfg->device_local ? t1 - f.send_ns : 0;
        o->kernel_ts = o->kernel_ts || kts;
        double state = cfg->step ? cfg->step(cfg->step_arg) : 0.0;
        int64_t t2 = rtg_mono_ns();
        rep.magic = HIL_MAGIC_REPLY;
        rep.seq = f.seq;
        rep.send_ns = f.send_ns;
        rep.step++;
        rep.state = state;
        rep.sim_ns = t2;
        sendto(cfg->fd, &rep, HIL_REPLY_BYTES, 0, (struct sockaddr *)&from, m.msg_namelen);
        int64_t t3 = rtg_mono_ns();
        int64_t next;
        if (!o->anchored) {
            next = f.deadline_ns + cfg->period_ns;
        } else {
            /* Device clock unknown: the schedule is the first arrival + k periods. */
            if (anchor == 0) {
                anchor = t1 - ti;
                seq0 = f.seq;
            }
            next = anchor + (int64_t)(f.seq - seq0 + 1) * cfg->period_ns;
        }
        if (o->n < cfg->frames) {
            o->ti[o->n] = ti;
            o->ts[o->n] = t2 - t1;
            o->tw[o->n] = next - t3;
            o->n++;
        }
        o->answered++;
        /* alone, the run ends with the last frame, or when the arrays are full
         * (a device that keeps sending) */
        if (!cfg->device_done && (f.seq + 1 >= cfg->frames || o->answered >= cfg->frames))
            break;
    }
    switches(&o->nvcsw, &o->nivcsw, 1);
    return o->err[0] ? -1 : 0;
}

/* Unit tests of the cycle driver: each trigger (timer, frame on a UDP socket,
 * event posted by another thread) runs the cycles it is given with Ti/Ts/Tw
 * that agree with known payloads and send instants, and every way of ending a
 * run (a stop request during a long wait or a long payload, a payload ending
 * the run) returns at once. Threads run SCHED_OTHER, not pinned. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "periodic/periodic.h"
#include "stop.h"

static rtg_periodic_cfg cfg;

static void base_cfg(int nthreads, int64_t period_ns)
{
    memset(&cfg, 0, sizeof cfg);
    cfg.nthreads = nthreads;
    for (int i = 0; i < nthreads; i++)
        cfg.cpus[i] = -1;
    cfg.policy = RTG_POL_OTHER;
    cfg.period_ns = period_ns;
    cfg.start_delay_ns = 20000000;
    char err[256];
    rtg_clock_init(&cfg.clock, RTG_CLOCK_MONOTONIC, err, sizeof err);
}

static void busy(int64_t ns, const rtg_cycle_ctx *c)
{
    int64_t end = rtg_mono_ns() + ns;
    while (rtg_mono_ns() < end && !rtg_cycle_stopping(c))
        ;
}

/* ---- timer: a payload of known length ---- */

static void spin_500us(void *arg, rtg_cycle_ctx *c)
{
    (void)arg;
    busy(500000, c);
}

static void test_timer(void)
{
    base_cfg(1, 2000000);
    rtg_trigger tr = {.kind = RTG_TRIGGER_TIMER, .cycle = spin_500us};
    cfg.triggers = &tr;
    cfg.cycles = 50;
    rtg_periodic_run run;
    char err[256] = "";
    CHECK(rtg_periodic(&cfg, &run, err, sizeof err) == 0, "timer run: %s", err);
    CHECK_EQ_I(run.all.cycles, 50);
    CHECK_EQ_I(run.all.dropped, 0);
    CHECK(run.all.ti.min >= 0, "ti.min %lld", (long long)run.all.ti.min);
    CHECK(run.all.ts.min >= 500000, "ts.min %lld below the 500 us payload", (long long)run.all.ts.min);
    /* Ti + Ts + Tw = period for every cycle, so Tw <= period - Ts */
    CHECK(run.all.tw.max <= 1500000, "tw.max %lld above period - payload", (long long)run.all.tw.max);
    CHECK(!run.interrupted && !run.ended_by_payload, "timer run ended early");
    rtg_periodic_free(&run);
}

/* ---- frame: datagrams stamped by their sender ---- */

typedef struct {
    int fd;
    struct sockaddr_in to;
    int n;
    int64_t gap_ns;
} sender;

static void *send_frames(void *p)
{
    sender *s = p;
    for (int64_t i = 0; i < s->n; i++) {
        int64_t msg[2] = {i, rtg_mono_ns()};
        sendto(s->fd, msg, sizeof msg, 0, (struct sockaddr *)&s->to, sizeof s->to);
        struct timespec ts = rtg_ns_timespec(s->gap_ns);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

typedef struct {
    int seen, kernel, before_send, after_wake, odd_skipped;
    int last;
} frame_check;

static void on_frame(void *arg, rtg_cycle_ctx *c)
{
    frame_check *f = arg;
    int64_t msg[2];
    if (c->frame_len != sizeof msg)
        return;
    memcpy(msg, c->frame, sizeof msg);
    f->seen++;
    f->kernel += c->kernel_ts;
    /* the arrival is after the send (5 us for the realtime/monotonic reads) and
     * before the thread ran */
    f->before_send += c->trigger_ns < msg[1] - 5000;
    f->after_wake += c->trigger_ns > c->woke_ns;
    if (msg[0] % 2 == 1) {
        c->skip = true;
        f->odd_skipped++;
    }
    if (msg[0] == f->last)
        c->end = true;
}

static int udp_socket(struct sockaddr_in *bound, bool stamps)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    int on = 1;
    if (stamps)
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    if (bound)
        *bound = a;
    return fd;
}

static void test_frame(void)
{
    struct sockaddr_in addr;
    int rx = udp_socket(&addr, true), tx = udp_socket(NULL, false);
    frame_check f = {.last = 99};
    base_cfg(1, 1000000);
    rtg_trigger tr = {.kind = RTG_TRIGGER_FRAME, .fd = rx, .cycle = on_frame, .arg = &f};
    cfg.triggers = &tr;
    cfg.cycles = 1000;
    sender s = {.fd = tx, .to = addr, .n = 100, .gap_ns = 1000000};
    pthread_t th;
    pthread_create(&th, NULL, send_frames, &s);
    rtg_periodic_run run;
    char err[256] = "";
    CHECK(rtg_periodic(&cfg, &run, err, sizeof err) == 0, "frame run: %s", err);
    pthread_join(th, NULL);
    CHECK_EQ_I(f.seen, 100);
    CHECK_EQ_I(run.all.cycles, 50);   /* the odd frames were skipped */
    CHECK_EQ_I(f.odd_skipped, 50);
#ifdef RTG_POSIX_ONLY
    CHECK_EQ_I(f.kernel, 0);     /* no kernel receive stamp (SO_TIMESTAMPNS) in POSIX */
#else
    CHECK_EQ_I(f.kernel, 100);
#endif
    CHECK_EQ_I(f.before_send, 0);
    CHECK_EQ_I(f.after_wake, 0);
    CHECK(run.all.ti.min >= 0, "ti.min %lld", (long long)run.all.ti.min);
    CHECK(run.t[0].error[0] == '\0', "error: %s", run.t[0].error);
    rtg_periodic_free(&run);
    close(rx);
    close(tx);
}

/* ---- event: posts from another thread ---- */

typedef struct {
    rtg_event *ev;
    int n;
} poster;

static void *post_events(void *p)
{
    poster *q = p;
    for (int i = 0; i < q->n; i++) {
        rtg_event_post(q->ev);
        struct timespec ts = rtg_ns_timespec(500000);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void end_at_199(void *arg, rtg_cycle_ctx *c)
{
    (void)arg;
    c->end = c->cycle == 199;
}

static void test_event(void)
{
    rtg_event ev;
    CHECK(rtg_event_init(&ev) == 0, "event init");
    base_cfg(1, 500000);
    rtg_trigger tr = {.kind = RTG_TRIGGER_EVENT, .event = &ev, .cycle = end_at_199};
    cfg.triggers = &tr;
    cfg.cycles = 1000;
    poster q = {.ev = &ev, .n = 200};
    pthread_t th;
    pthread_create(&th, NULL, post_events, &q);
    rtg_periodic_run run;
    char err[256] = "";
    CHECK(rtg_periodic(&cfg, &run, err, sizeof err) == 0, "event run: %s", err);
    pthread_join(th, NULL);
    CHECK_EQ_I(run.all.cycles, 200);
    CHECK(run.all.ti.min >= 0, "ti.min %lld", (long long)run.all.ti.min);
    CHECK(run.all.ti.max < 1000000000, "ti.max %lld: a post was not seen", (long long)run.all.ti.max);
    rtg_periodic_free(&run);
    rtg_event_free(&ev);
}

/* ---- stops ---- */

static void *request_stop_later(void *p)
{
    (void)p;
    struct timespec ts = rtg_ns_timespec(100000000);
    nanosleep(&ts, NULL);
    rtg_stop_request();
    return NULL;
}

static double timed_run(const char *what, bool *interrupted)
{
    pthread_t th;
    pthread_create(&th, NULL, request_stop_later, NULL);
    rtg_periodic_run run;
    char err[256] = "";
    int64_t t0 = rtg_mono_ns();
    CHECK(rtg_periodic(&cfg, &run, err, sizeof err) == 0, "%s: %s", what, err);
    double took = (double)(rtg_mono_ns() - t0) / 1e9;
    pthread_join(th, NULL);
    *interrupted = run.interrupted;
    rtg_periodic_free(&run);
    rtg_stop = 0;
    return took;
}

static void long_payload(void *arg, rtg_cycle_ctx *c)
{
    (void)arg;
    busy(10000000000LL, c);
}

static void test_stops(void)
{
    bool intr;
    /* a stop during the start delay */
    base_cfg(2, 1000000);
    cfg.start_delay_ns = 30000000000LL;
    cfg.cycles = 10;
    double took = timed_run("start delay", &intr);
    CHECK(took < 1.0 && intr, "a stop during a 30 s start delay took %.3f s", took);
    /* a stop during a 10 s period */
    base_cfg(1, 10000000000LL);
    cfg.cycles = 3;
    took = timed_run("long period", &intr);
    CHECK(took < 1.0 && intr, "a stop during a 10 s period took %.3f s", took);
    /* a stop during a 10 s payload */
    base_cfg(1, 1000000);
    rtg_trigger tr = {.kind = RTG_TRIGGER_TIMER, .cycle = long_payload};
    cfg.triggers = &tr;
    cfg.cycles = 3;
    took = timed_run("long payload", &intr);
    CHECK(took < 1.0 && intr, "a stop during a 10 s payload took %.3f s", took);
    /* a stop while waiting for frames that never come, and for events */
    int rx = udp_socket(NULL, true);
    rtg_event ev;
    rtg_event_init(&ev);
    base_cfg(2, 1000000);
    rtg_trigger two[2] = {{.kind = RTG_TRIGGER_FRAME, .fd = rx, .poll_ns = 5000000000LL},
                          {.kind = RTG_TRIGGER_EVENT, .event = &ev, .poll_ns = 5000000000LL}};
    cfg.triggers = two;
    cfg.cycles = 3;
    took = timed_run("frame and event waits", &intr);
    CHECK(took < 1.0 && intr, "a stop during 5 s frame/event waits took %.3f s", took);
    rtg_event_free(&ev);
    close(rx);
}

static void end_run_at_5(void *arg, rtg_cycle_ctx *c)
{
    (void)arg;
    c->end_run = c->cycle == 5;
}

static void test_payload_ends_the_run(void)
{
    int rx = udp_socket(NULL, true);
    base_cfg(2, 1000000);
    rtg_trigger two[2] = {{.kind = RTG_TRIGGER_TIMER, .cycle = end_run_at_5},
                          {.kind = RTG_TRIGGER_FRAME, .fd = rx, .poll_ns = 5000000000LL}};
    cfg.triggers = two;
    cfg.cycles = 1000;
    rtg_periodic_run run;
    char err[256] = "";
    int64_t t0 = rtg_mono_ns();
    CHECK(rtg_periodic(&cfg, &run, err, sizeof err) == 0, "end_run: %s", err);
    double took = (double)(rtg_mono_ns() - t0) / 1e9;
    CHECK(took < 1.0, "the frame thread outlived the run by %.3f s", took);
    CHECK(run.ended_by_payload && !run.interrupted, "ended_by_payload %d interrupted %d",
          run.ended_by_payload, run.interrupted);
    CHECK_EQ_I(run.t[0].cycles, 6);
    CHECK_EQ_I(run.t[1].cycles, 0);
    rtg_periodic_free(&run);
    close(rx);
}

int main(void)
{
    test_timer();
    test_frame();
    test_event();
    test_stops();
    test_payload_ends_the_run();
    return check_done();
}

/* message: intertask message latency over a POSIX message queue or a pipe.
 * A sender at --priority and a receiver at --priority + 1 (on one CPU unless
 * --cpus names two). Each round the sender takes t0, writes it into a message
 * of --bytes bytes and sends it; the receiver, blocked in mq_receive / read,
 * preempts the sender, takes t1 as soon as the call returns; latency = t1 - t0
 * (send call, wake-up, switch, receive call's return with the copy of the
 * message). The receiver then sends a short reply the sender waits for, so one
 * message is in flight at a time (as rt-tests' pmqtest does); the reply is not
 * timed. With --equal-priority the receiver runs only when the sender blocks
 * in its wait for the reply, so a sample also spans that blocking call;
 * --pause-us paces the rounds (both as pmqtest -i). The queue is unlinked as
 * soon as it is open, so nothing is left behind. */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "clock.h"
#include "test.h"

static const rtg_opt message_opts[] = {
    {"priority", RTG_OPT_INT, "80", 1, 98, NULL, "priority of the sender; the receiver runs at +1"},
    {"transport", RTG_OPT_ENUM, "mq", 0, 0, "mq|pipe", "POSIX message queue or pipe"},
    {"bytes", RTG_OPT_INT, "16", 16, 4096, NULL, "message size in bytes (carries the send timestamp)"},
    {"iterations", RTG_OPT_INT, "10000", 10, 10000000, NULL, "messages measured"},
    {"equal-priority", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "run the receiver at the sender's priority (as pmqtest does): it runs only once the sender blocks"},
    {"pause-us", RTG_OPT_INT, "0", 0, 1000000, NULL,
     "the receiver sleeps this long before replying (untimed; pmqtest's -i pacing)"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured"},
    {0},
};

#define WARMUP 20

typedef struct {
    bool mq;
    size_t bytes, n;
    int64_t pause_ns;
    mqd_t q[2];               /* 0: sender -> receiver, 1: reply */
    int rfd[2], wfd[2];       /* pipes, write ends non-blocking */
    int64_t *lat;
    _Atomic size_t received;
    _Atomic int receiver_ready;
} channel;

static bool send_msg(channel *c, int dir, const char *buf)
{
    if (c->mq)
        return mq_send(c->q[dir], buf, c->bytes, 0) == 0;
    return write(c->wfd[dir], buf, c->bytes) == (ssize_t)c->bytes;
}

static bool recv_msg(channel *c, int dir, char *buf)
{
    if (c->mq)
        return mq_receive(c->q[dir], buf, c->bytes, NULL) == (ssize_t)c->bytes;
    size_t got = 0;
    while (got < c->bytes) {
        ssize_t r = read(c->rfd[dir], buf + got, c->bytes - got);
        if (r <= 0 && errno != EINTR)
            return false;
        if (r > 0)
            got += (size_t)r;
    }
    return true;
}

static void *sender(void *p)
{
    channel *c = p;
    char buf[4096];
    memset(buf, 0, sizeof buf);
    for (size_t i = 0; i < c->n && !rtg_bench_stopping(); i++) {
        int64_t t0 = rtg_mono_ns();
        memcpy(buf, &t0, sizeof t0);
        if (!send_msg(c, 0, buf) || !recv_msg(c, 1, buf))
            break;
    }
    return NULL;
}

static void *receiver(void *p)
{
    channel *c = p;
    char buf[4096];
    memset(buf, 0, sizeof buf);
    atomic_store(&c->receiver_ready, 1);
    for (size_t i = 0; i < c->n; i++) {
        if (!recv_msg(c, 0, buf))
            break;
        int64_t t1 = rtg_mono_ns();
        if (rtg_bench_stopping())
            break;
        int64_t t0;
        memcpy(&t0, buf, sizeof t0);
        c->lat[i] = t1 - t0;
        atomic_store(&c->received, i + 1);
        if (c->pause_ns)
            rtg_sleep_until(rtg_mono_ns() + c->pause_ns);
        if (!send_msg(c, 1, buf))
            break;
    }
    return NULL;
}

/* A message into each direction, never blocking, so a blocked reader returns. */
static void unblock_channel(void *p)
{
    channel *c = p;
    char buf[4096] = {0};
    for (int d = 0; d < 2; d++) {
        if (c->mq) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            mq_timedsend(c->q[d], buf, c->bytes, 0, &now);
        } else if (write(c->wfd[d], buf, c->bytes) < 0) {
            /* full: the reader has data already */
        }
    }
}

static int open_mq(channel *c, rtg_result *res)
{
    struct mq_attr a = {.mq_flags = 0, .mq_maxmsg = 1, .mq_msgsize = (long)c->bytes};
    for (int d = 0; d < 2; d++) {
        char name[64];
        snprintf(name, sizeof name, "/rtgauge-message-%d-%d", (int)getpid(), d);
        c->q[d] = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
        if (c->q[d] == (mqd_t)-1) {
            int e = errno;
            if (d == 1) {
                mq_close(c->q[0]);
            }
            return rtg_fail(res, RTG_EXIT_FAIL,
                            "cannot create a POSIX message queue (%s); check /proc/sys/fs/mqueue/queues_max, "
                            "msgsize_max and ulimit -q.", strerror(e));
        }
        mq_unlink(name);
    }
    return RTG_EXIT_OK;
}

static int open_pipes(channel *c, rtg_result *res)
{
    for (int d = 0; d < 2; d++) {
        int fd[2];
        if (pipe2(fd, O_CLOEXEC) != 0) {
            int e = errno;
            if (d == 1) {
                close(c->rfd[0]);
                close(c->wfd[0]);
            }
            return rtg_fail(res, RTG_EXIT_FAIL, "cannot create a pipe (%s); raise ulimit -n.", strerror(e));
        }
        fcntl(fd[1], F_SETFL, O_NONBLOCK);
        c->rfd[d] = fd[0];
        c->wfd[d] = fd[1];
    }
    return RTG_EXIT_OK;
}

static void close_channel(channel *c)
{
    for (int d = 0; d < 2; d++) {
        if (c->mq) {
            mq_close(c->q[d]);
        } else {
            close(c->rfd[d]);
            close(c->wfd[d]);
        }
    }
}

static int message_run(const rtg_opts *o, rtg_result *res)
{
    rtg_bench b;
    int status = rtg_bench_setup(&b, o, res, false);
    if (status != RTG_EXIT_OK)
        return status;
    static channel c;
    memset(&c, 0, sizeof c);
    c.mq = strcmp(rtg_opt_str(o, "transport"), "mq") == 0;
    c.bytes = (size_t)rtg_opt_int(o, "bytes");
    c.n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    c.pause_ns = rtg_opt_int(o, "pause-us") * 1000;
    int rprio = b.priority + (rtg_opt_flag(o, "equal-priority") ? 0 : 1);
    c.lat = calloc(c.n, sizeof *c.lat);
    if (!c.lat)
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu samples; ask for fewer --iterations.", c.n);
    status = c.mq ? open_mq(&c, res) : open_pipes(&c, res);
    if (status != RTG_EXIT_OK) {
        free(c.lat);
        return status;
    }
    pthread_t th[2];
    int started = 0;
    char err[512];
    int cpu_s = rtg_bench_cpu_of(&b, 0), cpu_r = rtg_bench_cpu_of(&b, 1);
    if (rtg_spawn_thread(&th[0], b.policy, rprio, cpu_r, 64, receiver, &c, err, sizeof err) == 0) {
        started = 1;
        while (!atomic_load(&c.receiver_ready) && rtg_mono_ns() < b.deadline_ns && !rtg_bench_stopping())
            rtg_sleep_until(rtg_mono_ns() + 1000000);
        rtg_sleep_until(rtg_mono_ns() + 2000000);   /* the receiver reaches its first receive */
        if (rtg_spawn_thread(&th[1], b.policy, b.priority, cpu_s, 64, sender, &c, err, sizeof err) == 0)
            started = 2;
    }
    if (started < 2) {
        atomic_store(&rtg_bench_abort, 1);
        status = rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    int left = rtg_bench_join(&b, th, started, unblock_channel, &c);
    if (status == RTG_EXIT_OK && left > 0)
        status = rtg_fail(res, RTG_EXIT_FAIL, "%d threads did not stop within the watchdog's grace time.", left);
    else if (status == RTG_EXIT_OK && b.timed_out)
        status = rtg_fail(res, RTG_EXIT_FAIL,
                          "the messages did not finish within --timeout-s %.0f s; raise it or ask for fewer --iterations.",
                          rtg_opt_num(o, "timeout-s"));
    size_t got = atomic_load(&c.received);
    if (status == RTG_EXIT_OK && got < c.n && !rtg_stop)
        status = rtg_fail(res, RTG_EXIT_FAIL, "the %s failed after %zu of %zu messages.",
                          c.mq ? "message queue" : "pipe", got, c.n);
    if (status == RTG_EXIT_OK) {
        rtg_samples s = {c.lat + (got < WARMUP ? got : WARMUP), 0, 0};
        s.n = s.cap = got > WARMUP ? got - WARMUP : 0;
        rtg_samples_report(res, "latency", &s);
        rtg_j_set(res->env, "cpus_used", rtg_j_strf("%d,%d", cpu_s, cpu_r));
        rtg_bench_method(res, c.mq ? "latency: from the sender's timestamp just before mq_send to the receiver's "
                                     "first timestamp after mq_receive returned (receiver one priority higher unless --equal-priority)"
                                   : "latency: from the sender's timestamp just before write to the receiver's "
                                     "first timestamp after read returned (receiver one priority higher unless --equal-priority)");
    }
    if (left > 0)
        return status;
    close_channel(&c);
    free(c.lat);
    return status;
}

static const rtg_metric message_metrics[] = {
    {"latency", RTG_METRIC_DISTRIBUTION, "ns", 0, "from the send to the receiver running with the message"},
    {0},
};

const rtg_test rtg_test_message = {
    .name = "message",
    .summary = "intertask message latency over a POSIX message queue or a pipe",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = message_opts,
    .metrics = message_metrics,
    .flags = RTG_TEST_RT,
    .run = message_run,
};

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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"
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
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

#define WARMUP 20

typedef struct {
    bool mq;
    size_t bytes, n;
    int64_t pause_ns;
    rtg_chan ch[2];           /* 0: sender -> receiver, 1: reply */
    int64_t *lat;
    int64_t *at;              /* each sample's send instant t0 (its span: host stalls) */
    _Atomic size_t received;
} channel;

static bool send_msg(channel *c, int dir, const char *buf)
{
    return rtg_chan_send(&c->ch[dir], buf);
}

static bool recv_msg(channel *c, int dir, char *buf)
{
    return rtg_chan_recv(&c->ch[dir], buf);
}

static void *sender(void *p)
{
    channel *c = p;
    char buf[4096];
    memset(buf, 0, sizeof buf);
    for (size_t i = 0; i < c->n && !rtg_micro_stopping(); i++) {
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
    for (size_t i = 0; i < c->n; i++) {
        if (!recv_msg(c, 0, buf))
            break;
        int64_t t1 = rtg_mono_ns();
        if (rtg_micro_stopping())
            break;
        int64_t t0;
        memcpy(&t0, buf, sizeof t0);
        c->lat[i] = t1 - t0;
        c->at[i] = t0;
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
    rtg_chan_poke(&c->ch[0]);
    rtg_chan_poke(&c->ch[1]);
}

static int message_run(const rtg_opts *o, rtg_result *res)
{
    static channel c;
    memset(&c, 0, sizeof c);
    c.mq = strcmp(rtg_opt_str(o, "transport"), "mq") == 0;
    c.bytes = (size_t)rtg_opt_int(o, "bytes");
    c.n = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    c.pause_ns = rtg_opt_int(o, "pause-us") * 1000;
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, false, 2, 0, unblock_channel, &c);
    if (status != RTG_EXIT_OK)
        return status;
    c.lat = calloc(c.n, sizeof *c.lat);
    c.at = calloc(c.n, sizeof *c.at);
    if (c.at)
        rtg_touch(c.at, c.n * sizeof *c.at);
    if (!c.lat || !c.at) {
        free(c.lat), free(c.at);
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu samples; ask for fewer --iterations.", c.n);
    }
    rtg_prim kind = c.mq ? RTG_PRIM_MQ : RTG_PRIM_PIPE;
    char err[512];
    if (rtg_chan_open(&c.ch[0], kind, c.bytes, err, sizeof err) != 0 ||
        rtg_chan_open(&c.ch[1], kind, c.bytes, err, sizeof err) != 0) {
        if (c.ch[0].rfd >= 0 || c.ch[0].mq != (mqd_t)-1)
            rtg_chan_close(&c.ch[0]);
        free(c.lat), free(c.at);
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    int rprio = rtg_opt_flag(o, "equal-priority") ? 0 : 1;
    int cpu_s = rtg_micro_cpu_of(&s.b, 0), cpu_r = rtg_micro_cpu_of(&s.b, 1);
    /* the receiver first, checked blocked in its first receive, then the sender */
    rtg_role recv = {"receiver", receiver, &c, rprio, cpu_r, RTG_AT_BLOCKED, kind, 0};
    rtg_role send = {"sender", sender, &c, 0, cpu_s, RTG_AT_STARTED, kind, 0};
    if (rtg_scn_add(&s, &recv) == 0)
        rtg_scn_add(&s, &send);
    status = rtg_scn_join(&s, res, "the messages");
    size_t got = atomic_load(&c.received);
    if (status == RTG_EXIT_OK && got < c.n && !rtg_stop && !s.incomplete)
        status = rtg_fail(res, RTG_EXIT_FAIL, "the %s failed after %zu of %zu messages.",
                          c.mq ? "message queue" : "pipe", got, c.n);
    if (status == RTG_EXIT_OK) {
        rtg_samples smp = {c.lat + (got < WARMUP ? got : WARMUP), 0, 0, c.at + (got < WARMUP ? got : WARMUP)};
        smp.n = smp.cap = got > WARMUP ? got - WARMUP : 0;
        rtg_samples_report(res, "latency", &smp);
        rtg_scn_mark_incomplete(&s, res, (int64_t)(c.n - WARMUP), (int64_t)smp.n);
        rtg_j_set(res->env, "cpus_used", rtg_j_strf("%d,%d", cpu_s, cpu_r));
        rtg_micro_method(res, c.mq ? "latency: from the sender's timestamp just before mq_send to the receiver's "
                                     "first timestamp after mq_receive returned (receiver one priority higher unless --equal-priority)"
                                   : "latency: from the sender's timestamp just before write to the receiver's "
                                     "first timestamp after read returned (receiver one priority higher unless --equal-priority)");
    }
    if (rtg_scn_leaked(&s))
        return status;
    rtg_chan_close(&c.ch[0]);
    rtg_chan_close(&c.ch[1]);
    free(c.lat);
    free(c.at);
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

/* periodic: the cycle driver of T = Ti + Ts + Tw (see periodic.h).
 * Measuring threads: set up (pin, policy, stack prefault), meet at a start gate,
 * then loop: wait for the trigger (a deadline, a frame, an event), two
 * timestamps around the payload, store one record into the thread's ring.
 * Nothing else happens in the loop. The calling thread waits for the workers
 * and, when the run must stop, interrupts their waits (RTG_WAKE_SIGNAL).
 * A SCHED_OTHER collector drains the rings every 50 ms into the statistics and
 * the optional raw samples file. */
#include "portable.h"
#include "periodic.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifndef RTG_POSIX_ONLY
#include <sys/syscall.h>
#else
#include <sys/select.h>
#endif
#include <unistd.h>

#include "stall.h"

#define COLLECT_PERIOD_NS 50000000LL     /* drain rings every 50 ms */
#define RING_SECONDS 2                   /* ring holds >= 2 s of cycles */
#define STACK_SIZE (512 * 1024)
#define STACK_PREFAULT (256 * 1024)
#define SERIES_MAX_WINDOWS (1u << 20)    /* bounds memory of the window series */
#define POLL_NS 20000000LL               /* FRAME/EVENT: idle hook every 20 ms by default */
#define FRAME_MAX 2048                   /* largest datagram a FRAME trigger takes */
#define EVENT_RING 4096                  /* posts not yet taken by the waiter */

typedef struct shared shared;

typedef struct {
    shared *sh;
    int index;
    rtg_ring ring;
    rtg_periodic_thread *out;
    const rtg_trigger *tr;     /* this thread's trigger (a zeroed timer when none) */
    unsigned char *frame;      /* FRAME: receive buffer, FRAME_MAX bytes */
    pthread_t th;
    bool started;
    char err[512];
    atomic_bool failed;
    atomic_bool done;
    uint64_t skipped;          /* written by the measuring thread only; read after join */
} worker;

struct shared {
    const rtg_periodic_cfg *cfg;
    worker *w;
    /* start gate: threads report ready, then wait for go (start_ns is set) */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int ready;
    bool go;
    int64_t start_ns;          /* written before go */
    atomic_bool abort_setup;   /* a thread failed setup: nobody measures */
    atomic_bool stop_run;      /* stop_above_ns was exceeded, or a payload ended the run */
    atomic_bool stopped_above;
    atomic_bool ended_by_payload;
};

static const rtg_trigger timer_trigger = {.kind = RTG_TRIGGER_TIMER};

static size_t ring_capacity(int64_t period_ns)
{
    uint64_t need = (uint64_t)(RING_SECONDS * 1000000000LL / period_ns) + 1;
    size_t cap = 1024;
    while (cap < need)
        cap <<= 1;
    return cap;
}

static int current_tid(void)
{
#ifdef SYS_gettid
    return (int)syscall(SYS_gettid);
#else
    return -1;
#endif
}

/* Pin, policy, prefault; on failure record the sentence. */
static void setup_worker(worker *w)
{
    const rtg_periodic_cfg *cfg = w->sh->cfg;
    rtg_periodic_thread *o = w->out;
    o->cpu = cfg->cpus[w->index];
    o->tid = current_tid();
    if (o->cpu >= 0 && rtg_pin_cpu(o->cpu, w->err, sizeof w->err) != 0) {
        atomic_store(&w->failed, true);
        return;
    }
    int prio = cfg->priorities ? cfg->priorities[w->index] : cfg->priority;
    if (rtg_sched_apply(&o->sched, cfg->policy, prio, cfg->allow_fallback, w->err,
                        sizeof w->err) != 0) {
        atomic_store(&w->failed, true);
        return;
    }
    rtg_prefault_stack(STACK_PREFAULT);
}

static bool should_stop(shared *sh)
{
    return rtg_stop || atomic_load_explicit(&sh->stop_run, memory_order_relaxed);
}

static uint64_t cycles_of(const worker *w)
{
    return w->tr->cycles ? w->tr->cycles : w->sh->cfg->cycles;
}

static void run_payload(worker *w, rtg_cycle_ctx *c)
{
    const rtg_periodic_cfg *cfg = w->sh->cfg;
    if (w->tr->cycle)
        w->tr->cycle(w->tr->arg, c);
    else if (cfg->payload)
        cfg->payload(cfg->payload_args ? cfg->payload_args[w->index] : NULL, w->index, c->cycle);
}

/* Store the cycle's record (numbered `number`: a timer's deadline index, so the
 * deadlines skipped after an overrun are the missing numbers, docs/samples.md;
 * otherwise the cycle); then whether the thread ends (the payload said so). */
static bool finish_cycle(worker *w, const rtg_cycle_ctx *c, uint64_t number, int64_t t1, int64_t t2)
{
    shared *sh = w->sh;
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
            atomic_store(&sh->stopped_above, true);
            atomic_store(&sh->stop_run, true);
            rtg_stop_notify();
        }
    }
    if (c->end_run) {
        atomic_store(&sh->ended_by_payload, true);
        atomic_store(&sh->stop_run, true);
        rtg_stop_notify();
    }
    return c->end || c->end_run;
}

static rtg_cycle_ctx new_ctx(const worker *w, uint64_t k, int64_t t1)
{
    return (rtg_cycle_ctx){.thread = w->index, .cycle = k, .woke_ns = t1, .stopping = &w->sh->stop_run};
}

/* TIMER with a service fd: wait for the deadline in ppoll, serving the fd. 0 at
 * the deadline, -1 when the run must stop. */
static int wait_serving(worker *w, int64_t d)
{
    struct pollfd p = {w->tr->fd, POLLIN, 0};
    for (;;) {
        if (should_stop(w->sh))
            return -1;
        int64_t left = d - rtg_mono_ns();
        if (left <= 0)
            return 0;
        struct timespec ts = rtg_ns_timespec(left);
#ifdef RTG_POSIX_ONLY
        (void)p;   /* pselect: ppoll is not in POSIX.1-2008 */
        fd_set in;
        FD_ZERO(&in);
        FD_SET(w->tr->fd, &in);
        if (pselect(w->tr->fd + 1, &in, NULL, NULL, &ts, NULL) > 0)
#else
        if (ppoll(&p, 1, &ts, NULL) > 0)
#endif
            w->tr->service(w->tr->arg);
    }
}

/* TIMER: 0 at the deadline, -1 when the run must stop (or the sleep failed). */
static int wait_deadline(worker *w, int64_t d)
{
    if (w->tr->service)
        return wait_serving(w, d);
    struct timespec ts = rtg_ns_timespec(d);
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR && !should_stop(w->sh))
        ;
    return rc == 0 ? 0 : -1;
}

/* The timer loop. After an overrun, deadlines already past are skipped (as
 * cyclictest does) and counted, unless catch_up asks to run them back to back. */
static void measure_timer(worker *w)
{
    shared *sh = w->sh;
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
        if (should_stop(sh))
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
static bool idle_ends(worker *w, int64_t now)
{
    return should_stop(w->sh) || (w->tr->idle && w->tr->idle(w->tr->arg, now));
}

/* FRAME: one cycle per datagram. Ti runs from its arrival: the kernel's stamp
 * (CLOCK_REALTIME, turned into an interval so the clocks' offset cancels). */
static void measure_frames(worker *w)
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
        if (should_stop(w->sh))
            break;
        struct sockaddr_storage from;
        struct iovec iov = {w->frame, FRAME_MAX};
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
static void measure_events(worker *w)
{
    const rtg_trigger *tr = w->tr;
    const rtg_periodic_cfg *cfg = w->sh->cfg;
    rtg_clock clk = cfg->clock;
    const uint64_t ncycles = cycles_of(w);
    int64_t poll = tr->poll_ns > 0 ? tr->poll_ns : POLL_NS;
    for (uint64_t k = 0; !ncycles || k < ncycles;) {
        if (should_stop(w->sh))
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

static void measure(worker *w)
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

int rtg_event_init(rtg_event *e)
{
    if (sem_init(&e->sem, 0, 0) != 0)
        return -1;
    if (rtg_ring_init(&e->posts, sizeof(int64_t), EVENT_RING) != 0) {
        sem_destroy(&e->sem);
        return -1;
    }
    return 0;
}

void rtg_event_free(rtg_event *e)
{
    rtg_ring_free(&e->posts);
    sem_destroy(&e->sem);
}

void rtg_event_post(rtg_event *e)
{
    int64_t *slot = rtg_ring_slot(&e->posts);
    if (!slot)
        return;   /* the waiter is EVENT_RING posts behind: counted as dropped */
    *slot = rtg_mono_ns();
    rtg_ring_publish(&e->posts);
    sem_post(&e->sem);
}

static void *worker_main(void *p)
{
    worker *w = p;
    shared *sh = w->sh;
    sigset_t wake;
    sigemptyset(&wake);
    sigaddset(&wake, RTG_WAKE_SIGNAL);
    pthread_sigmask(SIG_UNBLOCK, &wake, NULL);   /* a stop interrupts this thread's waits */
    setup_worker(w);
    pthread_mutex_lock(&sh->lock);
    sh->ready++;
    pthread_cond_broadcast(&sh->cond);
    while (!sh->go)
        pthread_cond_wait(&sh->cond, &sh->lock);
    pthread_mutex_unlock(&sh->lock);
    if (!atomic_load(&w->failed) && !atomic_load(&sh->abort_setup))
        measure(w);
#ifdef RUSAGE_THREAD   /* Linux: per thread; the POSIX-only build leaves the counts 0 */
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        w->out->nvcsw = (uint64_t)ru.ru_nvcsw;
        w->out->nivcsw = (uint64_t)ru.ru_nivcsw;
    }
#endif
    atomic_store_explicit(&w->done, true, memory_order_release);
    rtg_stop_notify();
    return NULL;
}

/* ---- raw samples ---- */

static void put_le32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void write_samples_header(FILE *f, bool binary)
{
    if (binary) {
        unsigned char h[16];
        memcpy(h, "RTGSAMP1", 8);
        put_le32(h + 8, 48);
        put_le32(h + 12, 0);
        fwrite(h, 1, sizeof h, f);
    } else {
        fputs("thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns\n", f);
    }
}

static void write_sample(FILE *f, bool binary, int thread, uint64_t cycle, const rtg_cycle *c)
{
    if (binary) {
        unsigned char r[48];
        put_le32(r, (uint32_t)thread);
        put_le32(r + 4, 0);
        put_le64(r + 8, cycle);
        put_le64(r + 16, (uint64_t)c->deadline_ns);
        put_le64(r + 24, (uint64_t)c->ti);
        put_le64(r + 32, (uint64_t)c->ts);
        put_le64(r + 40, (uint64_t)c->tw);
        fwrite(r, 1, sizeof r, f);
    } else {
        fprintf(f, "%d,%llu,%lld,%lld,%lld,%lld\n", thread, (unsigned long long)cycle,
                (long long)c->deadline_ns, (long long)c->ti, (long long)c->ts, (long long)c->tw);
    }
}

/* ---- collector ---- */

static int init_clean(rtg_dist *clean, const rtg_periodic_thread *t)
{
    const rtg_dist *src[3] = {&t->ti, &t->ts, &t->tw};
    for (int k = 0; k < 3; k++) {
        if (rtg_dist_init(&clean[k], src[k]->lin_bucket_ns, src[k]->lin_n) != 0) {
            for (int j = 0; j < k; j++)
                rtg_dist_free(&clean[j]);
            return -1;
        }
        rtg_dist_merge(&clean[k], src[k]);
    }
    return 0;
}

/* The host-stall observer's view of one cycle, before it is folded into t. */
static void judge_stall(rtg_periodic_thread *t, const rtg_cycle *c)
{
    if (rtg_stall_touches(c->deadline_ns, c->deadline_ns + c->ti + c->ts)) {
        t->stall_touched++;
        if (!t->clean) {   /* first touched cycle: the figures so far are all clean */
            t->clean = calloc(3, sizeof *t->clean);
            if (t->clean && init_clean(t->clean, t) != 0) {
                free(t->clean);
                t->clean = NULL;
            }
        }
    } else if (t->clean) {
        rtg_dist_add(&t->clean[0], c->ti);
        rtg_dist_add(&t->clean[1], c->ts);
        rtg_dist_add(&t->clean[2], c->tw);
    }
}

static void fold_record(shared *sh, worker *w, const rtg_cycle *c)
{
    rtg_periodic_thread *t = w->out;
    if (rtg_stall_observing())
        judge_stall(t, c);
    t->cycles++;
    if (c->tw < 0)
        t->misses++;
    rtg_dist_add(&t->ti, c->ti);
    rtg_dist_add(&t->ts, c->ts);
    rtg_dist_add(&t->tw, c->tw);
    /* Windows are keyed by the deadline, so a late wake-up counts in the
     * window where the cycle was due. */
    rtg_series_add(&t->ti_max, c->deadline_ns, c->ti);
    if (sh->cfg->samples)
        write_sample(sh->cfg->samples, sh->cfg->samples_binary, w->index, c->cycle, c);
}

/* Fold what the rings hold. With the host-stall observer running, a cycle that
 * ended after the observer last looked at the clock waits for the next drain (a
 * stall it overlaps may not be recorded yet), unless the observer is more than
 * a second behind (the ring holds two) or this is the last drain (final). */
static void drain(shared *sh, worker *w, bool final)
{
    int64_t covered = final ? INT64_MAX : rtg_stall_covered();
    if (covered != INT64_MAX && rtg_mono_ns() - covered > 1000000000LL)
        covered = INT64_MAX;
    void *first;
    size_t n;
    while ((n = rtg_ring_peek(&w->ring, &first, 4096)) > 0) {
        size_t i = 0;
        for (; i < n; i++) {
            const rtg_cycle *c = (const rtg_cycle *)first + i;
            if (c->deadline_ns + c->ti + c->ts > covered)
                break;
            fold_record(sh, w, c);
        }
        rtg_ring_release(&w->ring, i);
        if (i < n)
            return;
    }
}

static void *collector_main(void *p)
{
    shared *sh = p;
    int n = sh->cfg->nthreads;
    for (;;) {
        bool all_done = true;
        for (int i = 0; i < n; i++)
            all_done = all_done && atomic_load_explicit(&sh->w[i].done, memory_order_acquire);
        if (all_done)
            rtg_stall_sync();   /* a stall that ended with the last cycles is recorded */
        for (int i = 0; i < n; i++) {
            drain(sh, &sh->w[i], all_done);
            if (sh->w[i].tr->collect)
                sh->w[i].tr->collect(sh->w[i].tr->arg);
        }
        if (sh->cfg->samples)
            fflush(sh->cfg->samples);   /* lets a reader follow the file during the run */
        if (all_done)
            break;
        struct timespec ts = rtg_ns_timespec(COLLECT_PERIOD_NS);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Keep the collector off the measured CPUs when another CPU is allowed. */
static void place_collector(pthread_attr_t *a, const rtg_periodic_cfg *cfg)
{
#ifdef RTG_POSIX_ONLY
    (void)a, (void)cfg;   /* no affinity in POSIX */
#else
    int allowed[RTG_MAX_CPUS];
    int n = rtg_allowed_cpus(allowed, RTG_MAX_CPUS);
    cpu_set_t set;
    CPU_ZERO(&set);
    int count = 0;
    for (int i = 0; i < n; i++) {
        bool measured = false;
        for (int k = 0; k < cfg->nthreads; k++)
            measured = measured || cfg->cpus[k] == allowed[i];
        if (!measured) {
            CPU_SET(allowed[i], &set);
            count++;
        }
    }
    if (count > 0)
        pthread_attr_setaffinity_np(a, sizeof set, &set);
#endif
}

/* Threads start as SCHED_OTHER (explicit, not inherited from an RT main thread);
 * measuring threads raise themselves after pinning. */
static void other_attr(pthread_attr_t *a)
{
    struct sched_param sp = {.sched_priority = 0};
    pthread_attr_init(a);
    pthread_attr_setstacksize(a, STACK_SIZE);
    pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(a, SCHED_OTHER);
    pthread_attr_setschedparam(a, &sp);
}

static size_t series_windows(const rtg_periodic_cfg *cfg)
{
    int64_t span = cfg->cycles ? (int64_t)cfg->cycles * cfg->period_ns : cfg->duration_ns;
    uint64_t n = (uint64_t)(span / cfg->window_ns) + 2;
    return n > SERIES_MAX_WINDOWS ? SERIES_MAX_WINDOWS : (size_t)n;
}

static int init_thread_stats(rtg_periodic_thread *t, const rtg_periodic_cfg *cfg)
{
    memset(t, 0, sizeof *t);
    t->cpu = -1;
    t->tid = -1;
    if (rtg_dist_init(&t->ti, cfg->lin_bucket_ns, cfg->lin_buckets) != 0 ||
        rtg_dist_init(&t->ts, 0, 0) != 0 || rtg_dist_init(&t->tw, 0, 0) != 0 ||
        rtg_series_init(&t->ti_max, 0, cfg->window_ns, series_windows(cfg)) != 0)
        return -1;
    return 0;
}

static void free_thread_stats(rtg_periodic_thread *t)
{
    if (t->clean)
        for (int k = 0; k < 3; k++)
            rtg_dist_free(&t->clean[k]);
    free(t->clean);
    t->clean = NULL;
    rtg_dist_free(&t->ti);
    rtg_dist_free(&t->ts);
    rtg_dist_free(&t->tw);
    rtg_series_free(&t->ti_max);
}

void rtg_periodic_free(rtg_periodic_run *run)
{
    if (run->t)
        for (int i = 0; i < run->nthreads; i++)
            free_thread_stats(&run->t[i]);
    free(run->t);
    run->t = NULL;
    free_thread_stats(&run->all);
    run->nthreads = 0;
}

static void merge_threads(rtg_periodic_run *run)
{
    rtg_periodic_thread *a = &run->all;
    a->ti_max.start_ns = run->start_ns;
    for (int i = 0; i < run->nthreads; i++) {
        const rtg_periodic_thread *t = &run->t[i];
        a->cycles += t->cycles;
        a->misses += t->misses;
        a->skipped += t->skipped;
        a->dropped += t->dropped;
        a->nvcsw += t->nvcsw;
        a->nivcsw += t->nivcsw;
        rtg_dist_merge(&a->ti, &t->ti);
        rtg_dist_merge(&a->ts, &t->ts);
        rtg_dist_merge(&a->tw, &t->tw);
        rtg_series_merge(&a->ti_max, &t->ti_max);
    }
    if (run->nthreads > 0)
        a->sched = run->t[0].sched;
    bool any_clean = false;
    for (int i = 0; i < run->nthreads; i++) {
        a->stall_touched += run->t[i].stall_touched;
        any_clean = any_clean || run->t[i].clean;
    }
    if (!any_clean)
        return;
    a->clean = calloc(3, sizeof *a->clean);
    if (!a->clean)
        return;
    for (int k = 0; k < 3; k++)
        if (rtg_dist_init(&a->clean[k], k == 0 ? a->ti.lin_bucket_ns : 0, k == 0 ? a->ti.lin_n : 0) != 0) {
            for (int j = 0; j < k; j++)
                rtg_dist_free(&a->clean[j]);
            free(a->clean);
            a->clean = NULL;
            return;
        }
    for (int i = 0; i < run->nthreads; i++) {
        const rtg_periodic_thread *t = &run->t[i];
        rtg_dist_merge(&a->clean[0], t->clean ? &t->clean[0] : &t->ti);
        rtg_dist_merge(&a->clean[1], t->clean ? &t->clean[1] : &t->ts);
        rtg_dist_merge(&a->clean[2], t->clean ? &t->clean[2] : &t->tw);
    }
}

/* Measuring threads block the stop signals, so rtg_stop is set by the main
 * thread's handler and the measured sleep is never interrupted by it. */
static void block_stop_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

/* Wait until every started worker is done. When the run must stop (a signal,
 * stop_above_ns, a payload ending it) interrupt the waits of those still running,
 * again every 5 ms until they are done: a signal that came just before a thread
 * entered its wait is not lost. The calling thread sleeps in rtg_stop_wait,
 * which SIGINT/SIGTERM and finishing workers wake. */
static void wait_workers(shared *sh, int started)
{
    rtg_wake_install();
    for (;;) {
        bool all_done = true;
        for (int i = 0; i < started; i++)
            all_done = all_done && atomic_load_explicit(&sh->w[i].done, memory_order_acquire);
        if (all_done)
            return;
        if (should_stop(sh)) {
            for (int i = 0; i < started; i++)
                if (!atomic_load_explicit(&sh->w[i].done, memory_order_acquire))
                    rtg_wake_thread(sh->w[i].th);
            struct timespec ts = rtg_ns_timespec(5000000);
            nanosleep(&ts, NULL);
        } else {
            rtg_stop_wait(1000000000LL);   /* woken at once by a stop or a finished worker */
        }
    }
}

static int start_workers(shared *sh, pthread_attr_t *attr, char *err, size_t errlen)
{
    for (int i = 0; i < sh->cfg->nthreads; i++) {
        int rc = pthread_create(&sh->w[i].th, attr, worker_main, &sh->w[i]);
        if (rc != 0) {
            snprintf(err, errlen, "could not start measuring thread %d (%s); use fewer --threads.", i,
                     strerror(rc));
            return i;
        }
        sh->w[i].started = true;
    }
    return sh->cfg->nthreads;
}

int rtg_periodic(const rtg_periodic_cfg *cfg, rtg_periodic_run *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    int n = cfg->nthreads;
    if (n < 1 || n > 1024 || cfg->period_ns <= 0 || (cfg->cycles == 0 && cfg->duration_ns <= 0)) {
        snprintf(err, errlen, "periodic driver misconfigured (threads %d, period %lld ns); this is a bug.",
                 n, (long long)cfg->period_ns);
        return -1;
    }
    rtg_periodic_cfg c = *cfg;
    if (c.window_ns <= 0)
        c.window_ns = 1000000000LL;
    shared sh = {.cfg = &c};
    run->nthreads = n;
    run->t = calloc((size_t)n, sizeof *run->t);
    sh.w = calloc((size_t)n, sizeof *sh.w);
    bool ok = run->t && sh.w && init_thread_stats(&run->all, &c) == 0;
    for (int i = 0; ok && i < n; i++) {
        ok = init_thread_stats(&run->t[i], &c) == 0 &&
             rtg_ring_init(&sh.w[i].ring, sizeof(rtg_cycle), ring_capacity(c.period_ns)) == 0;
        sh.w[i].sh = &sh;
        sh.w[i].index = i;
        sh.w[i].out = &run->t[i];
        sh.w[i].tr = c.triggers ? &c.triggers[i] : &timer_trigger;
        if (ok && sh.w[i].tr->kind == RTG_TRIGGER_FRAME) {
            sh.w[i].frame = calloc(1, FRAME_MAX);
            ok = sh.w[i].frame != NULL;
            if (ok)
                rtg_touch(sh.w[i].frame, FRAME_MAX);
        }
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory preparing %d measuring threads; use fewer --threads.", n);
        goto fail_alloc;
    }
    pthread_mutex_init(&sh.lock, NULL);
    pthread_cond_init(&sh.cond, NULL);
    pthread_attr_t attr;
    other_attr(&attr);
    sigset_t old;
    block_stop_signals(&old);
    int started = start_workers(&sh, &attr, err, errlen);
    if (started < n)
        atomic_store(&sh.abort_setup, true);
    for (int i = started; i < n; i++)
        atomic_store(&sh.w[i].done, true);   /* the collector must not wait for them */
    pthread_mutex_lock(&sh.lock);
    while (sh.ready < started)
        pthread_cond_wait(&sh.cond, &sh.lock);
    pthread_mutex_unlock(&sh.lock);
    for (int i = 0; i < started; i++)
        if (atomic_load(&sh.w[i].failed) && !atomic_load(&sh.abort_setup)) {
            snprintf(err, errlen, "%s", sh.w[i].err);
            atomic_store(&sh.abort_setup, true);
        }
    /* One start instant for all threads, so their deadlines align. */
    sh.start_ns = c.start_at_ns > 0 ? c.start_at_ns
                                    : rtg_mono_ns() + (c.start_delay_ns > 0 ? c.start_delay_ns : 0);
    for (int i = 0; i < n; i++)
        run->t[i].ti_max.start_ns = sh.start_ns;
    if (c.samples && !atomic_load(&sh.abort_setup))
        write_samples_header(c.samples, c.samples_binary);
    pthread_t coll;
    pthread_attr_t cattr;
    other_attr(&cattr);
    place_collector(&cattr, &c);
    bool have_collector = pthread_create(&coll, &cattr, collector_main, &sh) == 0;
    pthread_mutex_lock(&sh.lock);
    sh.go = true;
    pthread_cond_broadcast(&sh.cond);
    pthread_mutex_unlock(&sh.lock);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    wait_workers(&sh, started);
    for (int i = 0; i < started; i++)
        pthread_join(sh.w[i].th, NULL);
    if (have_collector)
        pthread_join(coll, NULL);
    else
        collector_main(&sh);
    pthread_attr_destroy(&attr);
    pthread_attr_destroy(&cattr);
    pthread_cond_destroy(&sh.cond);
    pthread_mutex_destroy(&sh.lock);
    run->end_ns = rtg_mono_ns();
    run->start_ns = sh.start_ns;
    for (int i = 0; i < n; i++) {
        run->t[i].dropped = rtg_ring_dropped(&sh.w[i].ring);
        run->t[i].skipped = sh.w[i].skipped;
        rtg_ring_free(&sh.w[i].ring);
        free(sh.w[i].frame);
    }
    free(sh.w);
    if (atomic_load(&sh.abort_setup)) {
        rtg_periodic_free(run);
        return -1;
    }
    merge_threads(run);
    run->interrupted = rtg_stop != 0;
    run->stopped_above = atomic_load(&sh.stopped_above);
    run->ended_by_payload = atomic_load(&sh.ended_by_payload);
    return 0;

fail_alloc:
    if (sh.w)
        for (int i = 0; i < n; i++) {
            rtg_ring_free(&sh.w[i].ring);
            free(sh.w[i].frame);
        }
    free(sh.w);
    rtg_periodic_free(run);
    return -1;
}

void rtg_periodic_put_metrics(rtg_json *m, const rtg_periodic_thread *t, const char *prefix, const char *suffix)
{
    char key[96];
#define KEY(name) (snprintf(key, sizeof key, "%s%s%s", prefix, name, suffix), key)
    rtg_j_set(m, KEY("ti"), rtg_j_dist(&t->ti, "ns"));
    rtg_j_set(m, KEY("ts"), rtg_j_dist(&t->ts, "ns"));
    rtg_j_set(m, KEY("tw"), rtg_j_dist(&t->tw, "ns"));
    rtg_j_set(m, KEY("misses"), rtg_j_scalar_int((int64_t)t->misses, "count"));
    rtg_j_set(m, KEY("skipped"), rtg_j_scalar_int((int64_t)t->skipped, "count"));
    rtg_j_set(m, KEY("cycles"), rtg_j_scalar_int((int64_t)t->cycles, "count"));
    rtg_j_set(m, KEY("dropped"), rtg_j_scalar_int((int64_t)t->dropped, "count"));
    rtg_j_set(m, KEY("ti_window_max"), rtg_j_series(&t->ti_max, "ns"));
#undef KEY
}

rtg_json *rtg_periodic_put_thread(rtg_json *threads, const rtg_periodic_thread *t, int index)
{
    rtg_json *j = rtg_j_push(threads, rtg_j_obj());
    rtg_j_set(j, "index", rtg_j_int(index));
    rtg_j_set(j, "cpu", rtg_j_int(t->cpu));
    rtg_j_set(j, "tid", rtg_j_int(t->tid));
    rtg_j_set(j, "policy", rtg_j_str(rtg_policy_name(t->sched.policy)));
    rtg_j_set(j, "priority", rtg_j_int(t->sched.priority));
    rtg_j_set(j, "fallback", rtg_j_bool(t->sched.fallback));
#ifdef RTG_POSIX_ONLY   /* per-thread counts (RUSAGE_THREAD) are Linux-only: unknown */
    rtg_j_set(j, "nvcsw", rtg_j_null());
    rtg_j_set(j, "nivcsw", rtg_j_null());
#else
    rtg_j_set(j, "nvcsw", rtg_j_int((int64_t)t->nvcsw));
    rtg_j_set(j, "nivcsw", rtg_j_int((int64_t)t->nivcsw));
#endif
    return j;
}

/* env.stalls.metrics: one thread's (or the merged) cycles a stall touched. */
static void put_stall_metrics(rtg_result *res, const rtg_periodic_thread *t, const char *suffix)
{
    static const char *names[3] = {"ti", "ts", "tw"};
    const rtg_dist *all[3] = {&t->ti, &t->ts, &t->tw};
    for (int k = 0; k < 3; k++) {
        char key[64];
        snprintf(key, sizeof key, "%s%s", names[k], suffix);
        rtg_stall_put_metric(res, key, t->stall_touched, 0, t->clean ? &t->clean[k] : all[k]);
    }
}

void rtg_periodic_report(const rtg_periodic_run *run, rtg_result *res)
{
    if (rtg_stall_observing()) {
        put_stall_metrics(res, &run->all, "");
        for (int i = 0; i < run->nthreads; i++) {
            char suffix[16];
            snprintf(suffix, sizeof suffix, "#%d", i);
            put_stall_metrics(res, &run->t[i], suffix);
        }
    }
    rtg_periodic_put_metrics(res->metrics, &run->all, "", "");
    for (int i = 0; i < run->nthreads; i++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "#%d", i);
        rtg_periodic_put_metrics(res->metrics, &run->t[i], "", suffix);
    }
    rtg_json *threads = rtg_j_set(res->env, "threads", rtg_j_arr());
    for (int i = 0; i < run->nthreads; i++)
        rtg_periodic_put_thread(threads, &run->t[i], i);
    rtg_j_set(res->env, "run_start_ns", rtg_j_int(run->start_ns));
    rtg_j_set(res->env, "run_end_ns", rtg_j_int(run->end_ns));
}

/* scenario: the microbenchmarks' harness (see scenario.h). */
#include "scenario.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifndef RTG_POSIX_ONLY
#include <sys/syscall.h>
#endif

#include "clock.h"
#include "portable.h"

/* Between two looks at a thread's place: short against the 2 s bound, long
 * enough not to keep the watchdog's CPU busy. What ends the wait is the check. */
#define LOOK_NS 20000LL

static _Thread_local rtg_scn_thread *self_record;

/* ---- where a thread is ---- */

static bool proc_tasks(void)
{
    static int ok = -1;
#ifdef RTG_POSIX_ONLY
    ok = 0;   /* the POSIX-only build reads no /proc */
#endif
    if (ok < 0)
        ok = access("/proc/self/task", R_OK) == 0;
    return ok;
}

static bool read_small(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

bool rtg_thread_place_of(int tid, rtg_thread_place *p)
{
    p->state = 0;
    p->syscall = -1;
    p->known = false;
    if (tid <= 0 || !proc_tasks())
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    if (!read_small(path, buf, sizeof buf))
        return false;   /* the thread is gone */
    char *a = strrchr(buf, ')');   /* comm may hold spaces or ')' */
    if (!a || a[1] != ' ')
        return false;
    p->state = a[2];
    p->known = true;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    if (!read_small(path, buf, sizeof buf))
        p->syscall = RTG_SYSCALL_UNKNOWN;     /* a kernel without the file */
    else if (buf[0] >= '0' && buf[0] <= '9')
        p->syscall = strtol(buf, NULL, 10);   /* "running" or "-1 ..." otherwise */
    snprintf(path, sizeof path, "/proc/self/task/%d/wchan", tid);
    p->wchan[0] = '\0';
    if (read_small(path, buf, sizeof buf) && strcmp(buf, "0") != 0)
        snprintf(p->wchan, sizeof p->wchan, "%.47s", buf);
    return true;
}

static bool call_waits_on(long nr, rtg_prim prim)
{
    (void)nr;   /* unused where no SYS_* number is known (the POSIX-only build) */
    switch (prim) {
    case RTG_PRIM_SEM: case RTG_PRIM_MUTEX: case RTG_PRIM_PI_MUTEX: case RTG_PRIM_PROTECT_MUTEX:
    case RTG_PRIM_CONDVAR: case RTG_PRIM_FUTEX:
#ifdef SYS_futex
        if (nr == SYS_futex)
            return true;
#endif
#ifdef SYS_futex_time64
        if (nr == SYS_futex_time64)
            return true;
#endif
        return false;
    case RTG_PRIM_MQ:
#ifdef SYS_mq_timedreceive
        if (nr == SYS_mq_timedreceive)
            return true;
#endif
#ifdef SYS_mq_timedreceive_time64
        if (nr == SYS_mq_timedreceive_time64)
            return true;
#endif
        return false;
    case RTG_PRIM_PIPE:
#ifdef SYS_read
        return nr == SYS_read;
#else
        return false;
#endif
    case RTG_PRIM_SLEEP:
#ifdef SYS_clock_nanosleep
        if (nr == SYS_clock_nanosleep)
            return true;
#endif
#ifdef SYS_clock_nanosleep_time64
        if (nr == SYS_clock_nanosleep_time64)
            return true;
#endif
#ifdef SYS_nanosleep
        if (nr == SYS_nanosleep)
            return true;
#endif
        return false;
    default:
        return false;   /* a spin lock never blocks */
    }
}

/* The kernel function a waiter of prim sleeps in (names vary with the kernel:
 * futex_wait_queue, futex_do_wait; do_nanosleep, hrtimer_nanosleep; wq_sleep;
 * pipe_read, anon_pipe_read, pipe_wait). */
static bool waits_in(const char *wchan, rtg_prim prim)
{
    switch (prim) {
    case RTG_PRIM_SEM: case RTG_PRIM_MUTEX: case RTG_PRIM_PI_MUTEX: case RTG_PRIM_PROTECT_MUTEX:
    case RTG_PRIM_CONDVAR: case RTG_PRIM_FUTEX:
        return strstr(wchan, "futex") != NULL;
    case RTG_PRIM_MQ:
        return strstr(wchan, "wq_sleep") != NULL || strstr(wchan, "mq_") != NULL;
    case RTG_PRIM_PIPE:
        return strstr(wchan, "pipe") != NULL;
    case RTG_PRIM_SLEEP:
        return strstr(wchan, "nanosleep") != NULL;
    default:
        return false;
    }
}

bool rtg_thread_blocked_on(int tid, rtg_prim prim)
{
    rtg_thread_place p;
    if (!rtg_thread_place_of(tid, &p))
        return false;
    if (p.state != 'S' && p.state != 'D')
        return false;
    if (p.syscall >= 0 && call_waits_on(p.syscall, prim))
        return true;
    if (p.wchan[0])
        return waits_in(p.wchan, prim);
    /* a kernel that shows neither: the state is all we have */
    return p.syscall == RTG_SYSCALL_UNKNOWN && prim != RTG_PRIM_SPIN;
}

/* ---- the harness ---- */

int rtg_scn_init(rtg_scenario *s, const rtg_opts *o, rtg_result *res, bool needs_priorities, int max,
                 int64_t timeout_ns, void (*unblock)(void *), void *ctx)
{
    memset(s, 0, sizeof *s);
    int status = timeout_ns > 0 ? rtg_micro_setup_timeout(&s->b, o, res, needs_priorities, timeout_ns)
                                : rtg_micro_setup(&s->b, o, res, needs_priorities);
    if (status != RTG_EXIT_OK)
        return status;
    s->timeout_opt = timeout_ns <= 0;
    s->timeout_s = timeout_ns > 0 ? (double)timeout_ns / 1e9 : rtg_opt_num(o, "timeout-s");
    s->max = max;
    s->place_ns = RTG_SCN_PLACE_NS;
    s->unblock = unblock;
    s->ctx = ctx;
    s->th = calloc((size_t)max, sizeof *s->th);
    s->t = calloc((size_t)max, sizeof *s->t);
    if (!s->th || !s->t) {
        free(s->th), free(s->t);
        s->th = NULL, s->t = NULL;
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %d threads; ask for fewer.", max);
    }
    return RTG_EXIT_OK;
}

static int thread_id(void)
{
    return rtg_thread_tid();
}

static void *trampoline(void *p)
{
    rtg_scn_thread *t = p;
    self_record = t;
    atomic_store(&t->tid, thread_id());
    sem_post(&t->arrived);
    void *r = t->role.fn(t->role.arg);
    atomic_store(&t->ended, 1);
    return r;
}

void rtg_scn_here(void)
{
    rtg_scn_thread *t = self_record;
    if (!t || atomic_exchange(&t->here, 1))
        return;
    sem_post(&t->arrived);
}

static void abort_run(rtg_scenario *s)
{
    s->start_failed = true;
    atomic_store(&rtg_micro_abort, 1);
}

void rtg_scn_abort(rtg_scenario *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    abort_run(s);
}

static int64_t place_deadline(const rtg_scenario *s)
{
    int64_t d = rtg_mono_ns() + s->place_ns;
    return d < s->b.deadline_ns ? d : s->b.deadline_ns;
}

/* "within 10.0 s", or "before the watchdog's deadline" when that came first */
static const char *bound_text(const rtg_scenario *s, char *buf, size_t len)
{
    if (rtg_mono_ns() >= s->b.deadline_ns)
        snprintf(buf, len, "before the watchdog's deadline (%.0f s)", s->timeout_s);
    else
        snprintf(buf, len, "within %.1f s", (double)s->place_ns / 1e9);
    return buf;
}

/* Wait for one post of t->arrived (start, or the handshake). */
static bool wait_arrival(rtg_scenario *s, rtg_scn_thread *t, const char *what)
{
    int rc = rtg_sem_wait_until(&t->arrived, place_deadline(s));
    if (rc == 0)
        return true;
    char b[80];
    snprintf(s->err, sizeof s->err, "the %s thread did not %s %s; the system is overloaded or the "
             "primitive does not work here.", t->role.name, what, bound_text(s, b, sizeof b));
    return false;
}

#ifdef RTG_POSIX_ONLY
/* No /proc: on one CPU under SCHED_FIFO/RR a thread that outranks the running
 * one and is not blocked runs first. So this thread steps just below the new
 * thread's priority (lowered, it goes to the head of its new level, POSIX
 * pthread_setschedprio, so no thread of that level runs in between) and back:
 * when it runs again, the new thread is blocked -- in its primitive, or in some
 * other wait on its way there (what the state alone says on Linux too when the
 * kernel does not show the system call). */
int rtg_blocked_above(int prio)
{
    int pol;
    struct sched_param mine;
    if (rtg_online_cpus() != 1 || pthread_getschedparam(pthread_self(), &pol, &mine) != 0 ||
        (pol != SCHED_FIFO && pol != SCHED_RR))
        return -1;
    if (mine.sched_priority < prio)
        return 0;   /* running below it on its CPU: it is blocked already */
    if (prio - 1 < sched_get_priority_min(pol))
        return -1;
    int rc = pthread_setschedprio(pthread_self(), prio - 1);
    if (rc == 0)
        rc = pthread_setschedprio(pthread_self(), mine.sched_priority);
    return rc == 0 ? 0 : -1;
}

static bool wait_blocked(rtg_scenario *s, rtg_scn_thread *t)
{
    const char *what = rtg_prim_name(t->role.blocks_on);
    if (s->b.policy == RTG_POL_OTHER || rtg_blocked_above(s->b.priority + t->role.prio) != 0) {
        snprintf(s->err, sizeof s->err, "cannot check that the %s thread blocked on its %s: without /proc this "
                 "build checks it by priorities, which needs one CPU online and --policy fifo or rr above "
                 "priority 1.", t->role.name, what);
        return false;
    }
    if (atomic_load(&t->ended)) {
        snprintf(s->err, sizeof s->err, "the %s thread ended before it blocked on its %s.", t->role.name, what);
        return false;
    }
    return true;
}
#else
static bool wait_blocked(rtg_scenario *s, rtg_scn_thread *t)
{
    int tid = atomic_load(&t->tid);
    rtg_thread_place p;
    if (!proc_tasks()) {
        snprintf(s->err, sizeof s->err, "cannot check that the %s thread blocked on its %s: /proc/self/task is "
                 "not readable; mount /proc.", t->role.name, rtg_prim_name(t->role.blocks_on));
        return false;
    }
    int64_t end = place_deadline(s);
    for (;;) {
        if (rtg_thread_blocked_on(tid, t->role.blocks_on))
            return true;
        if (rtg_mono_ns() >= end || rtg_micro_stopping())
            break;
        rtg_sleep_until(rtg_mono_ns() + LOOK_NS);
    }
    rtg_thread_place_of(tid, &p);
    if (!p.known && proc_tasks())
        snprintf(s->err, sizeof s->err, "the %s thread ended before it blocked on its %s.", t->role.name,
                 rtg_prim_name(t->role.blocks_on));
    else {
        char b[80];
        snprintf(s->err, sizeof s->err, "the %s thread did not block on its %s %s (state %c, "
                 "system call %ld, waiting in %s); the system is overloaded or the primitive does not block here.",
                 t->role.name, rtg_prim_name(t->role.blocks_on), bound_text(s, b, sizeof b),
                 p.state ? p.state : '?', p.syscall, p.wchan[0] ? p.wchan : "?");
    }
    return false;
}
#endif

int rtg_scn_add(rtg_scenario *s, const rtg_role *role)
{
    if (s->start_failed)
        return -1;
    if (s->n >= s->max) {
        snprintf(s->err, sizeof s->err, "internal: more than %d threads declared.", s->max);
        abort_run(s);
        return -1;
    }
    rtg_scn_thread *t = &s->t[s->n];
    t->role = *role;
    atomic_store(&t->tid, 0);
    atomic_store(&t->here, 0);
    atomic_store(&t->ended, 0);
    sem_init(&t->arrived, 0, 0);
    int cpu = role->cpu == RTG_SCN_CPU ? s->b.cpu : role->cpu;
    if (rtg_spawn_thread(&s->th[s->n], s->b.policy, s->b.priority + role->prio, cpu,
                         role->stack_kib ? role->stack_kib : 64, trampoline, t, s->err, sizeof s->err) != 0) {
        sem_destroy(&t->arrived);
        abort_run(s);
        return -1;
    }
    s->n++;
    if (role->at == RTG_AT_STARTED)
        return 0;   /* created is all: it may not run until others block */
    bool ok = wait_arrival(s, t, "start");
    if (ok && role->at == RTG_AT_HERE)
        ok = wait_arrival(s, t, "get ready");
    else if (ok && role->at == RTG_AT_BLOCKED)
        ok = wait_blocked(s, t);
    if (!ok)
        abort_run(s);
    return ok ? 0 : -1;
}

int rtg_scn_join(rtg_scenario *s, rtg_result *res, const char *what)
{
    if (s->start_failed && s->unblock)
        s->unblock(s->ctx);
    s->left = rtg_micro_join(&s->b, s->th, s->n, s->unblock, s->ctx);
    int status = RTG_EXIT_OK;
    if (s->start_failed)
        status = rtg_fail(res, RTG_EXIT_FAIL, "%s", s->err);
    else if (s->left > 0)
        status = rtg_fail(res, RTG_EXIT_FAIL, "%d threads did not stop within the watchdog's grace time.", s->left);
    else if (s->b.timed_out && s->deadline_ends_run)
        status = RTG_EXIT_OK;
    else if (s->b.timed_out && !(s->failed && atomic_load(s->failed))) {
        /* the watchdog stopped a run that was progressing: keep what was measured (the
         * test reports its counts and marks the document incomplete), never a failure */
        s->incomplete = true;
        status = RTG_EXIT_OK;
    }
    else if ((s->b.timed_out || (s->failed && atomic_load(s->failed))) && s->timeout_opt)
        status = rtg_fail(res, RTG_EXIT_FAIL,
                          "%s did not finish within --timeout-s %.0f s; raise it or ask for fewer --iterations.",
                          what, s->timeout_s);
    else if (s->b.timed_out || (s->failed && atomic_load(s->failed)))
        status = rtg_fail(res, RTG_EXIT_FAIL, "%s did not finish within the watchdog's %.0f s.", what, s->timeout_s);
    if (s->left == 0) {
        for (int i = 0; i < s->n; i++)
            sem_destroy(&s->t[i].arrived);
        free(s->th), free(s->t);
        s->th = NULL, s->t = NULL;
    }
    return status;
}

void rtg_scn_mark_incomplete(const rtg_scenario *s, rtg_result *res, int64_t asked, int64_t measured)
{
    if (!s->incomplete)
        return;
    rtg_json *inc = rtg_j_obj();
    rtg_j_set(inc, "by", rtg_j_str("watchdog"));
    rtg_j_set(inc, "timeout_s", rtg_j_num(s->timeout_s));
    rtg_j_set(inc, "asked", rtg_j_int(asked));
    rtg_j_set(inc, "measured", rtg_j_int(measured));
    rtg_j_set(res->env, "incomplete", inc);
    fprintf(stderr, "rtgauge-engine: the watchdog stopped the run after %.0f s with %lld of %lld measured; "
            "what was measured is kept (raise --timeout-s for the whole run).\n",
            s->timeout_s, (long long)measured, (long long)asked);
}

/* ---- the priority-inversion fixture ---- */

static const char *const inv_names[3] = {"low", "medium", "high"};

int rtg_inv_start(rtg_scenario *s, const rtg_inv_plan *plan)
{
    for (int k = 0; k < 3; k++) {
        int r = plan->order[k];
        rtg_role role = {.name = inv_names[r], .fn = plan->fn[r], .arg = plan->arg, .prio = r,
                         .cpu = RTG_SCN_CPU, .at = plan->at[r], .blocks_on = plan->blocks_on[r]};
        if (rtg_scn_add(s, &role) != 0)
            return -1;
        if (plan->placed && plan->placed(s, r, atomic_load(&s->t[s->n - 1].tid), plan->arg) != 0)
            return -1;
    }
    return 0;
}

/* prim: the blocking primitives (see prim.h). POSIX only; the Linux futex is
 * in prim_futex.c. */
#include "portable.h"
#include "prim.h"

#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

static const char *const names[RTG_PRIM_COUNT] = {
    "mutex", "pi-mutex", "protect-mutex", "sem", "condvar", "futex", "spin", "mq", "pipe", "sleep",
    "pi-mutex waiter check"};

const char *rtg_prim_name(rtg_prim p)
{
    return p < RTG_PRIM_COUNT ? names[p] : "?";
}

rtg_prim rtg_prim_by_name(const char *name, rtg_prim fallback)
{
    for (int p = 0; p < RTG_PRIM_COUNT; p++)
        if (strcmp(names[p], name) == 0)
            return (rtg_prim)p;
    return fallback;
}

rtg_prim rtg_mutex_protocol(const char *protocol)
{
    if (strcmp(protocol, "inherit") == 0)
        return RTG_PRIM_PI_MUTEX;
    if (strcmp(protocol, "protect") == 0)
        return RTG_PRIM_PROTECT_MUTEX;
    return RTG_PRIM_MUTEX;
}

bool rtg_prim_available(rtg_prim p, char *why, size_t len)
{
    if (p != RTG_PRIM_FUTEX && p != RTG_PRIM_PI_WAITERS)
        return true;
#if defined(RTG_HAVE_FUTEX)
    (void)why, (void)len;
    return true;
#else
    snprintf(why, len, "%s is unavailable in this build because %s", names[p],
#if defined(RTG_FUTEX_DISABLED)
             "the engine was built without the Linux futex (meson setup -Dfutex=disabled)"
#else
             "the Linux futex system call (linux/futex.h, SYS_futex) was not found when the engine was built"
#endif
    );
    return false;
#endif
}

/* ---- mutex ---- */

static bool is_mutex(rtg_prim k)
{
    return k == RTG_PRIM_PI_MUTEX || k == RTG_PRIM_MUTEX || k == RTG_PRIM_PROTECT_MUTEX;
}

int rtg_mutex_init(pthread_mutex_t *m, rtg_prim kind, int ceiling)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    int proto = kind == RTG_PRIM_PI_MUTEX ? PTHREAD_PRIO_INHERIT
                : kind == RTG_PRIM_PROTECT_MUTEX ? PTHREAD_PRIO_PROTECT : PTHREAD_PRIO_NONE;
    int rc = pthread_mutexattr_setprotocol(&a, proto);
    if (rc == 0 && kind == RTG_PRIM_PROTECT_MUTEX)
        rc = pthread_mutexattr_setprioceiling(&a, ceiling);
    if (rc == 0)
        rc = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

int rtg_mutex_lock_until(pthread_mutex_t *m, int64_t deadline_ns)
{
    struct timespec now_rt;
    clock_gettime(CLOCK_REALTIME, &now_rt);
    struct timespec rt = rtg_ns_timespec(rtg_timespec_ns(&now_rt) + deadline_ns - rtg_mono_ns());
    return pthread_mutex_timedlock(m, &rt);
}

/* ---- semaphore ---- */

int rtg_sem_wait(sem_t *s)
{
    while (sem_wait(s) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

int rtg_sem_wait_until(sem_t *s, int64_t deadline_ns)
{
    struct timespec dl = rtg_ns_timespec(deadline_ns);
    while (rtg_sem_clockwait_mono(s, &dl) != 0)
        if (errno != EINTR)
            return errno;
    return 0;
}

/* ---- condition variable ---- */

int rtg_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}

/* ---- locks ---- */

const char *rtg_lock_name(rtg_prim kind)
{
    return rtg_prim_name(kind);
}

int rtg_lock_init(rtg_lock *l, rtg_prim kind, int ceiling, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    l->kind = kind;
    int rc;
    if (is_mutex(kind))
        rc = rtg_mutex_init(&l->m, kind, ceiling);
    else if (kind == RTG_PRIM_SEM)
        rc = sem_init(&l->s, 0, 1) == 0 ? 0 : errno;
    else if (kind == RTG_PRIM_SPIN)
        rc = pthread_spin_init(&l->sp, PTHREAD_PROCESS_PRIVATE);
    else
        rc = EINVAL;
    if (rc != 0) {
        snprintf(err, errlen, "this system cannot make a %s lock (%s); choose another primitive.",
                 rtg_lock_name(kind), strerror(rc));
        return -1;
    }
    return 0;
}

void rtg_lock_destroy(rtg_lock *l)
{
    if (is_mutex(l->kind))
        pthread_mutex_destroy(&l->m);
    else if (l->kind == RTG_PRIM_SEM)
        sem_destroy(&l->s);
    else
        pthread_spin_destroy(&l->sp);
}

int rtg_lock_acquire(rtg_lock *l)
{
    if (is_mutex(l->kind))
        return pthread_mutex_lock(&l->m);
    if (l->kind == RTG_PRIM_SEM)
        return rtg_sem_wait(&l->s);
    return pthread_spin_lock(&l->sp);
}

int rtg_lock_acquire_until(rtg_lock *l, int64_t deadline_ns)
{
    if (is_mutex(l->kind))
        return rtg_mutex_lock_until(&l->m, deadline_ns);
    if (l->kind == RTG_PRIM_SEM)
        return rtg_sem_wait_until(&l->s, deadline_ns);
    while (pthread_spin_trylock(&l->sp) != 0)
        if (rtg_mono_ns() >= deadline_ns)
            return ETIMEDOUT;
    return 0;
}

void rtg_lock_release(rtg_lock *l)
{
    if (is_mutex(l->kind))
        pthread_mutex_unlock(&l->m);
    else if (l->kind == RTG_PRIM_SEM)
        sem_post(&l->s);
    else
        pthread_spin_unlock(&l->sp);
}

/* ---- channels ---- */

static int open_mq(rtg_chan *c, char *err, size_t errlen)
{
    static _Atomic int serial;
    struct mq_attr a = {.mq_flags = 0, .mq_maxmsg = 1, .mq_msgsize = (long)c->bytes};
    char name[64];
    snprintf(name, sizeof name, "/rtgauge-message-%d-%d", (int)getpid(), atomic_fetch_add(&serial, 1));
    mqd_t q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
    if (q == (mqd_t)-1) {
        snprintf(err, errlen, "cannot create a POSIX message queue (%s); check /proc/sys/fs/mqueue/queues_max, "
                 "msgsize_max and ulimit -q.", strerror(errno));
        return -1;
    }
    mq_unlink(name);
    c->mq = q;
    return 0;
}

static int open_pipe(rtg_chan *c, char *err, size_t errlen)
{
    int fd[2];
    if (pipe(fd) != 0) {
        snprintf(err, errlen, "cannot create a pipe (%s); raise ulimit -n.", strerror(errno));
        return -1;
    }
    fcntl(fd[0], F_SETFD, FD_CLOEXEC);
    fcntl(fd[1], F_SETFD, FD_CLOEXEC);
    fcntl(fd[1], F_SETFL, O_NONBLOCK);
    c->rfd = fd[0];
    c->wfd = fd[1];
    return 0;
}

int rtg_chan_open(rtg_chan *c, rtg_prim kind, size_t bytes, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->bytes = bytes;
    c->rfd = c->wfd = -1;
    c->mq = (mqd_t)-1;
    return kind == RTG_PRIM_MQ ? open_mq(c, err, errlen) : open_pipe(c, err, errlen);
}

void rtg_chan_close(rtg_chan *c)
{
    if (c->kind == RTG_PRIM_MQ) {
        mq_close(c->mq);
    } else {
        close(c->rfd);
        close(c->wfd);
    }
}

bool rtg_chan_send(rtg_chan *c, const char *buf)
{
    if (c->kind == RTG_PRIM_MQ)
        return mq_send(c->mq, buf, c->bytes, 0) == 0;
    return write(c->wfd, buf, c->bytes) == (ssize_t)c->bytes;
}

bool rtg_chan_recv(rtg_chan *c, char *buf)
{
    if (c->kind == RTG_PRIM_MQ)
        return mq_receive(c->mq, buf, c->bytes, NULL) == (ssize_t)c->bytes;
    size_t got = 0;
    while (got < c->bytes) {
        ssize_t r = read(c->rfd, buf + got, c->bytes - got);
        if (r <= 0 && errno != EINTR)
            return false;
        if (r > 0)
            got += (size_t)r;
    }
    return true;
}

void rtg_chan_poke(rtg_chan *c)
{
    char buf[4096] = {0};
    if (c->kind == RTG_PRIM_MQ) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        mq_timedsend(c->mq, buf, c->bytes, 0, &now);
    } else if (write(c->wfd, buf, c->bytes) < 0) {
        /* full: the reader has data already */
    }
}

#if !defined(RTG_HAVE_FUTEX)
/* Without the futex (prim_futex.c not built) nothing may call these: every user
 * asks rtg_prim_available() first and refuses the variant. Reaching one is a bug. */
void rtg_futex_wait(_Atomic int *w, int expected)
{
    (void)w, (void)expected;
    abort();
}

void rtg_futex_wake(_Atomic int *w, int n)
{
    (void)w, (void)n;
    abort();
}

bool rtg_pi_mutex_has_waiter(pthread_mutex_t *m)
{
    (void)m;
    abort();
}
#endif

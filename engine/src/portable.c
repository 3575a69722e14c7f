/* portable: see portable.h. */
#include "portable.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef RTG_POSIX_ONLY
#include <sys/syscall.h>
#endif

#include "clock.h"

#ifndef RTG_POSIX_ONLY

int rtg_thread_tid(void)
{
    return (int)syscall(SYS_gettid);
}

bool rtg_can_pin(void)
{
    return true;
}

#else

int rtg_sem_clockwait_mono(sem_t *s, const struct timespec *abs)
{
    int64_t until = rtg_timespec_ns(abs);
    for (;;) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        int64_t left = until - rtg_mono_ns();
        if (left < 0)
            left = 0;
        struct timespec dl = rtg_ns_timespec(rtg_timespec_ns(&rt) + left);
        if (sem_timedwait(s, &dl) == 0)
            return 0;
        if (errno != ETIMEDOUT || rtg_mono_ns() >= until)
            return -1;   /* EINTR, EINVAL, or a real timeout (errno kept) */
    }
}

/* One joiner per awaited thread: it joins th and posts done. */
typedef struct {
    pthread_t th;
    bool used;           /* slot taken (under lock) */
    bool claimed;        /* the caller took the result (under lock) */
    void *ret;
    int rc;
    sem_t done;
} joiner;

static joiner joiners[RTG_JOINERS];
static pthread_mutex_t joiners_lock = PTHREAD_MUTEX_INITIALIZER;

static void *join_main(void *p)
{
    joiner *j = p;
    j->rc = pthread_join(j->th, &j->ret);
    sem_post(&j->done);
    return NULL;
}

int rtg_join_until(pthread_t th, void **ret, const struct timespec *abs)
{
    joiner *j = NULL;
    pthread_mutex_lock(&joiners_lock);
    for (int i = 0; i < RTG_JOINERS && !j; i++)
        if (joiners[i].used && !joiners[i].claimed && pthread_equal(joiners[i].th, th))
            j = &joiners[i];
    for (int i = 0; i < RTG_JOINERS && !j; i++)
        if (!joiners[i].used) {
            j = &joiners[i];
            j->th = th;
            j->used = true;
            j->claimed = false;
            j->ret = NULL;
            j->rc = 0;
            sem_init(&j->done, 0, 0);
            pthread_attr_t a;
            pthread_attr_init(&a);
            pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
            pthread_attr_setstacksize(&a, 64 * 1024);
            pthread_t jt;
            int rc = pthread_create(&jt, &a, join_main, j);
            pthread_attr_destroy(&a);
            if (rc != 0) {
                sem_destroy(&j->done);
                j->used = false;
                pthread_mutex_unlock(&joiners_lock);
                return rc;
            }
        }
    pthread_mutex_unlock(&joiners_lock);
    if (!j)
        return EAGAIN;
    while (rtg_sem_clockwait_mono(&j->done, abs) != 0)
        if (errno != EINTR)
            return ETIMEDOUT;
    pthread_mutex_lock(&joiners_lock);
    int rc = j->rc;
    if (ret)
        *ret = j->ret;
    j->claimed = true;
    sem_destroy(&j->done);
    j->used = false;
    pthread_mutex_unlock(&joiners_lock);
    return rc;
}

int rtg_thread_tid(void)
{
    return -1;
}

bool rtg_can_pin(void)
{
    return false;
}

#endif

long rtg_online_cpus(void)
{
#ifdef _SC_NPROCESSORS_ONLN
    return sysconf(_SC_NPROCESSORS_ONLN);
#else
    return -1;
#endif
}

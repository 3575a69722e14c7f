/* portable: the few places where the engine uses a Linux (GNU) interface and
 * what it does instead in the POSIX-only build (meson -Dposix_only=true, which
 * defines RTG_POSIX_ONLY and compiles with _POSIX_C_SOURCE/_XOPEN_SOURCE only;
 * docs/porting.md). In the default Linux build every call here is the Linux one,
 * so behaviour and figures do not change.
 *
 * What the POSIX-only build cannot do, and how it says so:
 *  - pin a thread to a CPU (affinity is not POSIX): threads run where the system
 *    puts them; a test whose threads must share one CPU is unavailable unless
 *    the system has one CPU online (availability.h: rtg_test_unavailable);
 *  - see from outside that a thread is blocked in a system call (Linux
 *    /proc/self/task): a test that needs that check is unavailable;
 *  - read the kernel's facts (/proc, /sys, /dev/cpu_dma_latency): the env block
 *    leaves them null. */
#ifndef RTG_PORTABLE_H
#define RTG_PORTABLE_H
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* sem_clockwait(s, CLOCK_MONOTONIC, abs): 0, or -1 with errno (ETIMEDOUT, EINTR).
 * POSIX-only build: sem_timedwait, whose deadline is on CLOCK_REALTIME. The
 * monotonic deadline is turned into a realtime one just before the wait; a
 * timeout that comes before the monotonic deadline (the realtime clock was set
 * forward) waits again for the rest; a realtime clock set backward during the
 * wait makes it longer by the step (POSIX has no monotonic semaphore wait). */
#ifndef RTG_POSIX_ONLY
static inline int rtg_sem_clockwait_mono(sem_t *s, const struct timespec *abs)
{
    return sem_clockwait(s, CLOCK_MONOTONIC, abs);
}
#else
int rtg_sem_clockwait_mono(sem_t *s, const struct timespec *abs);
#endif

/* pthread_clockjoin_np(th, ret, CLOCK_MONOTONIC, abs): 0 or ETIMEDOUT / an error.
 * POSIX-only build: a joiner thread does pthread_join and posts a semaphore the
 * caller waits on with rtg_sem_clockwait_mono; on a timeout the joiner stays
 * (detached) and a later call for the same thread waits on the same joiner. At
 * most RTG_JOINERS threads may be awaited at once. */
#define RTG_JOINERS 256
#ifndef RTG_POSIX_ONLY
static inline int rtg_join_until(pthread_t th, void **ret, const struct timespec *abs)
{
    return pthread_clockjoin_np(th, ret, CLOCK_MONOTONIC, abs);
}
#else
int rtg_join_until(pthread_t th, void **ret, const struct timespec *abs);
#endif

/* The kernel's id of the calling thread (Linux gettid); -1 in the POSIX-only
 * build, where no such id is needed: nothing reads /proc there. */
int rtg_thread_tid(void);

/* Number of CPUs online (sysconf(_SC_NPROCESSORS_ONLN)); -1 unknown. */
long rtg_online_cpus(void);

/* true when this build can pin threads to CPUs. */
bool rtg_can_pin(void);

#endif

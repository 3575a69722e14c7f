/* prim_futex: the Linux futex, one implementation of the primitives layer
 * (prim.h). Compiled only when Meson finds linux/futex.h and SYS_futex and the
 * build is not POSIX-only; rtg_prim_available() says so otherwise. */
#include "prim.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void rtg_futex_wait(_Atomic int *w, int expected)
{
    syscall(SYS_futex, (int *)w, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

void rtg_futex_wake(_Atomic int *w, int n)
{
    syscall(SYS_futex, (int *)w, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* glibc keeps a PI mutex's futex word in __data.__lock; the kernel sets
 * FUTEX_WAITERS in it once a thread is queued on the mutex. */
bool rtg_pi_mutex_has_waiter(pthread_mutex_t *m)
{
    return (__atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) & FUTEX_WAITERS) != 0;
}

/* prim: the blocking primitives the microbenchmarks and behaviour tests use,
 * behind one small layer: mutex (plain, priority inheritance, priority
 * ceiling), semaphore, condition variable, futex, spin lock, message queue and
 * pipe. Everything here is POSIX except the Linux futex, which lives in
 * prim_futex.c and is compiled only where the build finds it (Meson defines
 * RTG_HAVE_FUTEX). A test asks rtg_prim_available() before it uses a
 * primitive, and says "unavailable in this build because ..." when it is not. */
#ifndef RTG_PRIM_H
#define RTG_PRIM_H
#include <mqueue.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    RTG_PRIM_MUTEX,         /* pthread mutex, PTHREAD_PRIO_NONE */
    RTG_PRIM_PI_MUTEX,      /* pthread mutex, PTHREAD_PRIO_INHERIT */
    RTG_PRIM_PROTECT_MUTEX, /* pthread mutex, PTHREAD_PRIO_PROTECT (ceiling) */
    RTG_PRIM_SEM,           /* POSIX unnamed semaphore */
    RTG_PRIM_CONDVAR,       /* pthread condition variable on CLOCK_MONOTONIC */
    RTG_PRIM_FUTEX,         /* Linux futex word (FUTEX_WAIT/WAKE, private) */
    RTG_PRIM_SPIN,          /* pthread spin lock (never blocks: busy-waits) */
    RTG_PRIM_MQ,            /* POSIX message queue */
    RTG_PRIM_PIPE,          /* pipe */
    RTG_PRIM_SLEEP,         /* not a primitive: a clock sleep (what a timer waits in) */
    RTG_PRIM_PI_WAITERS,    /* a feature: seeing that a thread is queued on a PI mutex */
    RTG_PRIM_COUNT
} rtg_prim;

const char *rtg_prim_name(rtg_prim p);
/* The primitive named name (rtg_prim_name's spelling: "mutex", "pi-mutex", "sem",
 * "spin", ...), or fallback when no primitive has that name. */
rtg_prim rtg_prim_by_name(const char *name, rtg_prim fallback);
/* The mutex kind of a --protocol option's word: "inherit" (PI_MUTEX), "protect"
 * (PROTECT_MUTEX), anything else (MUTEX: "none"). */
rtg_prim rtg_mutex_protocol(const char *protocol);
/* True when this build can use p; otherwise why (one sentence fragment:
 * "unavailable in this build because ...") goes to why. */
bool rtg_prim_available(rtg_prim p, char *why, size_t len);

/* ---- mutex ---- */
/* Initialise m with the protocol of kind (MUTEX, PI_MUTEX or PROTECT_MUTEX; ceiling
 * for the last). 0 or the pthread error. */
int rtg_mutex_init(pthread_mutex_t *m, rtg_prim kind, int ceiling);
/* Lock before the CLOCK_MONOTONIC deadline: 0, ETIMEDOUT, or the error.
 * (pthread_mutex_timedlock takes CLOCK_REALTIME: the deadline is mapped on it.) */
int rtg_mutex_lock_until(pthread_mutex_t *m, int64_t deadline_ns);
/* A thread is queued on the PI mutex m (it holds the futex word's waiters bit).
 * Only where rtg_prim_available(RTG_PRIM_PI_WAITERS). */
bool rtg_pi_mutex_has_waiter(pthread_mutex_t *m);

/* ---- semaphore ---- */
int rtg_sem_wait(sem_t *s);                          /* 0 or errno; EINTR retried */
int rtg_sem_wait_until(sem_t *s, int64_t deadline_ns);   /* 0, ETIMEDOUT or errno */

/* ---- condition variable ---- */
int rtg_cond_init(pthread_cond_t *c);                /* on CLOCK_MONOTONIC; 0 or error */

/* ---- futex (prim_futex.c, only with RTG_HAVE_FUTEX) ---- */
/* Sleep while *w == expected (spurious returns possible: recheck). */
void rtg_futex_wait(_Atomic int *w, int expected);
void rtg_futex_wake(_Atomic int *w, int n);

/* ---- a lock of a chosen kind (mutex kinds, SEM of value 1, SPIN) ---- */
typedef struct {
    rtg_prim kind;
    pthread_mutex_t m;
    sem_t s;
    pthread_spinlock_t sp;
} rtg_lock;

/* 0, or -1 with a sentence in err (the system cannot make this lock). */
int rtg_lock_init(rtg_lock *l, rtg_prim kind, int ceiling, char *err, size_t errlen);
void rtg_lock_destroy(rtg_lock *l);
int rtg_lock_acquire(rtg_lock *l);
/* Acquire before the CLOCK_MONOTONIC deadline: 0, or ETIMEDOUT. A spin lock
 * spins (never sleeps) until then, as pthread_spin_lock would, but bounded. */
int rtg_lock_acquire_until(rtg_lock *l, int64_t deadline_ns);
void rtg_lock_release(rtg_lock *l);
const char *rtg_lock_name(rtg_prim kind);

/* ---- a one-way channel: message queue or pipe ---- */
typedef struct {
    rtg_prim kind;            /* RTG_PRIM_MQ or RTG_PRIM_PIPE */
    size_t bytes;             /* every message is this long */
    mqd_t mq;
    int rfd, wfd;             /* pipe; the write end is non-blocking */
} rtg_chan;

/* Open a channel for messages of `bytes`, one in flight (the queue is unlinked
 * at once: nothing is left behind). 0, or -1 with a sentence in err. */
int rtg_chan_open(rtg_chan *c, rtg_prim kind, size_t bytes, char *err, size_t errlen);
void rtg_chan_close(rtg_chan *c);
bool rtg_chan_send(rtg_chan *c, const char *buf);
bool rtg_chan_recv(rtg_chan *c, char *buf);            /* blocks */
/* One message that never blocks the caller (to wake a blocked reader). */
void rtg_chan_poke(rtg_chan *c);

#endif

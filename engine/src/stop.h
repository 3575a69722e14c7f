/* stop: how every engine loop learns that its run must end.
 *  - SIGINT/SIGTERM/SIGHUP set rtg_stop (test.h) and wake whoever waits in
 *    rtg_stop_wait (a semaphore post: async-signal-safe).
 *  - The engine ends itself when its parent dies (Linux: PR_SET_PDEATHSIG
 *    delivers SIGTERM, and a parent already gone before that was set is seen by
 *    comparing getppid() with the parent at start).
 *  - A thread blocked in a wait (clock_nanosleep, ppoll, recvmsg, sem_wait) is
 *    woken by RTG_WAKE_SIGNAL, whose handler does nothing and is installed
 *    without SA_RESTART, so the wait returns EINTR and the loop looks at its
 *    stop condition. */
#ifndef RTG_STOP_H
#define RTG_STOP_H
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define RTG_WAKE_SIGNAL (SIGRTMIN + 1)

/* main: the SIGINT/SIGTERM/SIGHUP handlers and the parent-death stop. */
void rtg_stop_install(void);
/* Ask for a stop (what the handlers do); async-signal-safe. */
void rtg_stop_request(void);
/* Wake rtg_stop_wait without asking for a stop (e.g. a thread finished). */
void rtg_stop_notify(void);
/* Block until rtg_stop_request/rtg_stop_notify or timeout_ns passed; returns rtg_stop != 0. */
bool rtg_stop_wait(int64_t timeout_ns);
/* Install the RTG_WAKE_SIGNAL handler (once per process; idempotent). */
void rtg_wake_install(void);
/* Interrupt th's blocking wait (th must have RTG_WAKE_SIGNAL unblocked). */
void rtg_wake_thread(pthread_t th);

#endif

/* scenario: the one harness the microbenchmarks run on.
 *
 * A test declares its threads one after the other (rtg_scn_add: role name,
 * function, priority relative to the base --priority, CPU, and where the thread
 * must be before the next one starts), the harness starts each one and does not
 * go on until it has *checked* that the thread is there: blocked in the system
 * call of its primitive (on Linux: /proc/self/task/TID/stat says 'S' or 'D' and
 * /proc/self/task/TID/syscall names the call, e.g. futex for a semaphore), or
 * at an explicit handshake the thread reaches (rtg_scn_here). Without /proc
 * (the POSIX-only build) "blocked" is checked on one CPU under fifo/rr by the
 * priorities: the placing thread steps just below the new thread's priority,
 * and when it runs again the new thread is blocked (portable.h). Never a fixed
 * sleep. A check is bounded in time: a thread that does not get there within
 * s->place_ns (10 s, and never past the watchdog's deadline) ends the run with
 * a sentence naming the thread and what it was doing.
 *
 * Then rtg_scn_join joins every thread under the watchdog (microbench.h: the
 * calling thread at FIFO 99 on another CPU, the test's unblock hook at the
 * deadline or on Ctrl-C) and maps the outcome to the exit status.
 *
 * rtg_inv_start is the priority-inversion fixture on top of it: low at the base
 * priority, medium at +1, high at +2, on one CPU, started in the order and to
 * the places the test names (pi, mut-arc, mutex, deadlock-break). */
#ifndef RTG_SCENARIO_H
#define RTG_SCENARIO_H
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "microbench.h"
#include "prim.h"
#include "test.h"

/* How long a thread may take to get where the scenario needs it (by default;
 * never past the watchdog's deadline). Generous: on a loaded machine a thread
 * may wait for its CPU behind other real-time work. */
#define RTG_SCN_PLACE_NS 10000000000LL

/* Where a thread must be before the next one starts. */
typedef enum {
    RTG_AT_STARTED,   /* nothing checked: it was created */
    RTG_AT_BLOCKED,   /* blocked in the system call of role.blocks_on (checked) */
    RTG_AT_HERE       /* it called rtg_scn_here() (an explicit handshake) */
} rtg_at;

#define RTG_SCN_CPU (-2)   /* role.cpu: the scenario's measurement CPU (b.cpu) */

typedef struct {
    const char *name;          /* "high", "receiver", "member 3": used in error sentences */
    void *(*fn)(void *);
    void *arg;
    int prio;                  /* relative to the base priority (b.priority) */
    int cpu;                   /* RTG_SCN_CPU, or a CPU */
    rtg_at at;
    rtg_prim blocks_on;        /* with RTG_AT_BLOCKED: the primitive it blocks on */
    size_t stack_kib;          /* 0: 64 KiB */
} rtg_role;

/* One started thread (the harness's record). */
typedef struct {
    rtg_role role;
    _Atomic int tid;           /* kernel thread id, once it ran */
    _Atomic int here;          /* rtg_scn_here was called */
    _Atomic int ended;         /* its function returned */
    sem_t arrived;             /* posted by the thread when it starts and at rtg_scn_here */
} rtg_scn_thread;

typedef struct {
    rtg_bench b;               /* CPU, policy, base priority, watchdog deadline */
    int max, n;                /* capacity, threads started */
    pthread_t *th;
    rtg_scn_thread *t;
    void (*unblock)(void *);   /* posts every semaphore, writes every pipe... */
    void *ctx;
    const _Atomic int *failed; /* optional: set by a worker whose wait failed */
    bool deadline_ends_run;    /* the watchdog's deadline is a normal end (keep what was measured) */
    bool incomplete;           /* set by rtg_scn_join: the watchdog stopped the run early; what was
                                  measured is kept and env.incomplete says so (rtg_scn_mark_incomplete) */
    bool start_failed;
    int64_t place_ns;          /* bound of one placement (RTG_SCN_PLACE_NS) */
    double timeout_s;          /* the watchdog's; from --timeout-s unless given */
    bool timeout_opt;          /* it came from --timeout-s */
    int left;                  /* threads not joined (leave their memory to the exit) */
    char err[512];
} rtg_scenario;

/* rtg_micro_setup (see microbench.h) plus room for max threads; unblock(ctx) is
 * the hook the watchdog calls; timeout_ns: the watchdog's, or 0 for --timeout-s.
 * Returns RTG_EXIT_*. */
int rtg_scn_init(rtg_scenario *s, const rtg_opts *o, rtg_result *res, bool needs_priorities, int max,
                 int64_t timeout_ns, void (*unblock)(void *), void *ctx);
/* Start the thread and wait (bounded) until it is where role->at says.
 * 0, or -1: the sentence is in s->err, the run is aborted (the others are told
 * to stop) and rtg_scn_join reports it. Once one add failed, the next ones do
 * nothing and return -1. */
int rtg_scn_add(rtg_scenario *s, const rtg_role *role);
/* Called by a worker (started with RTG_AT_HERE) where the scenario needs it. */
void rtg_scn_here(void);
/* Abort the start: the sentence goes to s->err, the threads are told to stop. */
void rtg_scn_abort(rtg_scenario *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Join every thread under the watchdog; the status: OK, or FAIL with one
 * sentence (a thread that could not be started or placed, threads that would not
 * stop, or "WHAT did not finish within --timeout-s N s": the deadline passed or
 * *s->failed was set). Frees the harness's records unless threads are left. */
int rtg_scn_join(rtg_scenario *s, rtg_result *res, const char *what);
/* After a join that set s->incomplete: env.incomplete = {"by": "watchdog", "timeout_s",
 * "asked", "measured"} (counts in the test's own unit: iterations). */
void rtg_scn_mark_incomplete(const rtg_scenario *s, rtg_result *res, int64_t asked, int64_t measured);
/* Threads are left running (not joined): the test must not free what they use. */
static inline bool rtg_scn_leaked(const rtg_scenario *s) { return s->left > 0; }

/* POSIX-only build: on one CPU under fifo/rr, step the calling thread just below
 * prio and back (no step when it runs below prio already); when it returns 0
 * every thread at prio or above was blocked (or gone) at that moment. -1 when it
 * cannot tell (several CPUs online, not fifo/rr, prio at the policy's minimum). */
int rtg_blocked_above(int prio);

/* ---- where a thread is (Linux: /proc; elsewhere: unknown) ---- */
typedef struct {
    char state;                /* 'R', 'S', 'D', ... or 0 unknown */
    long syscall;              /* system call it is in, -1 none, RTG_SYSCALL_UNKNOWN */
    char wchan[48];            /* kernel function it waits in, "" unknown */
    bool known;                /* the system lets us look (/proc/self/task) */
} rtg_thread_place;

#define RTG_SYSCALL_UNKNOWN (-2L)   /* the kernel does not show it */
bool rtg_thread_place_of(int tid, rtg_thread_place *p);
/* The thread sleeps in a system call that waits on prim (futex for a semaphore,
 * mutex or condvar; mq_timedreceive; read; clock_nanosleep...), by the system
 * call's number or, when that does not match (an emulator such as qemu-user
 * shows the host's numbers), by the kernel function it waits in (wchan). */
bool rtg_thread_blocked_on(int tid, rtg_prim prim);

/* ---- the priority-inversion fixture ---- */
enum { RTG_INV_LOW, RTG_INV_MEDIUM, RTG_INV_HIGH };

typedef struct {
    void *(*fn[3])(void *);    /* indexed by RTG_INV_* */
    rtg_at at[3];
    rtg_prim blocks_on[3];
    int order[3];              /* start order, e.g. {RTG_INV_HIGH, RTG_INV_MEDIUM, RTG_INV_LOW} */
    void *arg;
    /* optional: called after each thread is in place (e.g. to read /proc facts);
     * returns 0, or -1 after rtg_scn_abort (the scenario cannot go on) */
    int (*placed)(rtg_scenario *s, int role, int tid, void *arg);
} rtg_inv_plan;

/* Start the three roles of plan on the scenario's CPU: low at the base priority,
 * medium at +1, high at +2. 0 or -1 (as rtg_scn_add). */
int rtg_inv_start(rtg_scenario *s, const rtg_inv_plan *plan);

#endif

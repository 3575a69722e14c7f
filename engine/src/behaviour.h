/* behaviour: what the behaviour tests (thr-new, thr-rr, sem-lck, sem-rel,
 * mut-arc, pi) share: threads created pinned at an explicit policy and priority,
 * bounded waits, what the kernel says about a thread (/proc state and effective
 * priority), a lock of a chosen kind, and the priority-inversion scenario
 * (low holds a lock, high wants it, medium hogs the CPU) that mut-arc and pi run.
 * Every wait here has a bound, so a scenario that goes wrong ends by itself. */
#ifndef RTG_BEHAVIOUR_H
#define RTG_BEHAVIOUR_H
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prim.h"
#include "rt.h"
#include "test.h"

/* The CPU every thread of a behaviour test runs on: the first CPU of --cpus, or
 * the last CPU this process may use (CPU 0 usually takes most interrupts). */
int rtg_behav_cpu(const rtg_opts *o);
/* Optional second CPU (the deliberately wrong "split" setups): another allowed
 * CPU than cpu, or -1 when there is none. */
int rtg_behav_other_cpu(int cpu);

/* Pin the calling thread to cpu and set its policy/priority; 0 or -1 with err. */
int rtg_behav_self(int cpu, rtg_policy pol, int prio, char *err, size_t errlen);
/* Start fn(arg) pinned to cpu at pol/prio from its first instruction (explicit
 * scheduling and affinity in the attributes). Stop signals stay with the main
 * thread. 0 or -1 with err. */
int rtg_behav_start(pthread_t *th, void *(*fn)(void *), void *arg, int cpu, rtg_policy pol, int prio,
                 char *err, size_t errlen);

int rtg_behav_tid(void);
int64_t rtg_behav_thread_cpu_ns(void);            /* CPU time of the calling thread */
void rtg_behav_sleep_ns(int64_t ns);
/* Scheduler state letter of a thread of this process ('R', 'S', 'D', ...), or 0. */
char rtg_behav_task_state(int tid);
/* Look (every 20 us, at most timeout_ns) until the thread is blocked in the
 * system call of prim (scenario.h: rtg_thread_blocked_on); true when it is. */
bool rtg_behav_wait_blocked(int tid, rtg_prim prim, int64_t timeout_ns);
/* The same for a waiter at real-time priority prio: false when tid <= 0; in the
 * POSIX-only build (no /proc) checked by priorities instead (rtg_blocked_above:
 * one CPU, the caller at or above prio), the primitive not named. */
bool rtg_behav_wait_blocked_at(int tid, int prio, rtg_prim prim, int64_t timeout_ns);
/* Effective real-time priority of a thread (what it runs at now, boosts
 * included, from /proc/self/task/TID/stat), 0 for a non-RT thread, -1 unknown. */
int rtg_behav_effective_rt_prio(int tid);

/* Event order: a global sequence number, so "A happened before B" is exact. */
int64_t rtg_behav_seq(void);

/* ---- the priority-inversion scenario (pi, mut-arc) ----
 * On the priority-inversion fixture (scenario.h): all on one CPU under
 * SCHED_FIFO, the watchdog (the calling thread) above all, on another CPU when
 * there is one:
 *  1. low takes the lock and starts a critical section needing cs_ns of CPU
 *     (it says so: a handshake);
 *  2. high asks for the lock (timed wait, timeout_ns) and is checked blocked on
 *     it (a spin lock: it announces that it spins);
 *  3. medium becomes ready and hogs the CPU for hog_ns of wall time, then stops.
 * Protected: high gets the lock before medium stops. */
typedef struct {
    int cpu;
    int prio_low, prio_med, prio_high, prio_ctl;
    rtg_prim kind;                 /* lock: a mutex kind, SEM or SPIN */
    int64_t cs_ns, hog_ns, timeout_ns;
} rtg_inv_cfg;

typedef struct {
    bool acquired, timed_out;
    int64_t t_held, t_request, t_acquire, t_low_release, t_med_start, t_med_end;   /* ns */
    int64_t s_acquire, s_med_start, s_med_end;   /* event sequence numbers */
    int low_prio_before, low_prio_waiting;   /* low's effective priority before / while high waits */
    int high_state;                          /* high's state letter while it waits */
} rtg_inv_result;

/* The options --priority and --policy of a test that runs the scenario, as rows
 * of its option table (test.h: rtg_opt); its own --hog-ms and --cs-ms differ. */
#define RTG_INVERSION_OPTS                                                                              \
    {"priority", RTG_OPT_INT, "10", 1, 96, NULL,                                                         \
     "priority of the low thread; medium and high run at +1 and +2 (the controller is the watchdog, "    \
     "FIFO 99 on another CPU)"},                                                                         \
        {"policy", RTG_OPT_ENUM, "fifo", 0, 0, "fifo", "the scenario runs under SCHED_FIFO"}

/* The scenario with the lock `kind`, set up from the options --priority (low; medium,
 * high at +1, +2; priority_controller: the watchdog's), --cs-ms, --hog-ms and --cpus, run, and
 * reported (metrics and env). RTG_EXIT_OK with r filled, or RTG_EXIT_FAIL with the
 * sentence in res. */
int rtg_inversion_run(const rtg_opts *o, rtg_prim kind, rtg_inv_cfg *cfg, rtg_inv_result *r,
                      rtg_result *res);
/* The scenario's timings as metrics (ns): high_wait, high_timed_out, medium_hog,
 * low_hold; and low's effective priority before and while high waited. */
void rtg_inversion_report(const rtg_inv_cfg *cfg, const rtg_inv_result *r, rtg_result *res);
/* Those metrics, declared (the metric table of every test that runs the scenario). */
extern const rtg_metric rtg_inversion_metrics[];

/* env.cpus = [cpu] (the CPU the scenario ran on) and env.scenario_priorities */
void rtg_behav_env_cpu(rtg_result *res, int cpu);

#endif

/* split: the wake-up latency Ti split into its interrupt and scheduling parts,
 * from the kernel's standard trace events, for kernels without the timerlat
 * tracer. For each measuring thread's own timer:
 *   timer:hrtimer_start         (the thread arms its timer: softexpires = the deadline)
 *   timer:hrtimer_expire_entry  (the timer interrupt handles it: `now` = its clock)
 *   syscalls:sys_exit_clock_nanosleep (the thread runs: its sleep returns in its own
 *                                context; sched:sched_switch where the kernel has no
 *                                syscall events — but switches out of the idle task may
 *                                not be traced, see split.c)
 *   (only starts of its sleep timer, function hrtimer_wakeup: the kernel arms timers
 *   of its own in the thread's context; split_pair.c pairs the events)
 *   ti_irq   = expire_entry.now - start.softexpires   (deadline -> timer handled)
 *   ti_sched = running timestamp - expire_entry timestamp (handled -> thread running)
 * Events go to a private tracefs instance (instances/rtgauge-split-PID) restricted
 * to the measured CPUs, with the trace clock on CLOCK_MONOTONIC ("mono"); a non-RT
 * reader thread drains it every 100 ms into distributions, so memory does not grow
 * with the run. Built only with libtracefs; without it, or without the events at
 * run time, rtg_split_start says why and the run is refused. Where tracefs is not
 * mounted, rtg_split_start mounts it at RTG_TRACEFS_DIR (root only; it stays
 * mounted, as with rtla and trace-cmd) unless told not to, and says so in a note. */
#ifndef RTG_SPLIT_H
#define RTG_SPLIT_H
#include <stdbool.h>
#include <stddef.h>
#include "test.h"

#define RTG_TRACEFS_DIR "/sys/kernel/tracing"   /* where tracefs is expected */

typedef struct rtg_split rtg_split;

/* tracefs there for a tracing test (`what` names it in the sentences): 0 when it is
 * mounted, or when may_mount and mounting it at RTG_TRACEFS_DIR worked (then note says
 * so, else note is ""); -1 with one sentence in err. */
int rtg_tracefs_ready(const char *what, bool may_mount, char *note, size_t notelen, char *err, size_t errlen);

/* NULL when the split can be built and tracefs with the three events is there;
 * else one sentence saying why not. */
const char *rtg_split_unavailable(void);
/* Start tracing on cpus[0..ncpus-1]; NULL with a sentence in err. When tracefs is
 * not mounted and may_mount, mount it first and put a sentence saying so in note
 * (else note is ""). */
rtg_split *rtg_split_start(const int *cpus, int ncpus, bool may_mount, char *note, size_t notelen,
                           char *err, size_t errlen);
/* Stop tracing and fold what is left in the buffers. */
void rtg_split_stop(rtg_split *s);
/* Metrics ti_irq and ti_sched (distributions, ns) over the threads tids[0..n-1]
 * and per thread as ti_irq#i / ti_sched#i; scalars split_lost (events the kernel
 * dropped) and split_unmatched (wake-ups seen without their interrupt); env.split
 * says the events used, the trace clock, sleep_timer (the callback a start must have to
 * be the thread's sleep, null: not known, every start taken) and foreign_timers (starts
 * in a measuring thread's context left out). */
void rtg_split_report(const rtg_split *s, const int *tids, int n, rtg_result *res);
/* Remove the trace instance and free everything. */
void rtg_split_free(rtg_split *s);

#endif

/* stall: the host-stall observer (docs/engine.md "Host stalls").
 * One non-measuring thread, on a CPU other than the measured ones where there is
 * one, sleeps to absolute deadlines every RTG_STALL_PERIOD_NS (clock_nanosleep on
 * CLOCK_MONOTONIC, SCHED_FIFO 1 under a real-time run: below every measuring
 * thread) and records each wake-up later than RTG_STALL_THRESHOLD_NS as a stall
 * interval [deadline, woke]: the time its own clock jumped while it could not run.
 * A whole-VM stall (the hypervisor descheduling every vCPU, or a whole-process
 * SIGSTOP) shows there and on the measured CPUs at once; interference local to a
 * measured CPU (a higher-priority thread there) does not, and is not a stall.
 * A late wake-up the kernel counts as the observer's own run delay (another
 * thread held its CPU) is local to it and not a stall (local_delays).
 * A sample or cycle whose time span overlaps a stall interval is "stall-touched";
 * its figures are then also given without the touched samples. The maximum stays
 * the true maximum (the "without" figures carry no max).
 * One observer per process; every function is a no-op when it is not running. */
#ifndef RTG_STALL_H
#define RTG_STALL_H
#include <stdbool.h>
#include <stdint.h>

#include "rt.h"
#include "samples.h"
#include "test.h"

#define RTG_STALL_PERIOD_NS 1000000LL       /* the observer wakes every 1 ms */
#define RTG_STALL_THRESHOLD_NS 500000LL     /* a wake-up this much late is a stall */
#define RTG_STALL_RING 4096                 /* stall intervals kept (totals count all) */
#define RTG_STALL_JSON_INTERVALS 100        /* intervals written to env.stalls.intervals */

/* Start the observer for a run measuring on cpus[0..n) (n = 0: unknown, any CPU
 * may be measured), and create env.stalls (observed, reason, cpu, ...). With one
 * allowed CPU it does not start: env.stalls says so (observed false, reason).
 * policy: the run's policy (other: the observer is SCHED_OTHER too).
 * Returns true when the observer runs, once it has looked at the clock (at most
 * ~2 s on a machine that does not schedule it sooner). */
bool rtg_stall_start(rtg_result *res, const int *cpus, int n, rtg_policy policy);
/* Whether an observer is running. */
bool rtg_stall_observing(void);
/* Every stall that ended before this CLOCK_MONOTONIC instant is recorded
 * (INT64_MAX when no observer runs: nothing is ever pending). */
int64_t rtg_stall_covered(void);
/* Wait (at most ~100 ms) until the observer has looked at the clock after now,
 * so a stall that just ended is recorded before samples are judged. */
void rtg_stall_sync(void);
/* Whether [from, to] (CLOCK_MONOTONIC ns) is stall-touched: it overlaps a
 * recorded stall interval and is at least RTG_STALL_THRESHOLD_NS long (a shorter
 * sample cannot contain a stall the observer sees; it ran beside it). */
bool rtg_stall_touches(int64_t from, int64_t to);
/* env.stalls.metrics[name] = {"touched": n, "unknown": u, "without": {count, min,
 * avg, stddev, p50..p9999}} ("without": the figures of the samples no stall
 * touched; unknown: samples without a time span, never judged). */
void rtg_stall_put_metric(rtg_result *res, const char *name, uint64_t touched, uint64_t unknown,
                          const rtg_dist *clean);
/* Stop the observer and write the summary into env.stalls: wakeups, count,
 * total_ns, longest_ns, intervals ([[start_ns, end_ns], ...], the first
 * RTG_STALL_JSON_INTERVALS), intervals_dropped. No-op when none was started. */
void rtg_stall_finish(rtg_result *res);

#endif

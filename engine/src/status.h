/* status: a compact status of a periodic run, one JSON line per window, for a
 * live view or a metrics exporter following a long run (docs/samples.md).
 *
 * Windows are those of the ti_window_max series: window w holds the cycles whose
 * deadline is in [start + w*window, start + (w+1)*window). The collector thread
 * adds each cycle as it folds it (never a measuring thread), and writes the line
 * of window w once every thread has moved past w (its records come in deadline
 * order) or at the end of the run. A line is
 *   {"window":w,"start_ns":s,"t_s":w*window_s,"window_s":window_s,
 *    "threads":[{"thread":i,"cpu":c,"cycles":n,"min":ns,"avg":ns,"max":ns,
 *                "p99":ns,"misses":n,"skipped":n,"overflows":n},...]}
 * with min/avg/max/p99 of Ti (null when the thread had no cycle measured in the
 * window), misses the cycles with Tw < 0, skipped the deadlines due in the window
 * that were skipped (after an overrun: no wake-up measured), overflows the Ti
 * beyond the linear histogram (--histogram; null without one). Every window up to
 * the last deadline due or skipped has a line, so a thread held off its CPU shows
 * as skipped deadlines, not as missing lines. Its size depends on the number of
 * threads only, never on the cycle rate: one line a window. */
#ifndef RTG_STATUS_H
#define RTG_STATUS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct rtg_status rtg_status;

/* A status written to f (not closed here) for nthreads threads on cpus[i]
 * (-1 unpinned), windows of window_ns from start_ns; periods_ns[i]: thread i's
 * deadline grid (deadline k at start_ns + k*period; NULL: none, nothing is counted
 * as skipped); lin_*: the linear histogram's shape (0 for none), for the
 * overflows. NULL when out of memory. */
rtg_status *rtg_status_new(FILE *f, int nthreads, const int *cpus, const int64_t *periods_ns, int64_t start_ns,
                           int64_t window_ns, int64_t lin_bucket_ns, size_t lin_buckets);
void rtg_status_free(rtg_status *s);
/* One cycle of thread i (in deadline order per thread), numbered as its record is
 * (a timer's deadline index: the numbers missing before it were skipped). */
void rtg_status_add(rtg_status *s, int i, uint64_t number, int64_t deadline_ns, int64_t ti, bool miss);
/* Thread i ended having skipped `skipped` deadlines in all: those not between its
 * cycles came after its last one (the run ended while it was behind). */
void rtg_status_end(rtg_status *s, int i, uint64_t skipped);
/* Write the lines of the windows every thread has moved past (final: of every
 * window up to the last cycle or skipped deadline), then flush. Returns the lines written (or
 * that would have been: after a failed write, e.g. a reader that closed its
 * pipe, nothing more is written and the run goes on). */
int rtg_status_write(rtg_status *s, bool final);

#endif

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
 *                "p99":ns,"misses":n,"overflows":n},...]}
 * with min/avg/max/p99 of Ti (null when the thread had no cycle due in the
 * window), misses the cycles with Tw < 0, overflows the Ti beyond the linear
 * histogram (--histogram; null without one). Its size depends on the number of
 * threads only, never on the cycle rate: one line a window. */
#ifndef RTG_STATUS_H
#define RTG_STATUS_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct rtg_status rtg_status;

/* A status written to f (not closed here) for nthreads threads on cpus[i]
 * (-1 unpinned), windows of window_ns from start_ns; lin_*: the linear
 * histogram's shape (0 for none), for the overflows. NULL when out of memory. */
rtg_status *rtg_status_new(FILE *f, int nthreads, const int *cpus, int64_t start_ns, int64_t window_ns,
                           int64_t lin_bucket_ns, size_t lin_buckets);
void rtg_status_free(rtg_status *s);
/* One cycle of thread i (in deadline order per thread). */
void rtg_status_add(rtg_status *s, int i, int64_t deadline_ns, int64_t ti, bool miss);
/* Write the lines of the windows every thread has moved past (final: of every
 * window up to the last cycle seen), then flush. Returns the lines written (or
 * that would have been: after a failed write, e.g. a reader that closed its
 * pipe, nothing more is written and the run goes on). */
int rtg_status_write(rtg_status *s, bool final);

#endif

/* periodic_stall: the host-stall observer's view of a periodic run (periodic_stall.c, stall.h). */
#ifndef RTG_PERIODIC_STALL_H
#define RTG_PERIODIC_STALL_H
#include "periodic/cycle.h"
#include "test.h"

/* One cycle, before the collector folds it into t: touched, or clean. */
void rtg_pd_stall_judge(rtg_periodic_thread *t, const rtg_cycle *c);
/* The merged thread's touched count and figures without the touched cycles. */
void rtg_pd_stall_merge(rtg_periodic_run *run);
/* env.stalls.metrics of the run: merged, then "#i" per thread. */
void rtg_pd_stall_report(const rtg_periodic_run *run, rtg_result *res);

#endif

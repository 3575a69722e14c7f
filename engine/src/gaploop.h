/* gaploop: the gap loop of tick (CLK-P-DUR) and irq-gap (IRQ_P_DLT analogue). One
 * thread reads a clock in a tight loop for duration_ns; whenever two consecutive
 * readings are more than threshold_ns apart the CPU was taken away, and the gap
 * (start = the reading before it, length) is stored in preallocated memory (cap
 * gaps; more are counted only). The tests set the thread up (a scenario role) and
 * judge the gaps themselves. */
#ifndef RTG_GAPLOOP_H
#define RTG_GAPLOOP_H
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "test.h"

typedef struct {
    rtg_clock clock;               /* what the loop reads; zeroed = CLOCK_MONOTONIC */
    int64_t duration_ns, threshold_ns;
    size_t cap, n;                 /* stored gaps / gaps seen */
    int64_t *start, *len;
    int64_t t_begin, t_end;
    uint64_t loops;
} rtg_gaploop;

/* Room for cap gaps, touched so the loop takes no page fault: 0, or -1 out of
 * memory (nothing then to free). */
int rtg_gaploop_alloc(rtg_gaploop *g, size_t cap);
void rtg_gaploop_free(rtg_gaploop *g);
/* The loop (a thread's function, arg the rtg_gaploop): until duration_ns has passed
 * or a stop is asked (rtg_micro_stopping). */
void *rtg_gaploop_main(void *arg);
/* Gaps stored: min(n, cap). */
size_t rtg_gaploop_stored(const rtg_gaploop *g);
/* The metrics both tests share: gap (each stored gap), gaps, gaps_not_stored,
 * stolen_fraction, loops, run_ns; env run_start_ns and run_end_ns. */
void rtg_gaploop_report(const rtg_gaploop *g, rtg_result *res);

#endif

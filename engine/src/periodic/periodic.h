/* periodic: THE cycle driver of T = Ti + Ts + Tw (docs/engine.md). Each cycle k
 * of a thread starts on a trigger, runs the payload and is measured:
 *   trigger instant c_k: when the cycle became due (see the triggers below);
 *   t1 = now() once the thread runs; payload(); t2 = now();
 *   Ti = t1 - c_k (wake-up latency), Ts = t2 - t1 (payload), Tw = n_k - t2
 *   (slack before the next cycle is due, n_k; Tw < 0 is a missed deadline).
 * Triggers (one per thread, rtg_trigger):
 *   TIMER  c_k = d_k = start + k*period, clock_nanosleep(TIMER_ABSTIME); n_k = d_k + period.
 *   FRAME  a datagram arriving on a socket: c_k = its arrival (the kernel's
 *          SO_TIMESTAMPNS stamp when the socket has it, else the return of recvmsg
 *          unless the payload knows better); n_k = c_k + period unless the payload
 *          sets it (the sender's schedule).
 *   EVENT  rtg_event_post() by another thread: c_k = the post instant; n_k = c_k + period.
 * The measuring thread only stores {c_k, Ti, Ts, Tw} into a preallocated SPSC ring;
 * a non-RT collector thread drains the rings (every 50 ms) into per-thread and
 * merged distributions, the per-window max series and, on request, a raw samples
 * file and a status line per window (status.h): memory does not grow with the
 * number of cycles. After a timer overrun
 * (the cycle ends after the next deadline) the driver
 * either skips the deadlines already past, like cyclictest, counting them as
 * `skipped` (default), or catches up (catch_up: the next deadline is still
 * d_k + period, so late cycles run back to back and every one is recorded).
 * Stop: rtg_stop (SIGINT/SIGTERM), stop_above_ns or a payload ending the run
 * interrupts every thread's wait at once (a wake-up signal, RTG_WAKE_SIGNAL); a
 * payload longer than that reads ctx->stopping (rtg_cycle_stopping) and returns. */
#ifndef RTG_PERIODIC_H
#define RTG_PERIODIC_H
#include "periodic/cycle.h"            /* the types: cycle, payload, trigger, cfg, run */
#include "periodic/event.h"            /* the EVENT trigger's post side */
#include "periodic/periodic_report.h"  /* the run as metrics and env */

/* Run the driver. Returns 0, or -1 with a sentence in err (then run is freed). */
int rtg_periodic(const rtg_periodic_cfg *cfg, rtg_periodic_run *run, char *err, size_t errlen);
void rtg_periodic_free(rtg_periodic_run *run);
/* Raw samples file formats (docs/samples.md):
 * CSV: header "thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns", one line a cycle.
 * Binary: 16-byte header: "RTGSAMP1", uint32 record size (48), uint32 0; then
 * little-endian records {uint32 thread; uint32 0; uint64 cycle; int64 deadline_ns;
 * int64 ti; int64 ts; int64 tw}. Records of different threads interleave. */

#endif

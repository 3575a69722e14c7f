/* irqtrace: the interrupt handlers that ran on one CPU, from the kernel's trace
 * events, as spans [entry, exit] on CLOCK_MONOTONIC (trace clock "mono"), for
 * attributing the gaps a spinning thread sees (irq-gap) as osnoise does:
 *   irq:irq_handler_entry/exit         device interrupts (name: "irq N NAME")
 *   irq_vectors:*_entry/_exit (x86)    the local APIC timer, IPIs (call_function,
 *                                      call_function_single, reschedule), irq_work...
 *                                      (name: the vector, e.g. "local_timer")
 *   irq:softirq_entry/exit             softirqs run on the way out of an interrupt
 *                                      (name: "softirq TIMER", ...)
 *   sched:sched_switch                 a task switch on the CPU (a marker span of
 *                                      length 0, hard = RTG_IRQ_SWITCH): the spinning
 *                                      thread was switched out, another task ran
 * Events go to a private tracefs instance (instances/rtgauge-irq-PID) restricted to
 * the CPU; an ordinary (SCHED_OTHER) reader thread drains it every 100 ms into a
 * preallocated array of spans (at most `cap`; more are counted only). Built only
 * with libtracefs; without it, or without the events, rtg_irqtrace_start says why. */
#ifndef RTG_IRQTRACE_H
#define RTG_IRQTRACE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t entry, exit;   /* CLOCK_MONOTONIC ns (trace clock mono) */
    uint16_t source;       /* index into the source names */
    uint8_t hard;          /* 1: a hard-interrupt handler; 0: a softirq; RTG_IRQ_SWITCH: a task switch */
} rtg_irq_span;
#define RTG_IRQ_SWITCH 2

typedef struct rtg_irqtrace rtg_irqtrace;

/* Start tracing the handlers of cpu; NULL with one sentence in err. note: a
 * sentence when tracefs had to be mounted (may_mount), else "". */
rtg_irqtrace *rtg_irqtrace_start(int cpu, size_t cap, bool may_mount, char *note, size_t notelen,
                                 char *err, size_t errlen);
/* Stop tracing and fold what is left in the buffer. */
void rtg_irqtrace_stop(rtg_irqtrace *t);
/* The spans in time order of their exit (one CPU); their count. */
size_t rtg_irqtrace_spans(const rtg_irqtrace *t, const rtg_irq_span **spans);
const char *rtg_irqtrace_source(const rtg_irqtrace *t, unsigned source);
unsigned rtg_irqtrace_nsources(const rtg_irqtrace *t);
uint64_t rtg_irqtrace_lost(const rtg_irqtrace *t);        /* events the kernel dropped */
uint64_t rtg_irqtrace_not_stored(const rtg_irqtrace *t);  /* spans beyond cap */
const char *rtg_irqtrace_events(const rtg_irqtrace *t);   /* the events enabled, for env */
void rtg_irqtrace_free(rtg_irqtrace *t);

#endif

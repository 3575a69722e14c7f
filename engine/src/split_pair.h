/* split_pair: the latency split's pairing of one measuring thread's trace events
 * (split.h) into ti_irq and ti_sched, apart from reading them (split.c, libtracefs),
 * so it builds everywhere and its rules are tested on event sequences
 * (tests/test_split_pair.c).
 *
 * A thread's wake-up is three events: timer:hrtimer_start of its sleep timer (its
 * clock_nanosleep arms it: softexpires = the deadline), timer:hrtimer_expire_entry of
 * that timer (the interrupt handles it), then the thread running (its sleep returns).
 * hrtimer_start carries the pid of the task current on the CPU, and the kernel arms
 * timers of its own while the measuring thread is current: the tick (tick_nohz_handler)
 * from an interrupt, the deadline server's replenishment (dl_task_timer) in the
 * scheduler. Such a timer is not the thread's sleep: taken as one, its expiry after the
 * thread ran was a second ti_irq for one wake-up, and the thread's own expiry was left
 * unmatched. So a start counts only when its function is the kernel's sleep callback
 * (hrtimer_wakeup, its address from /proc/kallsyms); each start of the thread's sleep
 * timer gives at most one ti_irq (its expiry), each expiry at most one ti_sched. */
#ifndef RTG_SPLIT_PAIR_H
#define RTG_SPLIT_PAIR_H
#include <stdbool.h>
#include <stdint.h>

#include "samples.h"

/* The kernel's callback of a sleeping task's timer (clock_nanosleep). */
#define RTG_SPLIT_SLEEP_FN "hrtimer_wakeup"

typedef struct {
    int pid;
    unsigned long long timer;      /* its sleep timer armed last */
    long long softexpires;         /* its deadline, CLOCK_MONOTONIC ns */
    unsigned long long irq_ts;     /* trace timestamp of its expiry handling; 0 = none pending */
    bool armed;                    /* armed, its expiry not yet seen */
    rtg_dist irq, sched;
} rtg_split_task;

typedef struct {
    unsigned long long sleep_fn;   /* address of RTG_SPLIT_SLEEP_FN; 0 = unknown: every timer
                                      armed in the thread's context is taken as its sleep */
    uint64_t unmatched;            /* wake-ups seen without their timer's expiry */
    uint64_t foreign;              /* starts in a thread's context of timers not its sleep */
} rtg_split_pairing;

/* 0 and t ready for events of pid, or -1 out of memory. */
int rtg_split_task_init(rtg_split_task *t, int pid);
void rtg_split_task_free(rtg_split_task *t);

/* timer:hrtimer_start in t's context: timer (address), function (its callback's
 * address), softexpires (ns). */
void rtg_split_on_start(rtg_split_pairing *p, rtg_split_task *t, unsigned long long timer,
                        unsigned long long function, long long softexpires);
/* timer:hrtimer_expire_entry at trace time ts: the task of tasks[0..n-1] whose sleep
 * timer this is gets its ti_irq (now - its deadline); returns that task or NULL. */
rtg_split_task *rtg_split_on_expire(rtg_split_task *tasks, int n, unsigned long long timer, long long now,
                                    unsigned long long ts);
/* t runs at trace time ts (its sleep returned): its ti_sched, or a wake-up unmatched. */
void rtg_split_on_run(rtg_split_pairing *p, rtg_split_task *t, unsigned long long ts);

/* The address of the kernel symbol name in a kallsyms file ("ADDR TYPE NAME" lines);
 * 0 when it is not there or its addresses are hidden (kptr_restrict). */
unsigned long long rtg_split_kernel_symbol(const char *kallsyms, const char *name);

#endif

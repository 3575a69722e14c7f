/* Unit test of the latency split's pairing (split_pair.h) on event sequences as the
 * kernel writes them. The case that made the interrupt study's split count 2,000,049
 * ti_irq for 2,000,000 wake-ups: while the measuring thread is current, the kernel
 * arms a timer of its own (the deadline server's dl_task_timer in the scheduler, the
 * tick from an interrupt), and hrtimer_start carries the thread's pid. Taken as the
 * thread's sleep, that timer's expiry after the thread ran was a second ti_irq, and
 * the thread's own expiry went unmatched. Also: the kallsyms lookup on a file of the
 * kernel's format. No privilege, no tracefs. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "split_pair.h"

#define SLEEP_FN 0xffffffff814204b0ULL    /* hrtimer_wakeup */
#define DL_FN 0xffffffff813c7a00ULL       /* dl_task_timer */
#define TICK_FN 0xffffffff81431c40ULL     /* tick_nohz_handler */
#define SLEEP_TIMER 0xffffc90000a3fe48ULL /* on the thread's kernel stack */
#define DL_TIMER 0xffff88803ec2f1e0ULL    /* in the run queue */
#define TICK_TIMER 0xffff88803ec1c8a0ULL  /* the CPU's tick */
#define PERIOD 250000LL

typedef unsigned long long ull;

/* Three wake-ups of one thread at deadlines D, D + PERIOD, D + 2 PERIOD, each handled
 * (3 + i) us late and running (5 + i) us after that. Before the first switches the
 * thread out, the scheduler arms dl_task_timer in its context, which expires after
 * the thread ran; while it runs after the second, the tick is re-armed from an
 * interrupt and expires before the thread sleeps again. */
#define D 1000000000LL
static void three_wakeups(rtg_split_pairing *p, rtg_split_task *t)
{
    long long d = D;
    rtg_split_on_start(p, t, SLEEP_TIMER, SLEEP_FN, d);
    rtg_split_on_start(p, t, DL_TIMER, DL_FN, d + 40000);
    rtg_split_on_expire(t, 1, SLEEP_TIMER, d + 3000, (ull)(d + 3100));
    rtg_split_on_run(p, t, (ull)(d + 8100));
    rtg_split_on_expire(t, 1, DL_TIMER, d + 40500, (ull)(d + 40600));
    d += PERIOD;
    rtg_split_on_start(p, t, SLEEP_TIMER, SLEEP_FN, d);
    rtg_split_on_expire(t, 1, SLEEP_TIMER, d + 4000, (ull)(d + 4100));
    rtg_split_on_run(p, t, (ull)(d + 10100));
    rtg_split_on_start(p, t, TICK_TIMER, TICK_FN, d + 20000);
    rtg_split_on_expire(t, 1, TICK_TIMER, d + 20200, (ull)(d + 20300));
    d += PERIOD;
    rtg_split_on_start(p, t, SLEEP_TIMER, SLEEP_FN, d);
    rtg_split_on_expire(t, 1, SLEEP_TIMER, d + 5000, (ull)(d + 5100));
    rtg_split_on_run(p, t, (ull)(d + 12100));
}

static void test_kernel_timers_in_thread_context(void)
{
    rtg_split_pairing p = {.sleep_fn = SLEEP_FN};
    rtg_split_task t;
    CHECK(rtg_split_task_init(&t, 4242) == 0, "task init");
    three_wakeups(&p, &t);
    CHECK_EQ_I(t.irq.count, 3);             /* one a wake-up: 4 before the kernel's timers were told apart */
    CHECK_EQ_I(t.sched.count, 3);
    CHECK_EQ_I(p.unmatched, 0);             /* 1 before */
    CHECK_EQ_I(p.foreign, 2);
    CHECK_EQ_I(t.irq.min, 3000);
    CHECK_EQ_I(t.irq.max, 5000);
    CHECK_EQ_I(t.sched.min, 5000);
    CHECK_EQ_I(t.sched.max, 7000);
    rtg_split_task_free(&t);
}

/* Where kallsyms hides the callback every start is taken, as before the fix, and
 * the split says so (env.split.sleep_timer null): the same events then give the
 * count the interrupt study saw, more ti_irq than wake-ups. */
static void test_callback_unknown(void)
{
    rtg_split_pairing p = {0};
    rtg_split_task t;
    CHECK(rtg_split_task_init(&t, 4242) == 0, "task init");
    three_wakeups(&p, &t);
    CHECK_EQ_I(p.foreign, 0);
    CHECK_EQ_I(t.irq.count, 4);
    CHECK_EQ_I(p.unmatched, 1);
    rtg_split_task_free(&t);
}

/* A start of the sleep timer after an expiry the thread did not run for (woken by
 * something else) drops that expiry's pending ti_sched; a run with its timer still
 * armed is unmatched; a second expiry of one start is not a second ti_irq. */
static void test_one_irq_a_start(void)
{
    rtg_split_pairing p = {.sleep_fn = SLEEP_FN};
    rtg_split_task t[2];
    CHECK(rtg_split_task_init(&t[0], 10) == 0 && rtg_split_task_init(&t[1], 11) == 0, "task init");
    rtg_split_on_start(&p, &t[1], SLEEP_TIMER + 0x4000, SLEEP_FN, 500);
    rtg_split_on_start(&p, &t[0], SLEEP_TIMER, SLEEP_FN, 1000);
    CHECK(rtg_split_on_expire(t, 2, SLEEP_TIMER, 1100, 1150) == &t[0], "matched by timer address");
    CHECK(rtg_split_on_expire(t, 2, SLEEP_TIMER, 1200, 1250) == NULL, "one ti_irq a start");
    rtg_split_on_start(&p, &t[0], SLEEP_TIMER, SLEEP_FN, 2000);   /* ran unseen, sleeps again */
    rtg_split_on_run(&p, &t[0], 1900);
    CHECK_EQ_I(t[0].irq.count, 1);
    CHECK_EQ_I(t[0].sched.count, 0);
    CHECK_EQ_I(p.unmatched, 1);
    CHECK_EQ_I(t[1].irq.count, 0);
    rtg_split_task_free(&t[0]);
    rtg_split_task_free(&t[1]);
}

static void test_kernel_symbol(void)
{
    char path[] = "/tmp/rtg-kallsyms-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "temporary file");
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("ffffffff813c7a00 t dl_task_timer\n"
          "ffffffff814204a0 T hrtimer_wakeup_x\n"
          "ffffffff814204b0 t hrtimer_wakeup\n"
          "ffffffffc0a01000 t hrtimer_wakeup_mod\t[some_module]\n", f);
    fclose(f);
    CHECK(rtg_split_kernel_symbol(path, RTG_SPLIT_SLEEP_FN) == SLEEP_FN, "hrtimer_wakeup found");
    CHECK(rtg_split_kernel_symbol(path, "tick_nohz_handler") == 0, "absent: 0");
    /* kptr_restrict: every address reads as zeros */
    f = fopen(path, "w");
    fputs("0000000000000000 t hrtimer_wakeup\n", f);
    fclose(f);
    CHECK(rtg_split_kernel_symbol(path, RTG_SPLIT_SLEEP_FN) == 0, "hidden address: 0");
    unlink(path);
    CHECK(rtg_split_kernel_symbol(path, RTG_SPLIT_SLEEP_FN) == 0, "no file: 0");
}

int main(void)
{
    test_kernel_timers_in_thread_context();
    test_callback_unknown();
    test_one_irq_a_start();
    test_kernel_symbol();
    return check_done();
}

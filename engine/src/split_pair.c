/* split_pair: a measuring thread's trace events paired into ti_irq and ti_sched
 * (split_pair.h says the rules). */
#include "split_pair.h"

#include <stdio.h>
#include <string.h>

int rtg_split_task_init(rtg_split_task *t, int pid)
{
    memset(t, 0, sizeof *t);
    if (rtg_dist_init(&t->irq, 0, 0) != 0)
        return -1;
    if (rtg_dist_init(&t->sched, 0, 0) != 0) {
        rtg_dist_free(&t->irq);
        return -1;
    }
    t->pid = pid;
    return 0;
}

void rtg_split_task_free(rtg_split_task *t)
{
    rtg_dist_free(&t->irq);
    rtg_dist_free(&t->sched);
}

void rtg_split_on_start(rtg_split_pairing *p, rtg_split_task *t, unsigned long long timer,
                        unsigned long long function, long long softexpires)
{
    if (p->sleep_fn && function != p->sleep_fn) {
        p->foreign++;                  /* the kernel's timer, armed while the thread was current */
        return;
    }
    t->irq_ts = 0;                     /* an expiry not followed by its run: woken by something else */
    t->timer = timer;
    t->softexpires = softexpires;
    t->armed = true;
}

rtg_split_task *rtg_split_on_expire(rtg_split_task *tasks, int n, unsigned long long timer, long long now,
                                    unsigned long long ts)
{
    for (int i = 0; i < n; i++) {
        rtg_split_task *t = &tasks[i];
        if (t->armed && t->timer == timer) {
            t->armed = false;
            t->irq_ts = ts;
            rtg_dist_add(&t->irq, now - t->softexpires);
            return t;
        }
    }
    return NULL;
}

void rtg_split_on_run(rtg_split_pairing *p, rtg_split_task *t, unsigned long long ts)
{
    if (t->irq_ts) {
        rtg_dist_add(&t->sched, (int64_t)(ts - t->irq_ts));
        t->irq_ts = 0;
    } else if (t->armed) {
        p->unmatched++;                /* ran before its timer was seen to expire */
    }
}

unsigned long long rtg_split_kernel_symbol(const char *kallsyms, const char *name)
{
    FILE *f = fopen(kallsyms, "r");
    if (!f)
        return 0;
    char line[512], sym[256];
    unsigned long long addr, found = 0;
    char type;
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%llx %c %255s", &addr, &type, sym) == 3 && strcmp(sym, name) == 0)
            found = addr;
    fclose(f);
    return found;
}

/* periodic_stall: the host-stall observer's view of a periodic run (stall.h).
 * A cycle whose span [c_k, t2] a stall touched is counted; the Ti/Ts/Tw of the
 * others are kept apart (t->clean), allocated at the first touched cycle as a
 * copy of the figures so far, so a run no stall touched costs nothing. */
#include "periodic/periodic_stall.h"

#include <stdio.h>
#include <stdlib.h>

#include "stall.h"

static int init_clean(rtg_dist *clean, const rtg_periodic_thread *t)
{
    const rtg_dist *src[3] = {&t->ti, &t->ts, &t->tw};
    for (int k = 0; k < 3; k++) {
        if (rtg_dist_init(&clean[k], src[k]->lin_bucket_ns, src[k]->lin_n) != 0) {
            for (int j = 0; j < k; j++)
                rtg_dist_free(&clean[j]);
            return -1;
        }
        rtg_dist_merge(&clean[k], src[k]);
    }
    return 0;
}

/* The host-stall observer's view of one cycle, before it is folded into t. */
void rtg_pd_stall_judge(rtg_periodic_thread *t, const rtg_cycle *c)
{
    if (rtg_stall_touches(c->deadline_ns, c->deadline_ns + c->ti + c->ts)) {
        t->stall_touched++;
        if (!t->clean) {   /* first touched cycle: the figures so far are all clean */
            t->clean = calloc(3, sizeof *t->clean);
            if (t->clean && init_clean(t->clean, t) != 0) {
                free(t->clean);
                t->clean = NULL;
            }
        }
    } else if (t->clean) {
        rtg_dist_add(&t->clean[0], c->ti);
        rtg_dist_add(&t->clean[1], c->ts);
        rtg_dist_add(&t->clean[2], c->tw);
    }
}

void rtg_pd_stall_merge(rtg_periodic_run *run)
{
    rtg_periodic_thread *a = &run->all;
    bool any_clean = false;
    for (int i = 0; i < run->nthreads; i++) {
        a->stall_touched += run->t[i].stall_touched;
        any_clean = any_clean || run->t[i].clean;
    }
    if (!any_clean)
        return;
    a->clean = calloc(3, sizeof *a->clean);
    if (!a->clean)
        return;
    for (int k = 0; k < 3; k++)
        if (rtg_dist_init(&a->clean[k], k == 0 ? a->ti.lin_bucket_ns : 0, k == 0 ? a->ti.lin_n : 0) != 0) {
            for (int j = 0; j < k; j++)
                rtg_dist_free(&a->clean[j]);
            free(a->clean);
            a->clean = NULL;
            return;
        }
    for (int i = 0; i < run->nthreads; i++) {
        const rtg_periodic_thread *t = &run->t[i];
        rtg_dist_merge(&a->clean[0], t->clean ? &t->clean[0] : &t->ti);
        rtg_dist_merge(&a->clean[1], t->clean ? &t->clean[1] : &t->ts);
        rtg_dist_merge(&a->clean[2], t->clean ? &t->clean[2] : &t->tw);
    }
}

/* env.stalls.metrics: one thread's (or the merged) cycles a stall touched. */
static void put_stall_metrics(rtg_result *res, const rtg_periodic_thread *t, const char *suffix)
{
    static const char *names[3] = {"ti", "ts", "tw"};
    const rtg_dist *all[3] = {&t->ti, &t->ts, &t->tw};
    for (int k = 0; k < 3; k++) {
        char key[64];
        snprintf(key, sizeof key, "%s%s", names[k], suffix);
        rtg_stall_put_metric(res, key, t->stall_touched, 0, t->clean ? &t->clean[k] : all[k]);
    }
}

void rtg_pd_stall_report(const rtg_periodic_run *run, rtg_result *res)
{
    put_stall_metrics(res, &run->all, "");
    for (int i = 0; i < run->nthreads; i++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "#%d", i);
        put_stall_metrics(res, &run->t[i], suffix);
    }
}

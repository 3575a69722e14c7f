/* periodic_report: a periodic run as a result's metrics and env (periodic.h:
 * rtg_periodic_report and its parts). */
#include "periodic/periodic_report.h"
#include "periodic/periodic_stall.h"

#include <stdio.h>

#include "stall.h"

void rtg_periodic_put_metrics(rtg_json *m, const rtg_periodic_thread *t, const char *prefix, const char *suffix)
{
    char key[96];
#define KEY(name) (snprintf(key, sizeof key, "%s%s%s", prefix, name, suffix), key)
    rtg_j_set(m, KEY("ti"), rtg_j_dist(&t->ti, "ns"));
    rtg_j_set(m, KEY("ts"), rtg_j_dist(&t->ts, "ns"));
    rtg_j_set(m, KEY("tw"), rtg_j_dist(&t->tw, "ns"));
    rtg_j_set(m, KEY("misses"), rtg_j_scalar_int((int64_t)t->misses, "count"));
    rtg_j_set(m, KEY("skipped"), rtg_j_scalar_int((int64_t)t->skipped, "count"));
    rtg_j_set(m, KEY("cycles"), rtg_j_scalar_int((int64_t)t->cycles, "count"));
    rtg_j_set(m, KEY("dropped"), rtg_j_scalar_int((int64_t)t->dropped, "count"));
    rtg_j_set(m, KEY("ti_window_max"), rtg_j_series(&t->ti_max, "ns"));
    const rtg_window_counts *c = &t->counts;
    if (c->cycles) {   /* the merged thread of a run that kept them (cfg.window_counts) */
        rtg_j_set(m, KEY("window_cycles"), rtg_j_series_values(c->start_ns, c->window_ns, c->cycles, c->n, "count"));
        rtg_j_set(m, KEY("ti_window_sum"), rtg_j_series_values(c->start_ns, c->window_ns, c->ti_sum, c->n, "ns"));
        rtg_j_set(m, KEY("window_misses"), rtg_j_series_values(c->start_ns, c->window_ns, c->misses, c->n, "count"));
        rtg_j_set(m, KEY("window_skipped"), rtg_j_series_values(c->start_ns, c->window_ns, c->skipped, c->n,
                                                                 "count"));
    }
#undef KEY
}

rtg_json *rtg_periodic_put_thread(rtg_json *threads, const rtg_periodic_thread *t, int index)
{
    rtg_json *j = rtg_j_push(threads, rtg_j_obj());
    rtg_j_set(j, "index", rtg_j_int(index));
    rtg_j_set(j, "cpu", rtg_j_int(t->cpu));
    rtg_j_set(j, "tid", rtg_j_int(t->tid));
    rtg_j_set(j, "policy", rtg_j_str(rtg_policy_name(t->sched.policy)));
    rtg_j_set(j, "priority", rtg_j_int(t->sched.priority));
    rtg_j_set(j, "fallback", rtg_j_bool(t->sched.fallback));
#ifdef RTG_POSIX_ONLY   /* per-thread counts (RUSAGE_THREAD) are Linux-only: unknown */
    rtg_j_set(j, "nvcsw", rtg_j_null());
    rtg_j_set(j, "nivcsw", rtg_j_null());
#else
    rtg_j_set(j, "nvcsw", rtg_j_int((int64_t)t->nvcsw));
    rtg_j_set(j, "nivcsw", rtg_j_int((int64_t)t->nivcsw));
#endif
    return j;
}

void rtg_periodic_report(const rtg_periodic_run *run, rtg_result *res)
{
    if (rtg_stall_observing())
        rtg_pd_stall_report(run, res);
    rtg_periodic_put_metrics(res->metrics, &run->all, "", "");
    for (int i = 0; i < run->nthreads; i++) {
        char suffix[16];
        snprintf(suffix, sizeof suffix, "#%d", i);
        rtg_periodic_put_metrics(res->metrics, &run->t[i], "", suffix);
    }
    rtg_json *threads = rtg_j_set(res->env, "threads", rtg_j_arr());
    for (int i = 0; i < run->nthreads; i++)
        rtg_periodic_put_thread(threads, &run->t[i], i);
    rtg_periodic_put_env(run, res->env);
}

void rtg_periodic_put_env(const rtg_periodic_run *run, rtg_json *env)
{
    if (run->period_ns > 0)
        rtg_j_set(env, "period_ns", rtg_j_int(run->period_ns));
    rtg_j_set(env, "run_start_ns", rtg_j_int(run->start_ns));
    rtg_j_set(env, "run_end_ns", rtg_j_int(run->end_ns));
}

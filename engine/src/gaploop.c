/* gaploop: the clock-reading loop that finds gaps (gaploop.h). */
#include "gaploop.h"

#include <stdlib.h>

#include "microbench.h"
#include "rt.h"
#include "samples.h"

int rtg_gaploop_alloc(rtg_gaploop *g, size_t cap)
{
    g->cap = cap;
    g->start = calloc(cap, sizeof *g->start);
    g->len = calloc(cap, sizeof *g->len);
    if (!g->start || !g->len) {
        rtg_gaploop_free(g);
        return -1;
    }
    rtg_touch(g->start, cap * sizeof *g->start);
    rtg_touch(g->len, cap * sizeof *g->len);
    return 0;
}

void rtg_gaploop_free(rtg_gaploop *g)
{
    free(g->start);
    free(g->len);
    g->start = g->len = NULL;
}

void *rtg_gaploop_main(void *arg)
{
    rtg_gaploop *g = arg;
    rtg_prefault_stack(16 * 1024);
    int64_t prev = rtg_clock_now(&g->clock);
    int64_t end = prev + g->duration_ns;
    uint64_t loops = 0;
    g->t_begin = prev;
    while (prev < end) {
        int64_t t = rtg_clock_now(&g->clock);
        if (t - prev > g->threshold_ns) {
            if (g->n < g->cap) {
                g->start[g->n] = prev;
                g->len[g->n] = t - prev;
            }
            g->n++;
        }
        prev = t;
        if ((++loops & 4095) == 0 && rtg_micro_stopping())
            break;
    }
    g->t_end = prev;
    g->loops = loops;
    return NULL;
}

size_t rtg_gaploop_stored(const rtg_gaploop *g)
{
    return g->n < g->cap ? g->n : g->cap;
}

void rtg_gaploop_report(const rtg_gaploop *g, rtg_result *res)
{
    size_t stored = rtg_gaploop_stored(g);
    rtg_samples s = {g->len, stored, stored, g->start};   /* gap i spans [start, start + len] */
    rtg_samples_report(res, "gap", &s);
    int64_t stolen = 0;
    for (size_t i = 0; i < stored; i++)
        stolen += g->len[i];
    double run = (double)(g->t_end - g->t_begin);
    rtg_json *m = res->metrics;
    rtg_j_set(m, "gaps", rtg_j_scalar_int((int64_t)g->n, "count"));
    rtg_j_set(m, "gaps_not_stored", rtg_j_scalar_int((int64_t)(g->n - stored), "count"));
    rtg_j_set(m, "stolen_fraction", rtg_j_scalar_num(run > 0 ? (double)stolen / run : 0, "ratio"));
    rtg_j_set(m, "loops", rtg_j_scalar_int((int64_t)g->loops, "count"));
    rtg_j_set(m, "run_ns", rtg_j_scalar_int((int64_t)run, "ns"));
    rtg_j_set(res->env, "run_start_ns", rtg_j_int(g->t_begin));
    rtg_j_set(res->env, "run_end_ns", rtg_j_int(g->t_end));
}

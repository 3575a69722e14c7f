/* tire solvers: partition and dispatch (see solver.h). */
#include "tire/solver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tire_solver {
    tire_state *st;
    tire_solver_kind kind;
    int nthreads;
    tire_locked *locked;
    tire_part_out *out;        /* one per thread */
    int64_t *a, *b;            /* ranges */
    int cost_every;
    tire_phase_times *phase;   /* one per thread (locked) */
};

tire_solver *tire_solver_new(tire_state *st, tire_solver_kind kind, tire_lock_kind lock,
                             int nthreads, char *err, size_t errlen)
{
    tire_solver *s = calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->st = st;
    s->kind = kind;
    s->nthreads = nthreads;
    s->out = aligned_alloc(64, sizeof(tire_part_out) * (size_t)nthreads);
    s->a = calloc((size_t)nthreads, sizeof *s->a);
    s->b = calloc((size_t)nthreads, sizeof *s->b);
    s->phase = aligned_alloc(64, sizeof(tire_phase_times) * (size_t)nthreads);
    if (!s->out || !s->a || !s->b || !s->phase)
        goto oom;
    memset(s->phase, 0, sizeof(tire_phase_times) * (size_t)nthreads);
    bool locked = kind == TIRE_SOLVER_LOCKED || kind == TIRE_SOLVER_PAPER;
    for (int t = 0; locked && t < nthreads; t++)
        for (int c = 0; c < 4; c++)
            if (!(s->phase[t].kept[c] = calloc(TIRE_PHASE_KEEP, sizeof(int64_t))))
                goto oom;
    for (int t = 0; t < nthreads; t++) {
        tire_range(st->p.n, nthreads, t, &s->a[t], &s->b[t]);
        s->out[t].contact = 0;
        s->out[t].ysum = 0.0;
    }
    if (locked && !(s->locked = tire_locked_new(st, lock, nthreads)))
        goto oom;
    return s;
oom:
    snprintf(err, errlen, "out of memory preparing the tire solver for %lld masses; use fewer --masses.",
             (long long)st->p.n);
    tire_solver_free(s);
    return NULL;
}

void tire_solver_free(tire_solver *s)
{
    if (!s)
        return;
    tire_locked_free(s->locked);
    free(s->out);
    free(s->a);
    free(s->b);
    for (int t = 0; s->phase && t < s->nthreads; t++)
        for (int c = 0; c < 4; c++)
            free(s->phase[t].kept[c]);
    free(s->phase);
    free(s);
}

void tire_solver_part(tire_solver *s, int t, bool centroid)
{
    tire_part_out *o = &s->out[t];
    if (s->kind == TIRE_SOLVER_LOCKED) {
        bool timed = s->cost_every > 0 && s->st->step % (uint64_t)s->cost_every == 0;
        o->contact = tire_locked_part(s->locked, t, s->a[t], s->b[t], centroid, &o->ysum,
                                      timed ? &s->phase[t] : NULL, false);
    }
    else if (s->kind == TIRE_SOLVER_PAPER)
        tire_solver_part_inplace(s, t, s->st->step);
    else
        o->contact = tire_fast_part(s->st, s->a[t], s->b[t], centroid, &o->ysum);
}

void tire_solver_part_inplace(tire_solver *s, int t, uint64_t step)
{
    tire_part_out *o = &s->out[t];
    bool timed = s->cost_every > 0 && step % (uint64_t)s->cost_every == 0;
    o->contact = tire_locked_part(s->locked, t, s->a[t], s->b[t], false, &o->ysum,
                                  timed ? &s->phase[t] : NULL, true);
}

tire_part_out *tire_solver_out(tire_solver *s, int t) { return &s->out[t]; }
tire_state *tire_solver_state(tire_solver *s) { return s->st; }

void tire_solver_set_cost_every(tire_solver *s, int every) { s->cost_every = every; }

tire_phase_times *tire_solver_phase_times(tire_solver *s, int t)
{
    return s->kind != TIRE_SOLVER_FAST ? &s->phase[t] : NULL;
}

int64_t tire_solver_lock_ops(const tire_solver *s)
{
    if (s->kind == TIRE_SOLVER_FAST)
        return 0;
    int64_t ops = 0;
    for (int t = 0; t < s->nthreads; t++) {
        int64_t e = s->b[t] - s->a[t];
        ops += e > 0 ? 6 * e + 4 : 0;
    }
    return ops;
}

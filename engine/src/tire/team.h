/* tire team: the solver threads of one run. The calling thread (the periodic
 * driver's thread, or the main thread in realfast mode) runs share 0 of each
 * step and releases k-1 pinned workers at the same policy and priority for the
 * others, then waits until all are done: Ts is the whole parallel step. Waits
 * spin briefly, then block on a futex (never spin long: with more threads than
 * CPUs a spinning FIFO thread would starve the one it waits for). */
#ifndef RTG_TIRE_TEAM_H
#define RTG_TIRE_TEAM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"
#include "tire/solver.h"

typedef struct {
    int nthreads;
    const int *cpus;           /* cpu of thread t (-1: not pinned); [0] is the caller's */
    rtg_policy policy;
    int priority;
    bool allow_fallback;
} tire_team_cfg;

typedef struct tire_team tire_team;

/* Start the workers (threads 1..k-1). NULL with a sentence in err. */
tire_team *tire_team_start(tire_solver *s, const tire_team_cfg *cfg, char *err, size_t errlen);
/* One whole step; advances the state. Returns 1 when some node touched the
 * floor; with centroid, *centroid_y is the mean height after the step. */
int tire_team_step(tire_team *tm, bool centroid, double *centroid_y);
/* Stop and join the workers; adds their context switches over the run. */
void tire_team_stop(tire_team *tm, uint64_t *nvcsw, uint64_t *nivcsw);
/* The same, giving each worker's own counts in nvcsw[t], nivcsw[t] (t >= 1). */
void tire_team_stop_each(tire_team *tm, uint64_t *nvcsw, uint64_t *nivcsw);
/* What worker t obtained (t >= 1). */
const rtg_sched *tire_team_sched(const tire_team *tm, int t);

#endif

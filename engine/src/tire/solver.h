/* tire solvers: compute one thread's share of a step (state.step -> step + 1).
 * Both split the nodes into equal contiguous groups, thread t owning
 * [t n / k, (t + 1) n / k), read only the previous state and write only the
 * next, so all k shares of a step may run at once and the result is the same
 * for every k and for both solvers (model.h).
 *   locked: the published algorithm. Each thread copies the nodes it needs (its
 *           own, the two beyond its ends, the opposite ones) into thread-local
 *           arrays, each under that node's lock (mutex, semaphore or spin lock),
 *           computes the 2 e + 1 spring forces of its nodes (springs across a
 *           group boundary are computed by both threads), then integrates its
 *           e nodes (two phases, as published), and writes its nodes
 *           back, each under its lock: 6 e + 4 lock operations per step.
 *   fast:   structure of arrays in place, no locks, vectorisable loops.
 *   paper:  the published structure as published: the same per-node locks and
 *           phases as locked, but one state updated in place (a thread reads its
 *           neighbours' nodes as they are when it reads them, from this step or
 *           the last) and no barrier: each thread steps on its own period (or back
 *           to back, real-fast); the threads meet only at the node locks. Not
 *           deterministic, by design (docs/tire.md "The paper's solver"). */
#ifndef RTG_TIRE_SOLVER_H
#define RTG_TIRE_SOLVER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tire/model.h"

typedef enum { TIRE_SOLVER_LOCKED, TIRE_SOLVER_FAST, TIRE_SOLVER_PAPER } tire_solver_kind;
typedef enum { TIRE_LOCK_MUTEX, TIRE_LOCK_SEM, TIRE_LOCK_SPIN } tire_lock_kind;

/* What one share of a step reports (one cache line per thread). */
typedef struct {
    _Alignas(64) int contact;  /* some node of the share touched the floor */
    double ysum;               /* sum of the share's heights (centroid steps only) */
} tire_part_out;

typedef struct tire_solver tire_solver;

/* The cost-equation phases of one thread's share, summed over the sampled steps
 * (locked solver; see docs/tire.md "Cost equation"): read = copying the needed
 * nodes in under their locks, spring = the 2e + 1 spring forces, mass = the e
 * integrations with the floor, write = writing the nodes back under their locks.
 * Written only by the thread that owns the share. */
#define TIRE_PHASE_KEEP 1024   /* sampled steps whose phase times are kept one by one */
typedef struct {
    _Alignas(64) uint64_t samples;
    int64_t read_ns, spring_ns, mass_ns, write_ns;
    int64_t *kept[4];          /* read, spring, mass, write of the first TIRE_PHASE_KEEP samples */
} tire_phase_times;

/* A solver for nthreads shares of st. NULL with a sentence in err. */
tire_solver *tire_solver_new(tire_state *st, tire_solver_kind kind, tire_lock_kind lock,
                             int nthreads, char *err, size_t errlen);
void tire_solver_free(tire_solver *s);
/* Thread t's share of the step; with centroid, also the sum of its new heights. */
void tire_solver_part(tire_solver *s, int t, bool centroid);
/* paper: thread t's own step number `step`, in place (no barrier, st->step untouched). */
void tire_solver_part_inplace(tire_solver *s, int t, uint64_t step);
tire_part_out *tire_solver_out(tire_solver *s, int t);
/* Lock operations (acquire or release) per step, all threads: 0 for fast. */
int64_t tire_solver_lock_ops(const tire_solver *s);
tire_state *tire_solver_state(tire_solver *s);
/* Time the phases of every `every`-th step (step % every == 0; 0: never). */
void tire_solver_set_cost_every(tire_solver *s, int every);
/* Thread t's phase times, or NULL for the fast solver (no phases timed);
 * the kept samples may be sorted by the reader after the run. */
tire_phase_times *tire_solver_phase_times(tire_solver *s, int t);

/* fast share (solver_fast.c) */
int tire_fast_part(tire_state *st, int64_t a, int64_t b, bool centroid, double *ysum);

/* locked solver internals (solver_locked.c) */
typedef struct tire_locked tire_locked;
tire_locked *tire_locked_new(tire_state *st, tire_lock_kind lock, int nthreads);
void tire_locked_free(tire_locked *l);
/* With pt, the phases of this share are timed and added to *pt. inplace: read and
 * write the current state (the paper's solver) instead of writing the next. */
int tire_locked_part(tire_locked *l, int t, int64_t a, int64_t b, bool centroid, double *ysum,
                     tire_phase_times *pt, bool inplace);

#endif

/* locked solver: the published algorithm, made deterministic by reading the
 * previous state and writing the next (see solver.h). The per-node locks are
 * kept although the double buffer would make them unnecessary: their traffic
 * (and the contention on nodes read by two threads) is what makes this solver
 * an operating-system benchmark. */
#include "tire/solver.h"

#include "clock.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

typedef union {
    pthread_mutex_t mutex;
    sem_t sem;
    pthread_spinlock_t spin;
} node_lock;

/* Thread-local copies: `near` holds nodes a-1 .. b (own nodes and the two
 * beyond the ends), `opp` the opposite of each own node, `out` the new state;
 * `ring` the force of each of the e + 1 ring springs on its left node, `oppf`
 * the force of each opposite spring on the own node (x, y). */
typedef struct {
    double *near[4], *opp[4], *out[4];
    double *ring[2], *oppf[2];
    int64_t cap;
} local_bufs;

struct tire_locked {
    tire_state *st;
    tire_lock_kind kind;
    node_lock *locks;
    int nthreads;
    local_bufs *bufs;
};

static void lock_node(tire_locked *l, int64_t i)
{
    switch (l->kind) {
    case TIRE_LOCK_MUTEX: pthread_mutex_lock(&l->locks[i].mutex); break;
    case TIRE_LOCK_SEM:
        while (sem_wait(&l->locks[i].sem) != 0)
            ;   /* EINTR only */
        break;
    case TIRE_LOCK_SPIN: pthread_spin_lock(&l->locks[i].spin); break;
    }
}

static void unlock_node(tire_locked *l, int64_t i)
{
    switch (l->kind) {
    case TIRE_LOCK_MUTEX: pthread_mutex_unlock(&l->locks[i].mutex); break;
    case TIRE_LOCK_SEM: sem_post(&l->locks[i].sem); break;
    case TIRE_LOCK_SPIN: pthread_spin_unlock(&l->locks[i].spin); break;
    }
}

static void *alloc_touched(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (p)
        memset(p, 0, (bytes + 63) & ~(size_t)63);
    return p;
}

static void free_bufs(local_bufs *b)
{
    for (int c = 0; c < 4; c++) {
        free(b->near[c]);
        free(b->opp[c]);
        free(b->out[c]);
    }
    for (int c = 0; c < 2; c++) {
        free(b->ring[c]);
        free(b->oppf[c]);
    }
}

static int alloc_bufs(local_bufs *b, int64_t e)
{
    memset(b, 0, sizeof *b);
    b->cap = e;
    for (int c = 0; c < 4; c++) {
        b->near[c] = alloc_touched((size_t)(e + 2) * sizeof(double));
        b->opp[c] = alloc_touched((size_t)(e + 1) * sizeof(double));
        b->out[c] = alloc_touched((size_t)(e + 1) * sizeof(double));
        if (!b->near[c] || !b->opp[c] || !b->out[c])
            return -1;
    }
    for (int c = 0; c < 2; c++) {
        b->ring[c] = alloc_touched((size_t)(e + 1) * sizeof(double));
        b->oppf[c] = alloc_touched((size_t)(e + 1) * sizeof(double));
        if (!b->ring[c] || !b->oppf[c])
            return -1;
    }
    return 0;
}

void tire_locked_free(tire_locked *l)
{
    if (!l)
        return;
    if (l->locks)
        for (int64_t i = 0; i < l->st->p.n; i++) {
            if (l->kind == TIRE_LOCK_MUTEX)
                pthread_mutex_destroy(&l->locks[i].mutex);
            else if (l->kind == TIRE_LOCK_SEM)
                sem_destroy(&l->locks[i].sem);
            else
                pthread_spin_destroy(&l->locks[i].spin);
        }
    free(l->locks);
    if (l->bufs)
        for (int t = 0; t < l->nthreads; t++)
            free_bufs(&l->bufs[t]);
    free(l->bufs);
    free(l);
}

tire_locked *tire_locked_new(tire_state *st, tire_lock_kind kind, int nthreads)
{
    tire_locked *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->st = st;
    l->kind = kind;
    l->nthreads = nthreads;
    int64_t n = st->p.n;
    l->locks = alloc_touched((size_t)n * sizeof(node_lock));
    l->bufs = calloc((size_t)nthreads, sizeof *l->bufs);
    if (!l->locks || !l->bufs) {
        tire_locked_free(l);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        if (kind == TIRE_LOCK_MUTEX)
            pthread_mutex_init(&l->locks[i].mutex, NULL);
        else if (kind == TIRE_LOCK_SEM)
            sem_init(&l->locks[i].sem, 0, 1);
        else
            pthread_spin_init(&l->locks[i].spin, PTHREAD_PROCESS_PRIVATE);
    }
    for (int t = 0; t < nthreads; t++) {
        int64_t a, b;
        tire_range(n, nthreads, t, &a, &b);
        if (alloc_bufs(&l->bufs[t], b - a) != 0) {
            l->nthreads = t + 1;
            tire_locked_free(l);
            return NULL;
        }
    }
    return l;
}

/* Copy node i of the current state into slot j of a local buffer, under its lock. */
static void read_node(tire_locked *l, const tire_soa *c, int64_t i, double *const dst[4], int64_t j)
{
    lock_node(l, i);
    dst[0][j] = c->x[i];
    dst[1][j] = c->y[i];
    dst[2][j] = c->vx[i];
    dst[3][j] = c->vy[i];
    unlock_node(l, i);
}

static void write_node(tire_locked *l, tire_soa *nx, int64_t i, double *const src[4], int64_t j)
{
    lock_node(l, i);
    nx->x[i] = src[0][j];
    nx->y[i] = src[1][j];
    nx->vx[i] = src[2][j];
    nx->vy[i] = src[3][j];
    unlock_node(l, i);
}

/* Force of the spring-damper from node j on node i, alone (tire_spring from zero). */
static inline void spring_force(double xi, double yi, double vxi, double vyi, double xj, double yj,
                                double vxj, double vyj, double l0, double k, double c, double *fx,
                                double *fy)
{
    double f0x = 0.0, f0y = 0.0;
    tire_spring(xi, yi, vxi, vyi, xj, yj, vxj, vyj, tire_len(xi, yi, xj, yj), l0, k, c, &f0x, &f0y);
    *fx = f0x;
    *fy = f0y;
}

/* The two compute phases of the published algorithm, from the local copies.
 * Spring phase: the e + 1 ring springs (near[s] -- near[s + 1]) and the e
 * opposite springs, each computed once. Mass phase: each own node sums its three
 * forces in the fixed order left, right, opposite and integrates. The left
 * force is minus the ring spring's force on its left node, which is the same
 * bits as computing it from the node's side (tire_spring is antisymmetric bit
 * for bit, model.h), so the result equals tire_update's (docs/tire.md). */
static void spring_phase(const tire_params *p, local_bufs *lb, int64_t e)
{
    double **q = lb->near, **o = lb->opp;
    for (int64_t s = 0; s <= e; s++)
        spring_force(q[0][s], q[1][s], q[2][s], q[3][s], q[0][s + 1], q[1][s + 1], q[2][s + 1],
                     q[3][s + 1], p->l_ring, p->k_ring, p->c_ring, &lb->ring[0][s], &lb->ring[1][s]);
    for (int64_t j = 0; j < e; j++)
        spring_force(q[0][j + 1], q[1][j + 1], q[2][j + 1], q[3][j + 1], o[0][j], o[1][j], o[2][j],
                     o[3][j], p->l_opp, p->k_opp, p->c_opp, &lb->oppf[0][j], &lb->oppf[1][j]);
}

static int mass_phase(const tire_params *p, local_bufs *lb, int64_t e)
{
    double **q = lb->near, **w = lb->out;
    int touch = 0;
    for (int64_t j = 0; j < e; j++) {
        double fx = 0.0, fy = 0.0;
        fx = fx + -lb->ring[0][j];
        fy = fy + -lb->ring[1][j];
        fx = fx + lb->ring[0][j + 1];
        fy = fy + lb->ring[1][j + 1];
        fx = fx + lb->oppf[0][j];
        fy = fy + lb->oppf[1][j];
        touch |= tire_integrate(p, q[0][j + 1], q[1][j + 1], q[2][j + 1], q[3][j + 1], fx, fy,
                                &w[0][j], &w[1][j], &w[2][j], &w[3][j]);
    }
    return touch;
}

int tire_locked_part(tire_locked *l, int t, int64_t a, int64_t b, bool centroid, double *ysum,
                     tire_phase_times *pt, bool inplace)
{
    tire_state *st = l->st;
    const tire_params *p = &st->p;
    const tire_soa *c = tire_cur(st);
    tire_soa *nx = inplace ? &st->s[st->step & 1] : tire_next(st);
    local_bufs *lb = &l->bufs[t];
    int64_t n = p->n, e = b - a;
    if (e <= 0)
        return 0;
    /* Timed steps read the clock at the five phase boundaries (vDSO, no system
     * call); the others do not read it at all. */
    int64_t t0 = pt ? rtg_mono_ns() : 0;
    /* (1) read what this group needs, each node under its lock */
    for (int64_t j = 0; j < e + 2; j++)
        read_node(l, c, (a - 1 + j + n) % n, lb->near, j);
    for (int64_t j = 0; j < e; j++)
        read_node(l, c, tire_opp(n, a + j), lb->opp, j);
    int64_t t1 = pt ? rtg_mono_ns() : 0;
    /* (2) the spring forces, (3) the integration of the masses */
    spring_phase(p, lb, e);
    int64_t t2 = pt ? rtg_mono_ns() : 0;
    int touch = mass_phase(p, lb, e);
    int64_t t3 = pt ? rtg_mono_ns() : 0;
    /* (4) write own nodes back, each under its lock */
    double **w = lb->out;
    for (int64_t j = 0; j < e; j++)
        write_node(l, nx, a + j, lb->out, j);
    if (pt) {
        int64_t t4 = rtg_mono_ns();
        if (pt->samples < TIRE_PHASE_KEEP) {
            pt->kept[0][pt->samples] = t1 - t0;
            pt->kept[1][pt->samples] = t2 - t1;
            pt->kept[2][pt->samples] = t3 - t2;
            pt->kept[3][pt->samples] = t4 - t3;
        }
        pt->samples++;
        pt->read_ns += t1 - t0;
        pt->spring_ns += t2 - t1;
        pt->mass_ns += t3 - t2;
        pt->write_ns += t4 - t3;
    }
    if (centroid) {
        double sum = 0.0;
        for (int64_t j = 0; j < e; j++)
            sum += w[1][j];
        *ysum = sum;
    }
    return touch;
}

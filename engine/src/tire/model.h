/* tire model: a 2-D ring of n point masses (n a multiple of 4), each joined by a
 * spring-damper to its two ring neighbours and to the opposite node i + n/2
 * (1.5 n springs), falling under gravity onto a floor at y = 0, integrated with
 * symplectic Euler at a fixed step dt. docs/tire.md gives the parameters and the
 * stability argument.
 *
 * Determinism: every solver updates node i with tire_node() below, reading only
 * the previous state (one buffer) and writing the next (the other), so the next
 * state does not depend on how nodes are split among threads or on the solver.
 * The force on a node is summed in a fixed order (left, right, opposite); the
 * tire files are compiled without FP contraction (no FMA fusing), so scalar and
 * vector code give the same bits. */
#ifndef RTG_TIRE_MODEL_H
#define RTG_TIRE_MODEL_H

/* Every file of the tire includes this first: no FMA fusing, so scalar and
 * vector code (and every instruction set) round alike. */
#ifdef __clang__
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off", "no-trapping-math")
#endif

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t n;             /* masses, a multiple of 4 */
    double dt;             /* time step, s */
    double radius;         /* ring radius at rest, m */
    double drop;           /* gap between the lowest node and the floor at t = 0, m */
    double gravity;        /* m/s^2, acts along -y */
    double total_mass;     /* kg */
    double m;              /* node mass = total_mass / n */
    double k_ring, c_ring; /* neighbour springs: N/m, N s/m (k/m and c/m fixed) */
    double k_opp, c_opp;   /* opposite springs */
    double l_ring, l_opp;  /* rest lengths, m */
} tire_params;

/* Per unit node mass (s^-2, s^-1): fixed for every n, so every mode's
 * frequency is bounded independently of n (docs/tire.md). */
#define TIRE_MIN_LEN 1e-300
#define TIRE_KAPPA_RING 1000.0
#define TIRE_KAPPA_OPP 1000.0
#define TIRE_GAMMA_RING 2.0
#define TIRE_GAMMA_OPP 2.0
/* Ring springs are 5 % shorter than the initial chords (the tire is
 * "inflated"); the opposite springs' rest length balances that tension, so the
 * initial shape is an equilibrium and the prestress gives the ring stiffness
 * against its mechanisms (a 1.5 n-spring ring is otherwise under-constrained). */
#define TIRE_PRESTRAIN 0.05
#define TIRE_TOTAL_MASS 10.0

/* Structure of arrays: one array per coordinate, 64-byte aligned. */
typedef struct {
    double *x, *y, *vx, *vy;
} tire_soa;

typedef struct {
    tire_params p;
    tire_soa s[2];         /* s[step & 1] holds the state after `step` steps */
    uint64_t step;
} tire_state;

/* Fill p for n masses; returns 0, or -1 when n is not a multiple of 4 >= 4. */
int tire_params_init(tire_params *p, int64_t n, double dt, double radius, double drop,
                     double gravity);
/* Allocate (touched) buffers and set the initial state: ring at rest, centre at
 * height radius + drop, node 0 at the bottom. Returns 0 or -1 (out of memory). */
int tire_state_init(tire_state *st, const tire_params *p);
void tire_state_free(tire_state *st);
static inline const tire_soa *tire_cur(const tire_state *st) { return &st->s[st->step & 1]; }
static inline tire_soa *tire_next(tire_state *st) { return &st->s[(st->step + 1) & 1]; }

/* Nodes [*a, *b) of thread t of k: the model's split into equal contiguous groups,
 * which every solver uses and which the next state does not depend on. */
static inline void tire_range(int64_t n, int k, int t, int64_t *a, int64_t *b)
{
    *a = n * t / k;
    *b = n * (t + 1) / k;
}

/* Opposite node of i. */
static inline int64_t tire_opp(int64_t n, int64_t i) { return i < n / 2 ? i + n / 2 : i - n / 2; }

/* Length of a spring from i to j (the one square root of a spring). */
static inline double tire_len(double xi, double yi, double xj, double yj)
{
    double dx = xj - xi, dy = yj - yi;
    return sqrt(dx * dx + dy * dy);
}

/* Force on node i from the spring-damper to node j of length len, added to
 * (*fx, *fy). Newton's third law holds bit for bit: the j->i call gives exactly
 * minus this. */
static inline void tire_spring(double xi, double yi, double vxi, double vyi, double xj, double yj,
                               double vxj, double vyj, double len, double l0, double k, double c,
                               double *fx, double *fy)
{
    double dx = xj - xi, dy = yj - yi;
    /* Collapsed nodes can meet (two nodes stuck to the floor at one point):
     * adding a length far below rounding makes the direction zero there instead
     * of 0/0, leaves every other length unchanged, and needs no branch (a
     * conditional division would keep the loop from vectorising). */
    double inv = 1.0 / (len + TIRE_MIN_LEN);
    double ux = dx * inv, uy = dy * inv;
    double vrel = (vxj - vxi) * ux + (vyj - vyi) * uy;
    double f = k * (len - l0) + c * vrel;
    *fx = *fx + f * ux;
    *fy = *fy + f * uy;
}

/* The mass phase of one node: symplectic Euler from the node's state and the
 * sum of its spring forces (fx, fy), then the floor constraint, branch-free (same
 * cost every step): a node at or below the floor is put on it, its downward
 * velocity removed and its tangential velocity stopped (a sticking floor).
 * Returns 1 when the node touches the floor. */
static inline int tire_integrate(const tire_params *p, double xi, double yi, double vxi, double vyi,
                                 double fx, double fy, double *nx, double *ny, double *nvx, double *nvy)
{
    double inv_m = 1.0 / p->m, dt = p->dt;
    double vxn = vxi + dt * (fx * inv_m);
    double vyn = vyi + dt * (fy * inv_m - p->gravity);
    double xn = xi + dt * vxn;
    double yn = yi + dt * vyn;
    int touch = yn <= 0.0;
    *nx = xn;
    *ny = touch ? 0.0 : yn;
    *nvx = touch ? 0.0 : vxn;
    *nvy = (touch & (vyn < 0.0)) ? 0.0 : vyn;
    return touch;
}

/* One symplectic Euler step of a node from its own state (i) and that of its
 * left (l), right (r) and opposite (o) nodes, all from the previous step, given
 * the three spring lengths (tire_len). Contact with the floor is a geometric
 * constraint applied branch-free (same cost every step): a node at or below the
 * floor is put on it, its downward velocity removed and its tangential velocity
 * stopped (a sticking floor). Returns 1 when the node touches the floor. */
static inline int tire_update_len(const tire_params *p, double xi, double yi, double vxi, double vyi,
                                  double xl, double yl, double vxl, double vyl,
                                  double xr, double yr, double vxr, double vyr,
                                  double xo, double yo, double vxo, double vyo,
                                  double len_l, double len_r, double len_o,
                                  double *nx, double *ny, double *nvx, double *nvy)
{
    double fx = 0.0, fy = 0.0;
    tire_spring(xi, yi, vxi, vyi, xl, yl, vxl, vyl, len_l, p->l_ring, p->k_ring, p->c_ring, &fx, &fy);
    tire_spring(xi, yi, vxi, vyi, xr, yr, vxr, vyr, len_r, p->l_ring, p->k_ring, p->c_ring, &fx, &fy);
    tire_spring(xi, yi, vxi, vyi, xo, yo, vxo, vyo, len_o, p->l_opp, p->k_opp, p->c_opp, &fx, &fy);
    return tire_integrate(p, xi, yi, vxi, vyi, fx, fy, nx, ny, nvx, nvy);
}

/* tire_update_len with the lengths computed here. */
static inline int tire_update(const tire_params *p, double xi, double yi, double vxi, double vyi,
                              double xl, double yl, double vxl, double vyl,
                              double xr, double yr, double vxr, double vyr,
                              double xo, double yo, double vxo, double vyo,
                              double *nx, double *ny, double *nvx, double *nvy)
{
    return tire_update_len(p, xi, yi, vxi, vyi, xl, yl, vxl, vyl, xr, yr, vxr, vyr, xo, yo, vxo, vyo,
                           tire_len(xi, yi, xl, yl), tire_len(xi, yi, xr, yr), tire_len(xi, yi, xo, yo),
                           nx, ny, nvx, nvy);
}

/* tire_update of node i of a structure of arrays, neighbours l, r, o. */
static inline int tire_node(const tire_params *p, const double *restrict x, const double *restrict y,
                            const double *restrict vx, const double *restrict vy, int64_t i,
                            int64_t l, int64_t r, int64_t o, double *restrict nx,
                            double *restrict ny, double *restrict nvx, double *restrict nvy)
{
    return tire_update(p, x[i], y[i], vx[i], vy[i], x[l], y[l], vx[l], vy[l], x[r], y[r], vx[r],
                       vy[r], x[o], y[o], vx[o], vy[o], &nx[i], &ny[i], &nvx[i], &nvy[i]);
}

/* ---- diagnostics (after or outside the timed steps) ---- */

/* FNV-1a 64 over (x, y, vx, vy) of every node in index order, as 16 hex digits. */
void tire_checksum(const tire_state *st, char hex[17]);
/* Kinetic + gravitational (floor = 0) + spring potential energy, J. */
double tire_energy(const tire_state *st);
/* Mean height of the nodes, m. */
double tire_centroid_y(const tire_state *st);
/* Counts of non-finite values and of nodes below the floor. */
void tire_scan(const tire_state *st, int64_t *nonfinite, int64_t *below);

#endif

/* tire model: parameters, initial state and diagnostics (see model.h). */
#include "tire/model.h"

#include <stdlib.h>
#include <string.h>

int tire_params_init(tire_params *p, int64_t n, double dt, double radius, double drop,
                     double gravity)
{
    if (n < 4 || n % 4 != 0)
        return -1;
    memset(p, 0, sizeof *p);
    p->n = n;
    p->dt = dt;
    p->radius = radius;
    p->drop = drop;
    p->gravity = gravity;
    p->total_mass = TIRE_TOTAL_MASS;
    p->m = TIRE_TOTAL_MASS / (double)n;
    p->k_ring = TIRE_KAPPA_RING * p->m;
    p->c_ring = TIRE_GAMMA_RING * p->m;
    p->k_opp = TIRE_KAPPA_OPP * p->m;
    p->c_opp = TIRE_GAMMA_OPP * p->m;
    double s = sin(M_PI / (double)n);
    double chord = 2.0 * radius * s;
    p->l_ring = (1.0 - TIRE_PRESTRAIN) * chord;
    /* Two ring tensions T pull a node inward with 2 T sin(pi/n); the opposite
     * spring, compressed, pushes it out with k_opp (l_opp - 2R). */
    double tension = p->k_ring * (chord - p->l_ring);
    p->l_opp = 2.0 * radius + 2.0 * tension * s / p->k_opp;
    return 0;
}

static double *alloc_array(int64_t n)
{
    size_t bytes = ((size_t)n * sizeof(double) + 63) & ~(size_t)63;
    double *a = aligned_alloc(64, bytes);
    if (a)
        memset(a, 0, bytes);    /* touch every page before the run */
    return a;
}

void tire_state_free(tire_state *st)
{
    for (int b = 0; b < 2; b++) {
        free(st->s[b].x);
        free(st->s[b].y);
        free(st->s[b].vx);
        free(st->s[b].vy);
    }
    memset(st, 0, sizeof *st);
}

int tire_state_init(tire_state *st, const tire_params *p)
{
    memset(st, 0, sizeof *st);
    st->p = *p;
    for (int b = 0; b < 2; b++) {
        tire_soa *s = &st->s[b];
        s->x = alloc_array(p->n);
        s->y = alloc_array(p->n);
        s->vx = alloc_array(p->n);
        s->vy = alloc_array(p->n);
        if (!s->x || !s->y || !s->vx || !s->vy) {
            tire_state_free(st);
            return -1;
        }
    }
    double cy = p->radius + p->drop;
    for (int64_t i = 0; i < p->n; i++) {
        double a = 2.0 * M_PI * (double)i / (double)p->n - M_PI / 2.0;
        st->s[0].x[i] = p->radius * cos(a);
        st->s[0].y[i] = cy + p->radius * sin(a);
    }
    /* node 0 is exactly at the stated drop height */
    st->s[0].y[0] = p->drop;
    st->step = 0;
    return 0;
}

void tire_checksum(const tire_state *st, char hex[17])
{
    const tire_soa *s = tire_cur(st);
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < st->p.n; i++) {
        double v[4] = {s->x[i], s->y[i], s->vx[i], s->vy[i]};
        const unsigned char *b = (const unsigned char *)v;
        for (size_t k = 0; k < sizeof v; k++) {
            h ^= b[k];
            h *= 0x100000001b3ull;
        }
    }
    static const char digits[] = "0123456789abcdef";
    for (int k = 0; k < 16; k++)
        hex[k] = digits[(h >> (60 - 4 * k)) & 0xf];
    hex[16] = '\0';
}

static double spring_energy(double k, double l0, double dx, double dy)
{
    double e = sqrt(dx * dx + dy * dy) - l0;
    return 0.5 * k * e * e;
}

double tire_energy(const tire_state *st)
{
    const tire_params *p = &st->p;
    const tire_soa *s = tire_cur(st);
    int64_t n = p->n;
    double e = 0.0;
    for (int64_t i = 0; i < n; i++) {
        e += 0.5 * p->m * (s->vx[i] * s->vx[i] + s->vy[i] * s->vy[i]);
        e += p->m * p->gravity * s->y[i];
        int64_t r = (i + 1) % n;
        e += spring_energy(p->k_ring, p->l_ring, s->x[r] - s->x[i], s->y[r] - s->y[i]);
        if (i < n / 2) {
            int64_t o = i + n / 2;
            e += spring_energy(p->k_opp, p->l_opp, s->x[o] - s->x[i], s->y[o] - s->y[i]);
        }
    }
    return e;
}

double tire_centroid_y(const tire_state *st)
{
    const tire_soa *s = tire_cur(st);
    double sum = 0.0;
    for (int64_t i = 0; i < st->p.n; i++)
        sum += s->y[i];
    return sum / (double)st->p.n;
}

void tire_scan(const tire_state *st, int64_t *nonfinite, int64_t *below)
{
    const tire_soa *s = tire_cur(st);
    int64_t bad = 0, under = 0;
    for (int64_t i = 0; i < st->p.n; i++) {
        bad += !isfinite(s->x[i]) + !isfinite(s->y[i]) + !isfinite(s->vx[i]) + !isfinite(s->vy[i]);
        under += s->y[i] < 0.0;
    }
    *nonfinite = bad;
    *below = under;
}

/* fast solver: a thread's share of a step over the structure of arrays, no
 * locks. The share is cut into runs where the neighbours are i-1, i+1 and the
 * opposite node is i +- n/2 without wrapping (nodes 0 and n-1, whose neighbours
 * wrap, are done one by one with the same arithmetic). Each run goes in tiles
 * that stay in L1: the squared spring lengths, their square roots (explicit
 * SIMD: a libm sqrt may set errno, which stops the compiler vectorising), then
 * forces and integration. The two loops without sqrt are compiled for AVX2 and
 * AVX-512 as well, chosen at load time; contraction is off (model.h), so every
 * variant gives the bits of the scalar tire_update(). */
#include "tire/solver.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define TIRE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define TIRE_X86 1
#else
#define TIRE_CLONES
#define TIRE_X86 0
#endif

#define TILE 256

typedef struct {
    double l[TILE], r[TILE], o[TILE];
} tile_len;

TIRE_CLONES
static void squared_lengths(const double *restrict x, const double *restrict y, int64_t i0, int64_t m,
                            int64_t off, tile_len *restrict d2)
{
    for (int64_t j = 0; j < m; j++) {
        int64_t i = i0 + j;
        double dx = x[i - 1] - x[i], dy = y[i - 1] - y[i];
        d2->l[j] = dx * dx + dy * dy;
        dx = x[i + 1] - x[i], dy = y[i + 1] - y[i];
        d2->r[j] = dx * dx + dy * dy;
        dx = x[i + off] - x[i], dy = y[i + off] - y[i];
        d2->o[j] = dx * dx + dy * dy;
    }
}

#if TIRE_X86
__attribute__((target("avx"))) static void sqrt_avx(const double *in, double *out, int64_t m)
{
    int64_t j = 0;
    for (; j + 4 <= m; j += 4)
        _mm256_storeu_pd(out + j, _mm256_sqrt_pd(_mm256_loadu_pd(in + j)));
    for (; j < m; j++)
        _mm_store_sd(out + j, _mm_sqrt_sd(_mm_setzero_pd(), _mm_load_sd(in + j)));
}

static void sqrt_sse2(const double *in, double *out, int64_t m)
{
    int64_t j = 0;
    for (; j + 2 <= m; j += 2)
        _mm_storeu_pd(out + j, _mm_sqrt_pd(_mm_loadu_pd(in + j)));
    for (; j < m; j++)
        _mm_store_sd(out + j, _mm_sqrt_sd(_mm_setzero_pd(), _mm_load_sd(in + j)));
}

static void sqrt_array(const double *in, double *out, int64_t m)
{
    static int have_avx = -1;
    if (have_avx < 0)
        have_avx = __builtin_cpu_supports("avx") ? 1 : 0;
    if (have_avx)
        sqrt_avx(in, out, m);
    else
        sqrt_sse2(in, out, m);
}
#else
static void sqrt_array(const double *in, double *out, int64_t m)
{
    for (int64_t j = 0; j < m; j++)
        out[j] = sqrt(in[j]);
}
#endif

/* restrict only binds reliably on parameters: every array is one here, so the
 * loop needs no run-time alias checks. */
TIRE_CLONES
static int update_tile(const tire_params *restrict pp, int64_t i0, int64_t m, int64_t off,
                       const double *restrict x, const double *restrict y,
                       const double *restrict vx, const double *restrict vy,
                       const double *restrict ll, const double *restrict lr,
                       const double *restrict lo, double *restrict ox, double *restrict oy,
                       double *restrict ovx, double *restrict ovy)
{
    const tire_params p = *pp;     /* a local copy: the loop need not reload it */
    int64_t touch = 0;
    for (int64_t j = 0; j < m; j++) {
        int64_t i = i0 + j;
        touch |= tire_update_len(&p, x[i], y[i], vx[i], vy[i], x[i - 1], y[i - 1], vx[i - 1], vy[i - 1],
                                 x[i + 1], y[i + 1], vx[i + 1], vy[i + 1], x[i + off], y[i + off],
                                 vx[i + off], vy[i + off], ll[j], lr[j], lo[j], &ox[i], &oy[i],
                                 &ovx[i], &ovy[i]);
    }
    return touch != 0;
}

static int run_nodes(const tire_params *p, const tire_soa *c, tire_soa *nx, int64_t i0, int64_t i1,
                     int64_t off)
{
    tile_len d2, len;
    int touch = 0;
    for (int64_t t = i0; t < i1; t += TILE) {
        int64_t m = i1 - t < TILE ? i1 - t : TILE;
        squared_lengths(c->x, c->y, t, m, off, &d2);
        sqrt_array(d2.l, len.l, m);
        sqrt_array(d2.r, len.r, m);
        sqrt_array(d2.o, len.o, m);
        touch |= update_tile(p, t, m, off, c->x, c->y, c->vx, c->vy, len.l, len.r, len.o, nx->x,
                             nx->y, nx->vx, nx->vy);
    }
    return touch;
}

static int one_node(const tire_params *p, const tire_soa *c, tire_soa *nx, int64_t i)
{
    int64_t n = p->n;
    return tire_node(p, c->x, c->y, c->vx, c->vy, i, (i + n - 1) % n, (i + 1) % n, tire_opp(n, i),
                     nx->x, nx->y, nx->vx, nx->vy);
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int tire_fast_part(tire_state *st, int64_t a, int64_t b, bool centroid, double *ysum)
{
    const tire_params *p = &st->p;
    const tire_soa *c = tire_cur(st);
    tire_soa *nx = tire_next(st);
    int64_t n = p->n, h = n / 2;
    int touch = 0;
    if (a <= 0 && 0 < b)
        touch |= one_node(p, c, nx, 0);
    int64_t lo = max64(a, 1), hi = min64(b, h);
    if (lo < hi)
        touch |= run_nodes(p, c, nx, lo, hi, h);
    lo = max64(a, h), hi = min64(b, n - 1);
    if (lo < hi)
        touch |= run_nodes(p, c, nx, lo, hi, -h);
    if (a <= n - 1 && n - 1 < b)
        touch |= one_node(p, c, nx, n - 1);
    if (centroid) {
        double s = 0.0;
        for (int64_t i = a; i < b; i++)
            s += nx->y[i];
        *ysum = s;
    }
    return touch;
}

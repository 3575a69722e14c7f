/* samples: distributions (exact moments + log-linear histogram), SPSC ring,
 * window series. See samples.h. */
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- HDR log-linear bucket geometry ----
 * Values 0..127 have one bucket each (index = value). A value v >= 128 with
 * highest set bit e (7..62) falls in "octave" e, split into 128 linear
 * sub-buckets of width 2^(e-7):
 *   index = 128 + (e-7)*128 + ((v >> (e-7)) - 128)
 * so the width relative to the bucket's lower edge (>= 2^e) is <= 1/128, and the
 * largest int64 lands in index 128 + 55*128 + 127 = RTG_HDR_BUCKETS - 1. */

static int highest_bit(uint64_t v)
{
    return 63 - __builtin_clzll(v);
}

size_t rtg_hdr_index(int64_t v)
{
    if (v < RTG_HDR_SUB)
        return v <= 0 ? 0 : (size_t)v;
    int e = highest_bit((uint64_t)v);
    int shift = e - RTG_HDR_SUB_BITS;
    size_t sub = (size_t)((uint64_t)v >> shift) - RTG_HDR_SUB;
    return RTG_HDR_SUB + (size_t)shift * RTG_HDR_SUB + sub;
}

int64_t rtg_hdr_lower(size_t idx)
{
    if (idx < RTG_HDR_SUB)
        return (int64_t)idx;
    size_t shift = (idx - RTG_HDR_SUB) / RTG_HDR_SUB;
    uint64_t sub = (idx - RTG_HDR_SUB) % RTG_HDR_SUB;
    return (int64_t)((RTG_HDR_SUB + sub) << shift);
}

int64_t rtg_hdr_upper(size_t idx)
{
    if (idx < RTG_HDR_SUB)
        return (int64_t)idx;
    size_t shift = (idx - RTG_HDR_SUB) / RTG_HDR_SUB;
    return (int64_t)((uint64_t)rtg_hdr_lower(idx) + ((uint64_t)1 << shift) - 1);
}

/* ---- distribution ---- */

/* calloc then memset: calloc may hand out untouched zero pages, and the first
 * write to each would fault inside a measurement. */
void rtg_touch(void *p, size_t bytes)
{
    volatile unsigned char *v = p;
    for (size_t i = 0; i < bytes; i += 4096)
        v[i] = 0;
    if (bytes)
        v[bytes - 1] = 0;
}

/* calloc, then fault every page in: a memset(0) after calloc would be
 * optimised away by the compiler, leaving the pages to fault during the run
 * when memory is not locked. */
static void *alloc_touched(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (p)
        rtg_touch(p, (n ? n : 1) * size);
    return p;
}

int rtg_dist_init(rtg_dist *d, int64_t lin_bucket_ns, size_t lin_buckets)
{
    memset(d, 0, sizeof *d);
    d->min = INT64_MAX;
    d->max = INT64_MIN;
    d->hdr = alloc_touched(RTG_HDR_BUCKETS, sizeof *d->hdr);
    d->hdr_neg = alloc_touched(RTG_HDR_BUCKETS, sizeof *d->hdr_neg);
    if (lin_bucket_ns > 0 && lin_buckets > 0) {
        d->lin_bucket_ns = lin_bucket_ns;
        d->lin_n = lin_buckets;
        d->lin = alloc_touched(lin_buckets, sizeof *d->lin);
    }
    if (!d->hdr || !d->hdr_neg || (d->lin_n && !d->lin)) {
        rtg_dist_free(d);
        return -1;
    }
    return 0;
}

void rtg_dist_free(rtg_dist *d)
{
    free(d->hdr);
    free(d->hdr_neg);
    free(d->lin);
    d->hdr = d->hdr_neg = d->lin = NULL;
    d->lin_n = 0;
    d->lin_bucket_ns = 0;
}

static int64_t magnitude(int64_t v)
{
    return v == INT64_MIN ? INT64_MAX : (v < 0 ? -v : v);
}

static void lin_add(rtg_dist *d, int64_t v)
{
    if (!d->lin)
        return;
    if (v < 0) {
        d->lin[0]++;
        return;
    }
    uint64_t i = (uint64_t)(v / d->lin_bucket_ns);
    if (i < d->lin_n)
        d->lin[i]++;
    else
        d->lin_overflow++;
}

void rtg_dist_clear(rtg_dist *d)
{
    if (d->count) {
        /* the bucket index grows with the value: [min, max] covers every bucket used */
        size_t lo = rtg_hdr_index(d->min), hi = rtg_hdr_index(d->max);
        memset(&d->hdr[lo], 0, (hi - lo + 1) * sizeof *d->hdr);
        if (d->negative) {   /* negatives v in [min, min(max, -1)]: magnitudes in reverse */
            size_t nlo = rtg_hdr_index(magnitude(d->max < -1 ? d->max : -1));
            size_t nhi = rtg_hdr_index(magnitude(d->min));
            memset(&d->hdr_neg[nlo], 0, (nhi - nlo + 1) * sizeof *d->hdr_neg);
        }
        if (d->lin && d->max >= 0) {
            uint64_t llo = d->min > 0 ? (uint64_t)(d->min / d->lin_bucket_ns) : 0;
            uint64_t lhi = (uint64_t)(d->max / d->lin_bucket_ns);
            if (lhi >= d->lin_n)
                lhi = d->lin_n - 1;
            if (llo <= lhi)
                memset(&d->lin[llo], 0, (size_t)(lhi - llo + 1) * sizeof *d->lin);
        }
        if (d->lin)
            d->lin[0] = 0;   /* negatives count there */
    }
    d->count = 0;
    d->min = INT64_MAX;
    d->max = INT64_MIN;
    d->mean = d->m2 = 0;
    d->sum = 0;
    d->negative = 0;
    d->lin_overflow = 0;
}

void rtg_dist_add(rtg_dist *d, int64_t v)
{
    d->count++;
    if (v < d->min)
        d->min = v;
    if (v > d->max)
        d->max = v;
    d->sum += v;
    /* Welford: numerically stable running mean and sum of squared deviations */
    double delta = (double)v - d->mean;
    d->mean += delta / (double)d->count;
    d->m2 += delta * ((double)v - d->mean);
    d->hdr[rtg_hdr_index(v)]++;
    if (v < 0) {
        d->negative++;
        d->hdr_neg[rtg_hdr_index(magnitude(v))]++;
    }
    lin_add(d, v);
}

void rtg_dist_add_array(rtg_dist *d, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rtg_dist_add(d, v[i]);
}

void rtg_dist_merge(rtg_dist *a, const rtg_dist *b)
{
    if (b->count == 0)
        return;
    if (a->count == 0) {
        a->mean = b->mean;
        a->m2 = b->m2;
    } else {
        /* Chan et al.: combine two (count, mean, m2) summaries exactly */
        double na = (double)a->count, nb = (double)b->count, n = na + nb;
        double delta = b->mean - a->mean;
        a->mean += delta * nb / n;
        a->m2 += b->m2 + delta * delta * na * nb / n;
    }
    a->count += b->count;
    a->sum += b->sum;
    a->negative += b->negative;
    if (b->min < a->min)
        a->min = b->min;
    if (b->max > a->max)
        a->max = b->max;
    for (size_t i = 0; i < RTG_HDR_BUCKETS; i++) {
        a->hdr[i] += b->hdr[i];
        a->hdr_neg[i] += b->hdr_neg[i];
    }
    if (a->lin && b->lin && a->lin_n == b->lin_n && a->lin_bucket_ns == b->lin_bucket_ns) {
        for (size_t i = 0; i < a->lin_n; i++)
            a->lin[i] += b->lin[i];
        a->lin_overflow += b->lin_overflow;
    }
}

double rtg_dist_avg(const rtg_dist *d)
{
    return d->count ? (double)(d->sum / (long double)d->count) : 0.0;
}

double rtg_dist_stddev(const rtg_dist *d)
{
    return d->count ? sqrt(d->m2 / (double)d->count) : 0.0;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Values in ascending order are: negatives from most negative (hdr_neg from the
 * top bucket down), zeros (hdr[0] minus negatives), positives (hdr[1..]). The
 * answer is the largest value of the bucket holding the rank-th value. */
int64_t rtg_dist_percentile(const rtg_dist *d, double q)
{
    if (d->count == 0)
        return 0;
    if (!(q > 0.0))
        return d->min;
    if (q >= 1.0)
        return d->max;
    uint64_t rank = (uint64_t)ceil(q * (double)d->count);
    if (rank < 1)
        rank = 1;
    if (rank > d->count)
        rank = d->count;
    uint64_t seen = 0;
    if (d->negative) {
        for (size_t i = RTG_HDR_BUCKETS; i-- > 0;) {
            seen += d->hdr_neg[i];
            if (seen >= rank)
                return clamp(-rtg_hdr_lower(i), d->min, d->max);
        }
    }
    seen += d->hdr[0] - d->negative;
    if (seen >= rank)
        return clamp(0, d->min, d->max);
    for (size_t i = 1; i < RTG_HDR_BUCKETS; i++) {
        seen += d->hdr[i];
        if (seen >= rank)
            return clamp(rtg_hdr_upper(i), d->min, d->max);
    }
    return d->max;
}

/* ---- SPSC ring ---- */

int rtg_ring_init(rtg_ring *r, size_t rec_size, size_t cap_pow2)
{
    memset(r, 0, sizeof *r);
    if (rec_size == 0 || cap_pow2 == 0 || (cap_pow2 & (cap_pow2 - 1)) != 0)
        return -1;
    r->buf = alloc_touched(cap_pow2, rec_size);
    if (!r->buf)
        return -1;
    r->rec_size = rec_size;
    r->cap = cap_pow2;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->dropped, 0);
    return 0;
}

void rtg_ring_free(rtg_ring *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

void *rtg_ring_slot(rtg_ring *r)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    /* acquire: the consumer is done reading the slots it released */
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail >= r->cap) {
        uint64_t d = atomic_load_explicit(&r->dropped, memory_order_relaxed);
        atomic_store_explicit(&r->dropped, d + 1, memory_order_relaxed);
        return NULL;
    }
    return (char *)r->buf + (head & (r->cap - 1)) * r->rec_size;
}

void rtg_ring_publish(rtg_ring *r)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    /* release: the record's bytes are visible before the new head */
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

size_t rtg_ring_peek(rtg_ring *r, void **first, size_t max)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t avail = head - tail;
    size_t pos = (size_t)(tail & (r->cap - 1));
    size_t n = r->cap - pos;            /* contiguous up to the end of the buffer */
    if (avail < n)
        n = (size_t)avail;
    if (max < n)
        n = max;
    *first = (char *)r->buf + pos * r->rec_size;
    return n;
}

void rtg_ring_release(rtg_ring *r, size_t n)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
}

uint64_t rtg_ring_dropped(const rtg_ring *r)
{
    return atomic_load_explicit(&((rtg_ring *)r)->dropped, memory_order_relaxed);
}

/* ---- window series ---- */

int rtg_series_init(rtg_series *s, int64_t start_ns, int64_t window_ns, size_t cap)
{
    memset(s, 0, sizeof *s);
    if (window_ns <= 0 || cap == 0)
        return -1;
    s->max = alloc_touched(cap, sizeof *s->max);
    if (!s->max)
        return -1;
    for (size_t i = 0; i < cap; i++)
        s->max[i] = RTG_SERIES_EMPTY;
    s->start_ns = start_ns;
    s->window_ns = window_ns;
    s->cap = cap;
    return 0;
}

void rtg_series_free(rtg_series *s)
{
    free(s->max);
    s->max = NULL;
    s->n = s->cap = 0;
}

/* The window T_NS falls in, for windows of WINDOW_NS from START_NS (before the start: 0);
 * the maxima's series and the window counts share it, so their windows are the same. */
static uint64_t window_of(int64_t start_ns, int64_t window_ns, int64_t t_ns)
{
    int64_t since = t_ns - start_ns;
    return since <= 0 ? 0 : (uint64_t)(since / window_ns);
}

void rtg_series_add(rtg_series *s, int64_t t_ns, int64_t v)
{
    if (!s->max)
        return;
    uint64_t w = window_of(s->start_ns, s->window_ns, t_ns);
    if (w >= s->cap)
        return;
    if (v > s->max[w])
        s->max[w] = v;
    if (w + 1 > s->n)
        s->n = (size_t)w + 1;
}

void rtg_series_merge(rtg_series *a, const rtg_series *b)
{
    size_t n = b->n < a->cap ? b->n : a->cap;
    for (size_t i = 0; i < n; i++)
        if (b->max[i] > a->max[i])
            a->max[i] = b->max[i];
    if (n > a->n)
        a->n = n;
}

/* ---- window counts ---- */

int rtg_wcounts_init(rtg_window_counts *c, int64_t start_ns, int64_t window_ns, size_t cap)
{
    memset(c, 0, sizeof *c);
    if (window_ns <= 0 || cap == 0)
        return -1;
    c->cycles = alloc_touched(cap, sizeof *c->cycles);
    c->ti_sum = alloc_touched(cap, sizeof *c->ti_sum);
    c->misses = alloc_touched(cap, sizeof *c->misses);
    c->skipped = alloc_touched(cap, sizeof *c->skipped);
    if (!c->cycles || !c->ti_sum || !c->misses || !c->skipped) {
        rtg_wcounts_free(c);
        return -1;
    }
    c->start_ns = start_ns;
    c->window_ns = window_ns;
    c->cap = cap;
    return 0;
}

void rtg_wcounts_free(rtg_window_counts *c)
{
    free(c->cycles);
    free(c->ti_sum);
    free(c->misses);
    free(c->skipped);
    memset(c, 0, sizeof *c);
}

void rtg_wcounts_cycle(rtg_window_counts *c, int64_t t_ns, int64_t ti, bool miss)
{
    if (!c->cycles)
        return;
    uint64_t w = window_of(c->start_ns, c->window_ns, t_ns);
    if (w >= c->cap)
        return;
    c->cycles[w]++;
    c->ti_sum[w] += ti;
    if (miss)
        c->misses[w]++;
    if (w + 1 > c->n)
        c->n = (size_t)w + 1;
}

void rtg_wcounts_skipped(rtg_window_counts *c, uint64_t first, uint64_t last, int64_t period_ns)
{
    if (!c->cycles || period_ns <= 0)
        return;
    for (uint64_t k = first; k <= last;) {
        int64_t w = (int64_t)k * period_ns / c->window_ns;
        if ((uint64_t)w >= c->cap)
            return;
        uint64_t end = (uint64_t)(((w + 1) * c->window_ns - 1) / period_ns);   /* last deadline due in w */
        uint64_t upto = end < last ? end : last;
        c->skipped[w] += (int64_t)(upto - k + 1);
        if ((size_t)w + 1 > c->n)
            c->n = (size_t)w + 1;
        k = upto + 1;
    }
}

/* samples: distributions of nanosecond values.
 * rtg_dist accumulates exactly count/min/max/mean/variance and a log-linear
 * (HDR-style) histogram covering 1 ns .. 2^62 ns with 128 linear sub-buckets per
 * power of two (relative bucket width <= 1/128 < 1%), so percentiles are within
 * 1% however long the tail; min and max are exact. Optionally a cyclictest-style
 * linear histogram (fixed bucket width, counts up to a limit, overflow count).
 * Nothing here is called inside a measured loop: measured loops only store into
 * preallocated arrays or rings (see ring below); folding happens after the run or
 * in a non-RT collector thread. */
#ifndef RTG_SAMPLES_H
#define RTG_SAMPLES_H
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#define RTG_HDR_SUB_BITS 7                       /* 128 sub-buckets */
#define RTG_HDR_SUB (1 << RTG_HDR_SUB_BITS)
#define RTG_HDR_BUCKETS (RTG_HDR_SUB * 57)       /* enough for values up to 2^63 */

typedef struct {
    uint64_t count;
    int64_t min, max;
    double mean, m2;          /* Welford; variance = m2 / count */
    long double sum;          /* exact enough for avg of 1e9 samples */
    uint64_t negative;        /* values < 0 seen (stored in hdr bucket 0) */
    uint64_t *hdr;            /* RTG_HDR_BUCKETS counts; bucket 0 holds values <= 0 */
    uint64_t *hdr_neg;        /* RTG_HDR_BUCKETS counts of -v for values v < 0, so
                                 percentiles of negative values (Tw) are within 1% too */
    /* optional linear histogram (cyclictest -h style) */
    int64_t lin_bucket_ns;    /* 0 = none */
    size_t lin_n;
    uint64_t *lin;            /* lin_n counts, [i*w, (i+1)*w); values < 0 count in lin[0] */
    uint64_t lin_overflow;
} rtg_dist;

/* Fault in every page of [p, p + bytes) before a measured loop (a memset(0) of
 * freshly calloc'ed memory is optimised away and touches nothing). */
void rtg_touch(void *p, size_t bytes);

/* Allocate (and touch) the histogram. lin_buckets = 0 for none.
 * Returns 0, or -1 on allocation failure. */
int rtg_dist_init(rtg_dist *d, int64_t lin_bucket_ns, size_t lin_buckets);
void rtg_dist_free(rtg_dist *d);
void rtg_dist_add(rtg_dist *d, int64_t v);
void rtg_dist_add_array(rtg_dist *d, const int64_t *v, size_t n);
/* a += b (histograms must have the same linear shape) */
void rtg_dist_merge(rtg_dist *a, const rtg_dist *b);
/* Empty d again (count 0, histograms zero), keeping its allocation and shape. It
 * clears only the buckets between min and max, so emptying a distribution that
 * held a few close values costs little (a window's distribution, status.h). */
void rtg_dist_clear(rtg_dist *d);
double rtg_dist_avg(const rtg_dist *d);
double rtg_dist_stddev(const rtg_dist *d);   /* population stddev */
/* q in [0,1]. Nearest-rank percentile from the HDR histogram: the upper edge of
 * the bucket holding the ceil(q*count)-th smallest value, clamped to [min,max].
 * Exact for q=0 (min) and q=1 (max). 0 when count = 0. */
int64_t rtg_dist_percentile(const rtg_dist *d, double q);

/* HDR bucket geometry, exposed for tests and the JSON writer. */
size_t rtg_hdr_index(int64_t v);
int64_t rtg_hdr_lower(size_t idx);     /* smallest value in bucket */
int64_t rtg_hdr_upper(size_t idx);     /* largest value in bucket (inclusive) */

/* Single-producer single-consumer ring of fixed-size records, preallocated and
 * touched. The producer (a measuring RT thread) writes a record and publishes it
 * with a release store; a collector drains with acquire loads. When full, the
 * producer counts a drop instead of blocking. */
typedef struct {
    void *buf;
    size_t rec_size, cap;     /* cap is a power of two */
    _Alignas(64) _Atomic uint64_t head;    /* written by producer (release) */
    _Alignas(64) _Atomic uint64_t tail;    /* written by consumer (release) */
    _Alignas(64) _Atomic uint64_t dropped; /* written by producer only */
} rtg_ring;

int rtg_ring_init(rtg_ring *r, size_t rec_size, size_t cap_pow2);
void rtg_ring_free(rtg_ring *r);
/* producer: pointer to the slot to fill, or NULL when full (drop counted) */
void *rtg_ring_slot(rtg_ring *r);
void rtg_ring_publish(rtg_ring *r);
/* consumer: up to max records available; returns count and pointer to first;
 * records may wrap, so call repeatedly until 0 */
size_t rtg_ring_peek(rtg_ring *r, void **first, size_t max);
void rtg_ring_release(rtg_ring *r, size_t n);
/* records lost so far because the ring was full (readable from any thread) */
uint64_t rtg_ring_dropped(const rtg_ring *r);

/* Window series: the maximum of a value per fixed window of time since a start
 * instant (e.g. the max wake-up latency per second). */
typedef struct {
    int64_t start_ns, window_ns;
    size_t n, cap;
    int64_t *max;             /* RTG_SERIES_EMPTY = empty window */
} rtg_series;
/* INT64_MIN rather than -1: a window's max may legitimately be negative (Tw). */
#define RTG_SERIES_EMPTY INT64_MIN

int rtg_series_init(rtg_series *s, int64_t start_ns, int64_t window_ns, size_t cap);
void rtg_series_free(rtg_series *s);
/* t_ns before start_ns counts in window 0; at or after start + cap*window it is
 * ignored (the series has no room; size cap for the run's duration). */
void rtg_series_add(rtg_series *s, int64_t t_ns, int64_t v);
void rtg_series_merge(rtg_series *a, const rtg_series *b); /* element-wise max */

/* Window counts: per window of a series' grid (the same start, window and cap as
 * the maxima), the cycles, the sum of their Ti (ns), the cycles with Tw < 0 and the
 * deadlines skipped; what a window's average and late periods are made of. Four
 * int64 arrays of cap, allocated and touched at init: 32 bytes a window. */
typedef struct {
    int64_t start_ns, window_ns;
    size_t n, cap;             /* n: windows up to the last one counted in */
    int64_t *cycles, *ti_sum, *misses, *skipped;
} rtg_window_counts;

int rtg_wcounts_init(rtg_window_counts *c, int64_t start_ns, int64_t window_ns, size_t cap);
void rtg_wcounts_free(rtg_window_counts *c);
/* A cycle due at t_ns (its deadline), its Ti, whether it missed; windows as
 * rtg_series_add (before start: window 0; beyond cap: not counted). */
void rtg_wcounts_cycle(rtg_window_counts *c, int64_t t_ns, int64_t ti, bool miss);
/* Deadlines numbered first..last (due at start + k*period_ns) were skipped. */
void rtg_wcounts_skipped(rtg_window_counts *c, uint64_t first, uint64_t last, int64_t period_ns);

#endif

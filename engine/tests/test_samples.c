/* Unit tests of samples.c against exact references: HDR bucket geometry, stats and
 * percentiles vs a sorted array, merge, linear histogram, SPSC ring across two
 * threads, window series. Seed: RTG_TEST_SEED (default fixed). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "samples.h"

static uint64_t seed = 0x5eed2024;

/* ---------- HDR geometry ---------- */

static void test_hdr_geometry(void)
{
    int bad = 0;
    for (size_t i = 0; i < RTG_HDR_BUCKETS && bad < 10; i++) {
        int64_t lo = rtg_hdr_lower(i), hi = rtg_hdr_upper(i);
        int ok = lo <= hi && rtg_hdr_index(lo) == i && rtg_hdr_index(hi) == i;
        /* buckets tile the non-negative int64 range without gaps */
        if (i + 1 < RTG_HDR_BUCKETS)
            ok = ok && rtg_hdr_lower(i + 1) == hi + 1;
        /* width: one value, or at most 1/128 of the bucket's smallest value */
        uint64_t width = (uint64_t)(hi - lo) + 1;
        ok = ok && (width == 1 || width * 128 <= (uint64_t)lo);
        if (!ok)
            bad++;
        CHECK(ok, "bucket %zu: lower %lld upper %lld index(lower) %zu index(upper) %zu",
              i, (long long)lo, (long long)hi, rtg_hdr_index(lo), rtg_hdr_index(hi));
    }
    CHECK_EQ_I(rtg_hdr_lower(0), 0);
    CHECK_EQ_I(rtg_hdr_upper(RTG_HDR_BUCKETS - 1), INT64_MAX);
    CHECK_EQ_I(rtg_hdr_index(INT64_MAX), RTG_HDR_BUCKETS - 1);
    CHECK_EQ_I(rtg_hdr_index(-1), 0);
    CHECK_EQ_I(rtg_hdr_index(INT64_MIN), 0);
    for (int64_t v = 0; v < 256; v++)   /* 0..255: one bucket per ns */
        CHECK(rtg_hdr_lower(rtg_hdr_index(v)) == v && rtg_hdr_upper(rtg_hdr_index(v)) == v,
              "value %lld not exact", (long long)v);
    /* every power of two and its neighbours, and random values */
    for (int e = 1; e < 63; e++) {
        for (int d = -1; d <= 1; d++) {
            int64_t v = (int64_t)(((uint64_t)1 << e) + (uint64_t)(int64_t)d);
            size_t i = rtg_hdr_index(v);
            CHECK(rtg_hdr_lower(i) <= v && v <= rtg_hdr_upper(i), "2^%d%+d outside its bucket", e, d);
        }
    }
    for (int k = 0; k < 1000000; k++) {
        int64_t v = (int64_t)(check_rand(&seed) >> (check_rand(&seed) % 63 + 1));
        size_t i = rtg_hdr_index(v);
        if (!(rtg_hdr_lower(i) <= v && v <= rtg_hdr_upper(i))) {
            CHECK(0, "value %lld outside bucket %zu [%lld, %lld]", (long long)v, i,
                  (long long)rtg_hdr_lower(i), (long long)rtg_hdr_upper(i));
            break;
        }
    }
}

/* ---------- stats vs exact reference ---------- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the exact nearest-rank percentile of sorted[n] */
static int64_t ref_percentile(const int64_t *sorted, size_t n, double q)
{
    if (q <= 0)
        return sorted[0];
    size_t rank = (size_t)ceil(q * (double)n);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static void check_percentile(const rtg_dist *d, const int64_t *sorted, size_t n, double q,
                             const char *name)
{
    int64_t got = rtg_dist_percentile(d, q), want = ref_percentile(sorted, n, q);
    double err = fabs((double)got - (double)want);
    /* the bucket's upper edge: never below the true value, at most 1% above */
    CHECK(got >= want && err <= fabs((double)want) / 100.0,
          "%s: q=%.6f percentile %lld, exact %lld", name, q, (long long)got, (long long)want);
}

static void check_against_reference(const rtg_dist *d, const int64_t *v, size_t n,
                                    const char *name)
{
    CHECK_EQ_I(d->count, n);
    if (n == 0) {
        CHECK_EQ_I(rtg_dist_percentile(d, 0.5), 0);
        CHECK(rtg_dist_avg(d) == 0.0 && rtg_dist_stddev(d) == 0.0, "%s: empty avg/stddev", name);
        return;
    }
    int64_t *sorted = malloc(n * sizeof *sorted);
    memcpy(sorted, v, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_i64);
    /* two-pass double-precision reference */
    double sum = 0, ss = 0;
    uint64_t neg = 0;
    for (size_t i = 0; i < n; i++) {
        sum += (double)v[i];
        neg += v[i] < 0;
    }
    double mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        ss += ((double)v[i] - mean) * ((double)v[i] - mean);
    double sd = sqrt(ss / (double)n);

    CHECK(d->min == sorted[0], "%s: min %lld, exact %lld", name, (long long)d->min, (long long)sorted[0]);
    CHECK(d->max == sorted[n - 1], "%s: max %lld, exact %lld", name, (long long)d->max,
          (long long)sorted[n - 1]);
    CHECK_EQ_I(d->negative, neg);
    double scale = fmax(fmax(fabs(mean), sd), 1.0);
    CHECK(fabs(rtg_dist_avg(d) - mean) <= 1e-9 * scale, "%s: avg %.17g, reference %.17g", name,
          rtg_dist_avg(d), mean);
    CHECK(fabs(rtg_dist_stddev(d) - sd) <= 1e-9 * scale, "%s: stddev %.17g, reference %.17g", name,
          rtg_dist_stddev(d), sd);
    uint64_t total = 0, total_neg = 0;
    for (size_t i = 0; i < RTG_HDR_BUCKETS; i++) {
        total += d->hdr[i];
        total_neg += d->hdr_neg[i];
    }
    CHECK_EQ_I(total, n);
    CHECK_EQ_I(total_neg, neg);

    CHECK(rtg_dist_percentile(d, 0.0) == sorted[0], "%s: q=0 is not min", name);
    CHECK(rtg_dist_percentile(d, 1.0) == sorted[n - 1], "%s: q=1 is not max", name);
    static const double qs[] = {0.5, 0.9, 0.99, 0.999, 0.9999, 1e-9, 0.25, 0.75};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
        check_percentile(d, sorted, n, qs[i], name);
    for (int i = 0; i < 200; i++)
        check_percentile(d, sorted, n, check_rand01(&seed), name);
    free(sorted);
}

typedef int64_t (*gen_fn)(void);

static int64_t gen_uniform(void) { return (int64_t)(check_rand(&seed) % 100001); }
/* log-uniform from 1 ns to 10 s: every octave equally populated */
static int64_t gen_log_uniform(void) { return (int64_t)exp(check_rand01(&seed) * log(1e10)); }
/* Pareto (alpha 1.1) above 2 us, capped at 10 s: a realistic latency tail */
static int64_t gen_pareto(void)
{
    double x = 2000.0 / pow(1.0 - check_rand01(&seed), 1.0 / 1.1);
    return (int64_t)fmin(x, 1e10);
}
/* mostly ~2 us with rare 5 s outliers: p9999 must see them */
static int64_t gen_outliers(void)
{
    return check_rand(&seed) % 5000 == 0 ? 5000000000LL + (int64_t)(check_rand(&seed) % 1000)
                                         : 1900 + (int64_t)(check_rand(&seed) % 200);
}
/* slack-like: both signs, magnitudes from 1 ns to 1 s */
static int64_t gen_signed(void)
{
    int64_t m = (int64_t)exp(check_rand01(&seed) * log(1e9));
    return (check_rand(&seed) & 1) ? m : -m;
}
static int64_t gen_negative(void) { return -1 - (int64_t)(check_rand(&seed) % 1000000000); }
static int64_t gen_constant(void) { return 123456789; }
static int64_t gen_small(void) { return (int64_t)(check_rand(&seed) % 300) - 20; }

static void test_stats(void)
{
    static const struct { const char *name; gen_fn gen; size_t n; } sets[] = {
        {"uniform", gen_uniform, 200000},   {"log-uniform 1ns..10s", gen_log_uniform, 300000},
        {"pareto", gen_pareto, 300000},     {"outliers", gen_outliers, 400000},
        {"signed", gen_signed, 200000},     {"negative", gen_negative, 100000},
        {"constant", gen_constant, 1000},   {"small exact", gen_small, 50000},
        {"single", gen_uniform, 1},         {"single negative", gen_negative, 1},
        {"empty", gen_uniform, 0},          {"ten", gen_log_uniform, 10},
    };
    for (size_t s = 0; s < sizeof sets / sizeof sets[0]; s++) {
        size_t n = sets[s].n;
        int64_t *v = malloc((n ? n : 1) * sizeof *v);
        for (size_t i = 0; i < n; i++)
            v[i] = sets[s].gen();
        rtg_dist d;
        CHECK(rtg_dist_init(&d, 0, 0) == 0, "init failed");
        rtg_dist_add_array(&d, v, n);
        check_against_reference(&d, v, n, sets[s].name);

        /* merge of three random parts equals adding everything */
        rtg_dist part[3], merged;
        for (int p = 0; p < 3; p++)
            rtg_dist_init(&part[p], 0, 0);
        rtg_dist_init(&merged, 0, 0);
        for (size_t i = 0; i < n; i++)
            rtg_dist_add(&part[check_rand(&seed) % 3], v[i]);
        for (int p = 0; p < 3; p++)
            rtg_dist_merge(&merged, &part[p]);
        CHECK(merged.count == d.count && merged.min == d.min && merged.max == d.max &&
                  merged.negative == d.negative && merged.sum == d.sum,
              "%s: merged count/min/max/negative/sum differ", sets[s].name);
        CHECK(memcmp(merged.hdr, d.hdr, RTG_HDR_BUCKETS * sizeof *d.hdr) == 0 &&
                  memcmp(merged.hdr_neg, d.hdr_neg, RTG_HDR_BUCKETS * sizeof *d.hdr_neg) == 0,
              "%s: merged histogram differs", sets[s].name);
        check_against_reference(&merged, v, n, sets[s].name);
        for (int p = 0; p < 3; p++)
            rtg_dist_free(&part[p]);
        rtg_dist_free(&merged);
        rtg_dist_free(&d);
        free(v);
    }
}

static void test_linear(void)
{
    const int64_t w = 1000;
    const size_t nb = 50;
    rtg_dist d;
    CHECK(rtg_dist_init(&d, w, nb) == 0, "init with linear failed");
    uint64_t ref[50] = {0}, over = 0;
    for (int i = 0; i < 100000; i++) {
        int64_t v = (int64_t)(check_rand(&seed) % 70000) - 100;
        rtg_dist_add(&d, v);
        int64_t b = v < 0 ? 0 : v / w;
        if (b < (int64_t)nb)
            ref[b]++;
        else
            over++;
    }
    CHECK(memcmp(ref, d.lin, sizeof ref) == 0, "linear counts differ from reference");
    CHECK_EQ_I(d.lin_overflow, over);
    /* boundaries: 999 in bucket 0, 1000 in bucket 1, 49999 last, 50000 overflow */
    rtg_dist e;
    rtg_dist_init(&e, w, nb);
    rtg_dist_add(&e, 999);
    rtg_dist_add(&e, 1000);
    rtg_dist_add(&e, 49999);
    rtg_dist_add(&e, 50000);
    CHECK(e.lin[0] == 1 && e.lin[1] == 1 && e.lin[49] == 1 && e.lin_overflow == 1,
          "linear bucket edges wrong: %llu %llu %llu overflow %llu", (unsigned long long)e.lin[0],
          (unsigned long long)e.lin[1], (unsigned long long)e.lin[49],
          (unsigned long long)e.lin_overflow);
    rtg_dist_merge(&e, &d);
    CHECK_EQ_I(e.lin_overflow, over + 1);
    CHECK_EQ_I(e.lin[1], ref[1] + 1);
    rtg_dist_free(&e);
    rtg_dist_free(&d);
}

/* ---------- ring ---------- */

typedef struct {
    uint64_t seq, check;
    int64_t pad[4];
} rec;

/* 1M records through a 4096-slot ring: it wraps ~250 times and fills often when the
 * consumer is descheduled (10M took ~40 s of a loaded 2-vCPU machine, the same checks) */
#define RING_RECORDS 1000000ull

static uint64_t rec_check(uint64_t seq) { return seq * 0x9E3779B97F4A7C15ull ^ 0xABCDEFull; }

static uint64_t producer_retries;

static void *producer(void *arg)
{
    rtg_ring *r = arg;
    for (uint64_t s = 0; s < RING_RECORDS; s++) {
        rec *slot;
        while (!(slot = rtg_ring_slot(r)))
            producer_retries++;    /* full: each refusal must count as a drop */
        slot->seq = s;
        slot->pad[0] = (int64_t)s;
        slot->check = rec_check(s);
        rtg_ring_publish(r);
    }
    return NULL;
}

static void test_ring_threads(void)
{
    rtg_ring r;
    CHECK(rtg_ring_init(&r, sizeof(rec), 4096) == 0, "ring init failed");
    pthread_t t;
    pthread_create(&t, NULL, producer, &r);
    uint64_t expect = 0, bad = 0;
    while (expect < RING_RECORDS) {
        void *first;
        size_t n = rtg_ring_peek(&r, &first, 1000);
        rec *recs = first;
        for (size_t i = 0; i < n; i++, expect++)
            if (recs[i].seq != expect || recs[i].check != rec_check(expect) ||
                recs[i].pad[0] != (int64_t)expect)
                bad++;
        rtg_ring_release(&r, n);
    }
    pthread_join(t, NULL);
    void *first;
    CHECK_EQ_I(bad, 0);
    CHECK_EQ_I(expect, RING_RECORDS);
    CHECK_EQ_I(rtg_ring_peek(&r, &first, 10), 0);
    CHECK_EQ_I(rtg_ring_dropped(&r), producer_retries);
    printf("ring: %llu records in order; producer found the ring full %llu times\n",
           (unsigned long long)expect, (unsigned long long)producer_retries);
    rtg_ring_free(&r);
}

static void push_seq(rtg_ring *r, uint64_t s)
{
    rec *slot = rtg_ring_slot(r);
    CHECK(slot != NULL, "slot refused for record %llu", (unsigned long long)s);
    if (slot) {
        slot->seq = s;
        rtg_ring_publish(r);
    }
}

static void test_ring_full_and_wrap(void)
{
    rtg_ring r;
    CHECK(rtg_ring_init(&r, sizeof(rec), 6) != 0, "capacity 6 (not a power of two) accepted");
    CHECK(rtg_ring_init(&r, sizeof(rec), 8) == 0, "ring init failed");
    for (uint64_t s = 0; s < 8; s++)
        push_seq(&r, s);
    for (int k = 0; k < 4; k++)
        CHECK(rtg_ring_slot(&r) == NULL, "full ring handed out a slot");
    CHECK_EQ_I(rtg_ring_dropped(&r), 4);
    void *first;
    CHECK_EQ_I(rtg_ring_peek(&r, &first, 5), 5);
    CHECK_EQ_I(((rec *)first)[4].seq, 4);
    rtg_ring_release(&r, 5);
    for (uint64_t s = 8; s < 13; s++)     /* wraps around the end */
        push_seq(&r, s);
    uint64_t expect = 5;
    size_t n;
    int pieces = 0;
    while ((n = rtg_ring_peek(&r, &first, 100)) > 0) {
        pieces++;
        for (size_t i = 0; i < n; i++, expect++)
            CHECK_EQ_I(((rec *)first)[i].seq, expect);
        rtg_ring_release(&r, n);
    }
    CHECK_EQ_I(expect, 13);
    CHECK_EQ_I(pieces, 2);                /* 5..7 up to the end, then 8..12 */
    CHECK_EQ_I(rtg_ring_dropped(&r), 4);
    rtg_ring_free(&r);
}

/* ---------- series ---------- */

static void test_series(void)
{
    rtg_series s;
    CHECK(rtg_series_init(&s, 1000, 100, 10) == 0, "series init failed");
    CHECK_EQ_I(s.n, 0);
    rtg_series_add(&s, 1000, 5);     /* window 0 */
    rtg_series_add(&s, 1099, 7);     /* window 0 */
    rtg_series_add(&s, 1100, -3);    /* window 1: negative max */
    rtg_series_add(&s, 1450, 2);     /* window 4; 2 and 3 stay empty */
    rtg_series_add(&s, 500, 9);      /* before start: window 0 */
    rtg_series_add(&s, 2000, 99);    /* window 10: beyond cap, ignored */
    CHECK_EQ_I(s.n, 5);
    CHECK_EQ_I(s.max[0], 9);
    CHECK_EQ_I(s.max[1], -3);
    CHECK(s.max[2] == RTG_SERIES_EMPTY && s.max[3] == RTG_SERIES_EMPTY, "windows 2,3 not empty");
    CHECK_EQ_I(s.max[4], 2);

    rtg_series b;
    rtg_series_init(&b, 1000, 100, 10);
    rtg_series_add(&b, 1250, 4);
    rtg_series_add(&b, 1050, 1);
    rtg_series_add(&b, 1999, 8);
    rtg_series_merge(&s, &b);
    CHECK_EQ_I(s.n, 10);
    CHECK_EQ_I(s.max[0], 9);
    CHECK_EQ_I(s.max[2], 4);
    CHECK_EQ_I(s.max[9], 8);
    CHECK(s.max[5] == RTG_SERIES_EMPTY, "window 5 not empty after merge");
    rtg_series_free(&b);
    rtg_series_free(&s);

    /* random points vs a reference max per window */
    enum { W = 50 };
    int64_t ref[W];
    for (int i = 0; i < W; i++)
        ref[i] = INT64_MIN;
    rtg_series_init(&s, -5000, 1000, W);
    for (int k = 0; k < 20000; k++) {
        int64_t t = -5000 + (int64_t)(check_rand(&seed) % (W * 1000 - 7000));
        int64_t v = (int64_t)(check_rand(&seed) % 100000) - 500;
        rtg_series_add(&s, t, v);
        int64_t w = (t + 5000) / 1000;
        if (v > ref[w])
            ref[w] = v;
    }
    int mismatch = 0;
    for (int i = 0; i < W - 7; i++)
        mismatch += s.max[i] != ref[i];
    CHECK_EQ_I(mismatch, 0);
    rtg_series_free(&s);
}

/* rtg_dist_clear empties a distribution (histograms included, negatives and the
 * linear one too) so that it then reads exactly like a fresh one fed the same values. */
static void test_clear(void)
{
    rtg_dist d, fresh;
    CHECK(rtg_dist_init(&d, 1000, 50) == 0 && rtg_dist_init(&fresh, 1000, 50) == 0, "init");
    const int64_t first[] = {-5000, -3, 0, 7, 900, 12345, 49999, 50000, 1234567, 987654321};
    for (size_t i = 0; i < sizeof first / sizeof *first; i++)
        rtg_dist_add(&d, first[i]);
    rtg_dist_clear(&d);
    CHECK_EQ_I(d.count, 0);
    CHECK_EQ_I(d.negative, 0);
    CHECK_EQ_I(d.lin_overflow, 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < RTG_HDR_BUCKETS; i++)
        nonzero += (d.hdr[i] != 0) + (d.hdr_neg[i] != 0);
    for (size_t i = 0; i < d.lin_n; i++)
        nonzero += d.lin[i] != 0;
    CHECK_EQ_I(nonzero, 0);
    const int64_t second[] = {20, 30, 40, 2000, 2500, 70000};
    for (size_t i = 0; i < sizeof second / sizeof *second; i++) {
        rtg_dist_add(&d, second[i]);
        rtg_dist_add(&fresh, second[i]);
    }
    CHECK_EQ_I(d.min, 20);
    CHECK_EQ_I(d.max, 70000);
    CHECK_EQ_I(d.lin_overflow, 1);
    for (double q = 0; q <= 1.0; q += 0.05)
        CHECK_EQ_I(rtg_dist_percentile(&d, q), rtg_dist_percentile(&fresh, q));
    CHECK(rtg_dist_avg(&d) == rtg_dist_avg(&fresh), "avg %f vs %f", rtg_dist_avg(&d), rtg_dist_avg(&fresh));
    rtg_dist_free(&d);
    rtg_dist_free(&fresh);
}

int main(void)
{
    const char *env = getenv("RTG_TEST_SEED");
    if (env)
        seed = strtoull(env, NULL, 0);
    printf("seed 0x%llx\n", (unsigned long long)seed);
    test_hdr_geometry();
    test_stats();
    test_linear();
    test_ring_full_and_wrap();
    test_ring_threads();
    test_series();
    test_clear();
    return check_done();
}

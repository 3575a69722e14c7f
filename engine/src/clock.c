/* clock: clock selection, TSC invariance check and calibration, timestamp cost. */
#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if RTG_HAVE_TSC
#include <cpuid.h>
#endif

int rtg_clock_parse(const char *name, rtg_clock_id *id)
{
    if (name && strcmp(name, "monotonic") == 0) {
        *id = RTG_CLOCK_MONOTONIC;
        return 0;
    }
    if (name && strcmp(name, "tsc") == 0) {
        *id = RTG_CLOCK_TSC;
        return 0;
    }
    return -1;
}

const char *rtg_clock_name(rtg_clock_id id)
{
    return id == RTG_CLOCK_TSC ? "tsc" : "monotonic";
}

#if RTG_HAVE_TSC
/* CPUID leaf 0x80000007 EDX bit 8: "invariant TSC" (constant rate in all
 * P-/C-states); the kernel derives constant_tsc and nonstop_tsc from it. */
static bool cpuid_invariant_tsc(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d))
        return false;
    return (d >> 8) & 1u;
}

/* Hypervisors sometimes hide the CPUID bit but the kernel still knows the TSC is
 * constant and non-stop (it reads it from its own sources): trust its flags too. */
static bool cpuinfo_has_flags(const char *f1, const char *f2)
{
#ifdef RTG_POSIX_ONLY
    (void)f1, (void)f2;
    return false;   /* no /proc in the POSIX-only build: CPUID alone decides */
#endif
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return false;
    char line[8192];
    bool found = false;
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        bool h1 = false, h2 = false;
        for (char *save = NULL, *tok = strtok_r(strchr(line, ':') ? strchr(line, ':') + 1 : line,
                                                 " \t\n", &save);
             tok; tok = strtok_r(NULL, " \t\n", &save)) {
            h1 |= strcmp(tok, f1) == 0;
            h2 |= strcmp(tok, f2) == 0;
        }
        found = h1 && h2;
        break;   /* the first CPU's flags speak for all */
    }
    fclose(fp);
    return found;
}
#endif

bool rtg_tsc_invariant(char *why, size_t whylen)
{
#if RTG_HAVE_TSC
    if (cpuid_invariant_tsc() || cpuinfo_has_flags("constant_tsc", "nonstop_tsc"))
        return true;
    snprintf(why, whylen, "the CPU does not report an invariant TSC (CPUID 0x80000007 EDX bit 8 "
             "clear and /proc/cpuinfo lacks constant_tsc/nonstop_tsc)");
    return false;
#else
    snprintf(why, whylen, "no TSC on this architecture");
    return false;
#endif
}

/* One (TSC, monotonic ns) pair: rdtsc bracketed by two clock_gettime calls; of
 * `tries` attempts keep the tightest bracket (least chance of an interrupt or
 * preemption between the reads) and take its midpoint as the monotonic time of
 * the rdtsc. *width gets the bracket width (the uncertainty). */
static void tsc_mono_pair(int tries, uint64_t *tsc, int64_t *mono, int64_t *width)
{
    int64_t best = INT64_MAX;
    *tsc = 0;
    *mono = 0;
    for (int i = 0; i < tries; i++) {
        int64_t a = rtg_mono_ns();
        uint64_t t = rtg_rdtsc();
        int64_t b = rtg_mono_ns();
        if (b - a < best) {
            best = b - a;
            *tsc = t;
            *mono = a + (b - a) / 2;
        }
    }
    *width = best;
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = rtg_ns_timespec(ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
    }
}

/* Worst disagreement, in ns, between the TSC clock and CLOCK_MONOTONIC over a few
 * bracketed reads (minus half the bracket, which is reading uncertainty). */
static int64_t tsc_disagreement_ns(const rtg_clock *c)
{
    int64_t worst = 0;
    for (int k = 0; k < 5; k++) {
        int64_t best_err = INT64_MAX;
        for (int i = 0; i < 200; i++) {
            int64_t a = rtg_mono_ns();
            int64_t t = rtg_clock_now(c);
            int64_t b = rtg_mono_ns();
            int64_t err = t < a ? a - t : t > b ? t - b : 0;   /* outside the bracket */
            if (err < best_err)
                best_err = err;
        }
        if (best_err > worst)
            worst = best_err;
    }
    return worst;
}

#define RTG_TSC_CALIB_NS 50000000LL   /* 50 ms between the two calibration pairs */
#define RTG_TSC_AGREE_NS 5000LL       /* TSC clock must agree within 5 us */

static int tsc_calibrate(rtg_clock *c, char *err, size_t errlen)
{
    uint64_t t1, t2;
    int64_t m1, m2, w1, w2;
    tsc_mono_pair(1000, &t1, &m1, &w1);
    sleep_ns(RTG_TSC_CALIB_NS);
    tsc_mono_pair(1000, &t2, &m2, &w2);
    if (t2 <= t1 || m2 <= m1) {
        snprintf(err, errlen, "TSC calibration failed: the TSC did not advance against "
                 "CLOCK_MONOTONIC; use --clock monotonic.");
        return -1;
    }
    c->ns_per_tick = (double)(m2 - m1) / (double)(t2 - t1);
    /* anchor at the latest pair so the error grows from now on, not from 50 ms ago */
    c->tsc0 = t2;
    c->mono0 = m2;
    int64_t off = tsc_disagreement_ns(c);
    if (off > RTG_TSC_AGREE_NS) {
        snprintf(err, errlen, "TSC calibration failed: the TSC clock differs from "
                 "CLOCK_MONOTONIC by %lld ns after calibration (limit %lld ns); "
                 "use --clock monotonic.", (long long)off, (long long)RTG_TSC_AGREE_NS);
        return -1;
    }
    return 0;
}

int rtg_clock_init(rtg_clock *c, rtg_clock_id id, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->id = id;
    if (id == RTG_CLOCK_MONOTONIC)
        return 0;
    if (id != RTG_CLOCK_TSC) {
        snprintf(err, errlen, "unknown clock; use monotonic or tsc.");
        return -1;
    }
    char why[256];
    if (!rtg_tsc_invariant(why, sizeof why)) {
        snprintf(err, errlen, "the TSC clock cannot be used: %s; use --clock monotonic.", why);
        return -1;
    }
    return tsc_calibrate(c, err, errlen);
}

int64_t rtg_clock_resync(rtg_clock *c)
{
    if (c->id != RTG_CLOCK_TSC)
        return 0;
    uint64_t t;
    int64_t m, w;
    tsc_mono_pair(100, &t, &m, &w);
    int64_t before = c->mono0 + (int64_t)((double)(t - c->tsc0) * c->ns_per_tick);
    /* refine the rate over the longer baseline, then re-anchor */
    if (t > c->tsc0 && m > c->mono0)
        c->ns_per_tick = (double)(m - c->mono0) / (double)(t - c->tsc0);
    c->tsc0 = t;
    c->mono0 = m;
    return before - m;
}

/* Keeps loop results alive so the compiler cannot delete the loops. */
static volatile uint64_t rtg_cost_sink;

/* The reference loop: a little integer work per iteration; the empty asm makes
 * acc opaque so the loop is neither vectorised nor turned into a closed form. */
static __attribute__((noinline)) int64_t loop_plain(long n)
{
    uint64_t acc = 0;
    int64_t t0 = rtg_mono_ns();
    for (long i = 0; i < n; i++) {
        acc += (uint64_t)i * 2654435761u;
        __asm__ __volatile__("" : "+r"(acc));
    }
    int64_t t1 = rtg_mono_ns();
    rtg_cost_sink = acc;
    return t1 - t0;
}

/* The same loop plus one timestamp per iteration, folded into acc. */
static __attribute__((noinline)) int64_t loop_stamped(const rtg_clock *c, long n)
{
    uint64_t acc = 0;
    int64_t t0 = rtg_mono_ns();
    for (long i = 0; i < n; i++) {
        acc += (uint64_t)i * 2654435761u + (uint64_t)rtg_clock_now(c);
        __asm__ __volatile__("" : "+r"(acc));
    }
    int64_t t1 = rtg_mono_ns();
    rtg_cost_sink = acc;
    return t1 - t0;
}

void rtg_clock_cost_warmup(const rtg_clock *c, long n)
{
    loop_plain(n / 10 + 1);
    loop_stamped(c, n / 10 + 1);
}

double rtg_clock_cost_round_ns(const rtg_clock *c, long n)
{
    if (n < 1)
        n = 1;
    int64_t plain = loop_plain(n);
    int64_t stamped = loop_stamped(c, n);
    return (double)(stamped - plain) / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rtg_median(const double *v, int n)
{
    if (n < 1)
        return 0.0;
    double *sorted = malloc(sizeof(double) * (size_t)n);
    if (!sorted)
        return -1.0;
    memcpy(sorted, v, sizeof(double) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
    free(sorted);
    return m;
}

double rtg_clock_cost_rounds_ns(const rtg_clock *c, long n, int rounds, double *per_round)
{
    if (n < 1)
        n = 1;
    if (rounds < 1)
        rounds = 1;
    double *v = per_round ? per_round : malloc(sizeof(double) * (size_t)rounds);
    if (!v)
        return -1.0;
    rtg_clock_cost_warmup(c, n);
    for (int r = 0; r < rounds; r++)
        v[r] = rtg_clock_cost_round_ns(c, n);
    double median = rtg_median(v, rounds);
    if (!per_round)
        free(v);
    return median;
}

double rtg_clock_cost_ns(const rtg_clock *c, long n, int rounds)
{
    return rtg_clock_cost_rounds_ns(c, n, rounds, NULL);
}

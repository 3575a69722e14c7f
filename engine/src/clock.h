/* clock: timestamps in nanoseconds on the CLOCK_MONOTONIC time base.
 * RTG_CLOCK_TSC reads the invariant TSC and converts it to monotonic ns with a
 * scale and offset calibrated against CLOCK_MONOTONIC at init, so values from both
 * clocks are comparable and deadlines (always CLOCK_MONOTONIC) can be subtracted. */
#ifndef RTG_CLOCK_H
#define RTG_CLOCK_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef enum { RTG_CLOCK_MONOTONIC = 0, RTG_CLOCK_TSC = 1 } rtg_clock_id;

typedef struct {
    rtg_clock_id id;
    /* TSC only: ns = mono0 + (tsc - tsc0) * ns_per_tick */
    double ns_per_tick;
    uint64_t tsc0;
    int64_t mono0;
} rtg_clock;

static inline int64_t rtg_timespec_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static inline struct timespec rtg_ns_timespec(int64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
    return ts;
}

static inline int64_t rtg_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return rtg_timespec_ns(&ts);
}

#if defined(__x86_64__) || defined(__i386__)
#define RTG_HAVE_TSC 1
static inline uint64_t rtg_rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
#else
#define RTG_HAVE_TSC 0
static inline uint64_t rtg_rdtsc(void) { return 0; }
#endif

/* Timestamp in ns on the monotonic time base, for the clock chosen at init. */
static inline int64_t rtg_clock_now(const rtg_clock *c)
{
    if (c->id == RTG_CLOCK_TSC)
        return c->mono0 + (int64_t)((double)(int64_t)(rtg_rdtsc() - c->tsc0) * c->ns_per_tick);
    return rtg_mono_ns();
}

/* Parse "monotonic" / "tsc". Returns 0, or -1 for an unknown name. */
int rtg_clock_parse(const char *name, rtg_clock_id *id);
const char *rtg_clock_name(rtg_clock_id id);

/* true when the CPU has an invariant TSC (constant_tsc and nonstop_tsc);
 * otherwise false with the reason in why. */
bool rtg_tsc_invariant(char *why, size_t whylen);

/* Set up a clock. For TSC: checks invariance and calibrates against
 * CLOCK_MONOTONIC (takes ~50 ms). Returns 0, or -1 with a sentence in err. */
int rtg_clock_init(rtg_clock *c, rtg_clock_id id, char *err, size_t errlen);

/* Cost of one timestamp in ns, measured as the published method does: the same
 * loop of n iterations with and without a timestamp, difference divided by n.
 * Median of `rounds` rounds. */
double rtg_clock_cost_ns(const rtg_clock *c, long n, int rounds);
/* Median of n values (mean of the two middle ones for even n); 0 for n < 1. */
double rtg_median(const double *v, int n);
/* One round: (time of the loop with a timestamp - time without) / n, in ns. */
double rtg_clock_cost_round_ns(const rtg_clock *c, long n);
/* Warm caches and CPU frequency before a series of rounds (runs n/10 iterations). */
void rtg_clock_cost_warmup(const rtg_clock *c, long n);
/* Same as rtg_clock_cost_ns; also stores each round's cost in per_round[rounds]
 * (may be NULL). */
double rtg_clock_cost_rounds_ns(const rtg_clock *c, long n, int rounds, double *per_round);

/* TSC only (no-op returning 0 for monotonic): re-anchor the TSC clock to
 * CLOCK_MONOTONIC and refine ns_per_tick over the longer baseline since the last
 * anchor. CLOCK_MONOTONIC is NTP-slewed (up to 500 ppm) and a 50 ms calibration
 * leaves ~1 ppm of rate error, so a TSC clock drifts from the deadline time base
 * by about 1 us per second unless re-anchored now and then (e.g. each second).
 * Not thread-safe: call it where no other thread reads *c at the same time.
 * Returns how far the clock was off (TSC clock minus monotonic) before, in ns. */
int64_t rtg_clock_resync(rtg_clock *c);

#endif

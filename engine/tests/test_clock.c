/* Unit tests of clock.c: names, monotonicity, TSC calibration against
 * CLOCK_MONOTONIC over 200 ms, and the timestamp cost measurement. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "clock.h"

static void test_names(void)
{
    rtg_clock_id id = RTG_CLOCK_TSC;
    CHECK(rtg_clock_parse("monotonic", &id) == 0 && id == RTG_CLOCK_MONOTONIC, "parse monotonic");
    CHECK(rtg_clock_parse("tsc", &id) == 0 && id == RTG_CLOCK_TSC, "parse tsc");
    CHECK(rtg_clock_parse("realtime", &id) == -1, "parse accepted realtime");
    CHECK(rtg_clock_parse("", &id) == -1, "parse accepted an empty name");
    CHECK(strcmp(rtg_clock_name(RTG_CLOCK_TSC), "tsc") == 0, "name of tsc");
    CHECK(strcmp(rtg_clock_name(RTG_CLOCK_MONOTONIC), "monotonic") == 0, "name of monotonic");
    rtg_clock c;
    char err[256] = "";
    CHECK(rtg_clock_init(&c, (rtg_clock_id)7, err, sizeof err) == -1 && err[0],
          "init of an unknown clock did not fail with a message");
}

static void check_non_decreasing(const rtg_clock *c, const char *name)
{
    int64_t prev = rtg_clock_now(c), backwards = 0, worst = 0;
    for (int i = 0; i < 2000000; i++) {
        int64_t t = rtg_clock_now(c);
        if (t < prev) {
            backwards++;
            if (prev - t > worst)
                worst = prev - t;
        }
        prev = t;
    }
    CHECK(backwards == 0, "%s went backwards %lld times (worst %lld ns)", name,
          (long long)backwards, (long long)worst);
}

/* 40 samples, 5 ms apart (200 ms or more on a loaded machine: a count, not a time,
 * so that load cannot leave too few): the TSC clock read between two
 * CLOCK_MONOTONIC reads must lie within 10 us of that bracket. */
static void check_tsc_agrees(const rtg_clock *c)
{
    int64_t worst = 0;
    int samples = 0;
    while (samples < 40) {
        int64_t a = rtg_mono_ns(), t = rtg_clock_now(c), b = rtg_mono_ns();
        int64_t off = t < a ? a - t : t > b ? t - b : 0;
        if (off > worst)
            worst = off;
        samples++;
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    printf("tsc vs monotonic (%d samples 5 ms apart): worst %lld ns, %.6f GHz\n", samples,
           (long long)worst, 1.0 / c->ns_per_tick);
    CHECK(worst <= 10000, "TSC clock off CLOCK_MONOTONIC by %lld ns", (long long)worst);
}

static void check_cost(const rtg_clock *c, const char *name)
{
    double rounds[5];
    double cost = rtg_clock_cost_rounds_ns(c, 1000000, 5, rounds);
    printf("timestamp cost %s: %.2f ns (rounds %.2f %.2f %.2f %.2f %.2f)\n", name, cost,
           rounds[0], rounds[1], rounds[2], rounds[3], rounds[4]);
    /* a read through a system call (a clocksource the vDSO cannot read, as on a
     * BeagleBone's timer, or qemu-user) costs microseconds: bound 20 us */
    CHECK(cost > 0.0 && cost < 20000.0, "%s cost %.2f ns outside (0, 20000)", name, cost);
    double lo = rounds[0], hi = rounds[0];
    for (int i = 1; i < 5; i++) {
        lo = rounds[i] < lo ? rounds[i] : lo;
        hi = rounds[i] > hi ? rounds[i] : hi;
    }
    CHECK(lo <= cost && cost <= hi, "%s median %.2f outside the rounds' range", name, cost);
}

static void test_median(void)
{
    double odd[] = {5, 1, 4, 2, 3}, even[] = {10, 1, 3, 2};
    CHECK(rtg_median(odd, 5) == 3.0, "median of 1..5 is %g", rtg_median(odd, 5));
    CHECK(rtg_median(even, 4) == 2.5, "median of 1,2,3,10 is %g", rtg_median(even, 4));
    CHECK(odd[0] == 5 && even[0] == 10, "median reordered its input");
}

int main(void)
{
    test_names();
    test_median();
    char err[256];
    rtg_clock mono;
    CHECK(rtg_clock_init(&mono, RTG_CLOCK_MONOTONIC, err, sizeof err) == 0, "monotonic: %s", err);
    check_non_decreasing(&mono, "monotonic");
    check_cost(&mono, "monotonic");

    char why[256] = "";
    if (!rtg_tsc_invariant(why, sizeof why)) {
        CHECK(why[0] != '\0', "no reason given for a non-invariant TSC");
        rtg_clock tsc;
        CHECK(rtg_clock_init(&tsc, RTG_CLOCK_TSC, err, sizeof err) == -1,
              "TSC clock initialised although not invariant");
        printf("TSC checks skipped: %s\n", why);
        return check_done();
    }
    rtg_clock tsc;
    int64_t t0 = rtg_mono_ns();
    CHECK(rtg_clock_init(&tsc, RTG_CLOCK_TSC, err, sizeof err) == 0, "tsc: %s", err);
    int64_t took = rtg_mono_ns() - t0;
    CHECK(took >= 50000000 && took < 1000000000, "TSC calibration took %lld ns", (long long)took);
    CHECK(tsc.ns_per_tick > 0.01 && tsc.ns_per_tick < 10.0, "implausible TSC rate %g ns/tick",
          tsc.ns_per_tick);
    check_non_decreasing(&tsc, "tsc");
    check_tsc_agrees(&tsc);
    int64_t off = rtg_clock_resync(&tsc);
    printf("resync after the checks: TSC clock was %lld ns off\n", (long long)off);
    CHECK(off > -10000 && off < 10000, "resync found the TSC clock %lld ns off", (long long)off);
    check_tsc_agrees(&tsc);
    check_cost(&tsc, "tsc");
    return check_done();
}

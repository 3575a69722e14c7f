/* Unit tests of opts.c: generic parsing from a descriptor, defaults, ranges,
 * error sentences, CPU lists and the params block. */
#include <stdarg.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rt.h"
#include "test.h"

static const rtg_opt demo_opts[] = {
    {"interval-us", RTG_OPT_INT, "1000", 50, 1000000, NULL, "period"},
    {"duration-s", RTG_OPT_NUM, "10", 0.01, 100, NULL, "duration"},
    {"cycles", RTG_OPT_INT, NULL, 1, 1e12, NULL, "cycles"},
    {"clock", RTG_OPT_ENUM, "monotonic", 0, 0, "monotonic|tsc", "clock"},
    {"samples", RTG_OPT_STR, NULL, 0, 0, NULL, "file"},
    {"break", RTG_OPT_FLAG, NULL, 0, 0, NULL, "flag"},
    {"priority", RTG_OPT_INT, "90", 1, 99, NULL, "overrides the common default"},
    {0},
};

static int demo_run(const rtg_opts *o, rtg_result *r) { (void)o; (void)r; return 0; }

static const rtg_test demo = {.name = "demo", .summary = "a demo", .kind = RTG_KIND_LATENCY, .opts = demo_opts,
                                .flags = RTG_TEST_RT, .run = demo_run};

/* Parse a NULL-terminated argument list; returns the status, err filled. */
static int parse(rtg_opts *o, char *err, size_t len, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, len);
    for (char *a; (a = va_arg(ap, char *)) && argc < 32;)
        argv[argc++] = a;
    va_end(ap);
    return rtg_opts_parse(o, argc, argv, err, len);
}

static void test_defaults(void)
{
    rtg_opts *o = rtg_opts_new(&demo);
    CHECK_EQ_I(rtg_opt_int(o, "interval-us"), 1000);
    CHECK(rtg_opt_num(o, "duration-s") == 10.0, "duration default %g", rtg_opt_num(o, "duration-s"));
    CHECK(!rtg_opt_given(o, "cycles"), "cycles has no default");
    CHECK(strcmp(rtg_opt_str(o, "clock"), "monotonic") == 0, "clock default");
    CHECK(!rtg_opt_flag(o, "break"), "flag default off");
    CHECK_EQ_I(rtg_opt_int(o, "priority"), 90);          /* test's own definition wins */
    CHECK(strcmp(rtg_opt_str(o, "policy"), "fifo") == 0, "common policy default");
    CHECK(!rtg_opt_user(o, "interval-us"), "a default is not user-given");
    rtg_opts_free(o);
}

static void test_values(void)
{
    char err[512] = "";
    rtg_opts *o = rtg_opts_new(&demo);
#ifdef RTG_POSIX_ONLY   /* no CPU lists there: test_cpu_list checks the refusal */
    int rc = parse(o, err, sizeof err, "--interval-us", "250", "--duration-s=0.5", "--cycles", "1e6",
                   "--clock", "tsc", "--break", "--samples", "x.csv", (char *)NULL);
#else
    int rc = parse(o, err, sizeof err, "--interval-us", "250", "--duration-s=0.5", "--cycles", "1e6",
                   "--clock", "tsc", "--break", "--samples", "x.csv", "--cpus", "0", (char *)NULL);
#endif
    CHECK_EQ_I(rc, 0);
    CHECK_EQ_I(rtg_opt_int(o, "interval-us"), 250);
    CHECK(rtg_opt_user(o, "interval-us"), "user-given");
    CHECK(rtg_opt_num(o, "duration-s") == 0.5, "--opt=value form");
    CHECK_EQ_I(rtg_opt_int(o, "cycles"), 1000000);
    CHECK(strcmp(rtg_opt_str(o, "clock"), "tsc") == 0, "enum");
    CHECK(rtg_opt_flag(o, "break"), "flag");
#ifndef RTG_POSIX_ONLY
    int cpus[4];
    CHECK_EQ_I(rtg_opt_cpus(o, "cpus", cpus, 4), 1);
    CHECK_EQ_I(cpus[0], 0);
#endif
    rtg_json *p = rtg_opts_params(o);
    CHECK(rtg_j_type(rtg_j_get(p, "interval_us")) == RTG_J_INT, "ints are ints in params");
    CHECK(rtg_j_type(rtg_j_get(p, "duration_s")) == RTG_J_NUM, "nums are numbers");
    CHECK(rtg_j_type(rtg_j_get(p, "break")) == RTG_J_BOOL, "flags are bools");
#ifndef RTG_POSIX_ONLY
    CHECK(rtg_j_type(rtg_j_get(p, "cpus")) == RTG_J_ARR, "cpu list is an array");
#endif
    CHECK(rtg_j_get(p, "no_mlock") != NULL, "common options are in params");
    rtg_j_free(p);
    rtg_opts_free(o);
}

/* Each bad input gives status 2 and a sentence naming the option. */
static void expect_usage(const char *needle, ...)
{
    char err[512] = "";
    char *argv[8];
    int argc = 0;
    va_list ap;
    va_start(ap, needle);
    for (char *a; (a = va_arg(ap, char *)) && argc < 8;)
        argv[argc++] = a;
    va_end(ap);
    rtg_opts *o = rtg_opts_new(&demo);
    int rc = rtg_opts_parse(o, argc, argv, err, sizeof err);
    CHECK_EQ_I(rc, RTG_EXIT_USAGE);
    CHECK(strstr(err, needle) != NULL, "error '%s' does not mention '%s'", err, needle);
    CHECK(err[strlen(err) - 1] == '.', "error '%s' is not one sentence", err);
    rtg_opts_free(o);
}

/* Time options take units: the option's own unit when bare, any of ns..d with one. */
static void test_units(void)
{
    char err[512] = "";
    rtg_opts *o = rtg_opts_new(&demo);
    CHECK_EQ_I(parse(o, err, sizeof err, "--duration-s", "1500ms", "--interval-us", "2ms", (char *)NULL), 0);
    CHECK(rtg_opt_num(o, "duration-s") == 1.5, "1500ms is 1.5 s, got %g", rtg_opt_num(o, "duration-s"));
    CHECK_EQ_I(rtg_opt_int(o, "interval-us"), 2000);
    rtg_opts_free(o);
    o = rtg_opts_new(&demo);
    CHECK_EQ_I(parse(o, err, sizeof err, "--duration-s", "1m", "--interval-us", "500", (char *)NULL), 0);
    CHECK(rtg_opt_num(o, "duration-s") == 60.0, "1m is 60 s, got %g", rtg_opt_num(o, "duration-s"));
    CHECK_EQ_I(rtg_opt_int(o, "interval-us"), 500);
    rtg_opts_free(o);
}

static void test_errors(void)
{
    expect_usage("out of range 50..1000000", "--interval-us", "10", (char *)NULL);
    expect_usage("unknown option --nope", "--nope", "1", (char *)NULL);
    expect_usage("needs a value", "--interval-us", (char *)NULL);
    expect_usage("not a whole number", "--interval-us", "12x", (char *)NULL);
    expect_usage("not a whole number", "--interval-us", "100.5", (char *)NULL);
    expect_usage("is not a time", "--duration-s", "abc", (char *)NULL);
    expect_usage("not a whole number of its unit", "--interval-us", "100500ns", (char *)NULL);
    expect_usage("one of monotonic|tsc", "--clock", "hpet", (char *)NULL);
#ifndef RTG_POSIX_ONLY
    expect_usage("does not exist", "--cpus", "4000", (char *)NULL);
    expect_usage("not a CPU list", "--cpus", "1-", (char *)NULL);
#endif
    expect_usage("takes no value", "--break=1", (char *)NULL);
    expect_usage("unexpected argument", "stray", (char *)NULL);
    expect_usage("out of range 1..99", "--priority", "0", (char *)NULL);
}

#ifdef RTG_POSIX_ONLY
/* No affinity: any --cpus is refused with the reason; the engine's one "CPU" is
 * 0 on a uniprocessor, else -1 (not pinned). */
static void test_cpu_list(void)
{
    expect_usage("--cpus is unavailable in this build", "--cpus", "0", (char *)NULL);
    int allowed[RTG_MAX_CPUS];
    CHECK_EQ_I(rtg_allowed_cpus(allowed, RTG_MAX_CPUS), 1);
    CHECK_EQ_I(allowed[0], sysconf(_SC_NPROCESSORS_ONLN) == 1 ? 0 : -1);
    char err[256] = "";
    CHECK(rtg_pin_cpu(-1, err, sizeof err) == 0, "not pinning always works");
    CHECK(rtg_pin_cpu(1, err, sizeof err) != 0 && strstr(err, "no thread affinity"), "pinning is refused: %s", err);
}
#else
static void test_cpu_list(void)
{
    int allowed[RTG_MAX_CPUS], cpus[RTG_MAX_CPUS];
    char err[256], text[64];
    int n = rtg_allowed_cpus(allowed, RTG_MAX_CPUS);
    CHECK(n >= 1, "at least one allowed CPU");
    snprintf(text, sizeof text, "%d-%d", allowed[0], allowed[n - 1]);
    int got = rtg_cpu_list_parse(text, "--cpus", cpus, RTG_MAX_CPUS, err, sizeof err);
    if (allowed[n - 1] - allowed[0] + 1 == n) {
        CHECK_EQ_I(got, n);
        CHECK_EQ_I(cpus[0], allowed[0]);
    }
    /* duplicates collapse and the result is ascending */
    snprintf(text, sizeof text, "%d,%d,%d", allowed[0], allowed[0], allowed[0]);
    CHECK_EQ_I(rtg_cpu_list_parse(text, "--cpus", cpus, RTG_MAX_CPUS, err, sizeof err), 1);
}
#endif

static void test_bounds_text(void)
{
    char b[32];
    CHECK(strcmp(rtg_fmt_bound(1000000, b, sizeof b), "1000000") == 0, "got %s", b);
    CHECK(strcmp(rtg_fmt_bound(0.01, b, sizeof b), "0.01") == 0, "got %s", b);
}

int main(void)
{
    test_defaults();
    test_values();
    test_units();
    test_errors();
    test_cpu_list();
    test_bounds_text();
    return check_done();
}

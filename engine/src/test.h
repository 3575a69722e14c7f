/* test: the descriptor every engine test exports (its kind, summary, options,
 * metrics and availability), its options and its result. registry.h lists the
 * tests; main.c builds its table from that list, prints the catalogue
 * (--list --json, catalogue.c), parses and range-checks options
 * generically from the descriptor, records every option in effect (defaults
 * included) under "params" (name with '-' turned into '_'), applies the common
 * real-time setup (rt.h) unless the test opts out, runs the test and prints the
 * one JSON document. */
#ifndef RTG_TEST_H
#define RTG_TEST_H
#include <stdbool.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include "json.h"

typedef enum {
    RTG_OPT_INT,      /* int64 within [min,max] */
    RTG_OPT_NUM,      /* double within [min,max] */
    RTG_OPT_STR,      /* free string (file names) */
    RTG_OPT_ENUM,     /* one of choices, "a|b|c" */
    RTG_OPT_CPUS,     /* CPU list "0-3,6"; each CPU must exist and be allowed */
    RTG_OPT_FLAG      /* no value; true when given */
} rtg_opt_type;

typedef struct {
    const char *name;      /* without leading "--", e.g. "interval-us" */
    rtg_opt_type type;
    const char *def;       /* default as text; NULL = unset (optional) */
    double min, max;       /* range for INT and NUM */
    const char *choices;   /* ENUM: "monotonic|tsc"; STR: its metavar, e.g. "HOST:PORT" (FILE if NULL) */
    const char *help;      /* one line; the range and default are printed by --help */
} rtg_opt;

#define RTG_MAX_CPUS 1024

/* parsed option values, looked up by name */
typedef struct rtg_opts rtg_opts;
bool rtg_opt_given(const rtg_opts *o, const char *name);   /* set by user or default */
int64_t rtg_opt_int(const rtg_opts *o, const char *name);
double rtg_opt_num(const rtg_opts *o, const char *name);
const char *rtg_opt_str(const rtg_opts *o, const char *name); /* STR/ENUM; NULL if unset */
bool rtg_opt_flag(const rtg_opts *o, const char *name);
/* CPUS: number of CPUs, and up to max of them in cpus[] ascending */
int rtg_opt_cpus(const rtg_opts *o, const char *name, int *cpus, int max);
/* true only when the user gave the option on the command line (not a default) */
bool rtg_opt_user(const rtg_opts *o, const char *name);

/* Result of one run; main.c turns it into the document
 * {"schema":1,"test":..,"ok":..,"interrupted":..,"params":{..},"env":{..},
 *  "metrics":{..},"verdicts":{..}} plus "error" when not ok. */
typedef struct {
    rtg_json *env;        /* object; main fills the common fields */
    rtg_json *metrics;    /* object: name -> scalar | dist | series */
    rtg_json *verdicts;   /* object: name -> {"pass": bool, "detail": str} */
    rtg_json *extra;      /* object: further top-level sections (e.g. "physics",
                             "events"); main copies each of its keys to the top level */
    char error[512];      /* set with rtg_fail() */
} rtg_result;

/* Exit statuses (and run-function return values) */
enum {
    RTG_EXIT_OK = 0,
    RTG_EXIT_FAIL = 1,        /* the run could not be done; error says why */
    RTG_EXIT_USAGE = 2,       /* bad option/test; error says what to do */
    RTG_EXIT_VERDICT = 3,     /* measured, but a limit the user set was broken */
    RTG_EXIT_INTERRUPTED = 130
};

/* Record an error sentence; returns status for `return rtg_fail(res, RTG_EXIT_FAIL, ...)` */
int rtg_fail(rtg_result *res, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void rtg_verdict(rtg_result *res, const char *name, bool pass, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Set by SIGINT/SIGTERM/SIGHUP (main installs the handler). Tests poll it and stop
 * early, keeping what was measured; main then marks the run interrupted. */
extern volatile sig_atomic_t rtg_stop;

/* What a test is for; `--list --json` names it (rtg_kind_name). */
typedef enum {
    RTG_KIND_LATENCY,           /* wake-up latency of periodic threads */
    RTG_KIND_MICRO_PERFORMANCE, /* time of one operation of the system, as distributions */
    RTG_KIND_MICRO_BEHAVIOUR,   /* does the system behave as a real-time system must (verdicts) */
    RTG_KIND_APPLICATION,       /* a real workload, paced or as fast as possible */
    RTG_KIND_LOOP,              /* a closed loop with a device across a link */
    RTG_KIND_INSTRUMENT         /* checks the measuring itself: timestamp cost, known disturbance */
} rtg_kind;
const char *rtg_kind_name(rtg_kind k);

typedef enum {
    RTG_METRIC_DISTRIBUTION,    /* rtg_j_dist: count, min, avg, percentiles, max, histogram */
    RTG_METRIC_SCALAR,          /* rtg_j_scalar_*: {"unit", "value"} */
    RTG_METRIC_SERIES           /* rtg_j_series: one value per window */
} rtg_metric_kind;

/* Emitted also (or, for a name never emitted alone, only) once per thread as
 * NAME#i, i the thread's index from 0. */
#define RTG_METRIC_PER_THREAD 1u
/* Emitted only under some options or on some systems; help says when. */
#define RTG_METRIC_CONDITIONAL 2u
/* Always emitted, except in the POSIX-only build, which cannot measure it. */
#ifdef RTG_POSIX_ONLY
#define RTG_METRIC_LINUX RTG_METRIC_CONDITIONAL
#else
#define RTG_METRIC_LINUX 0u
#endif

typedef struct {
    const char *name;          /* key under "metrics" */
    rtg_metric_kind kind;
    const char *unit;          /* as written in the metric: "ns", "count", ... */
    unsigned flags;            /* RTG_METRIC_* */
    const char *help;          /* one line: what the figure means */
} rtg_metric;

typedef struct {
    const char *name;          /* engine test name, e.g. "latency" */
    const char *summary;       /* one line for --list */
    rtg_kind kind;
    const rtg_opt *opts;       /* test-specific options, terminated by {0} */
    const rtg_metric *metrics; /* every metric it may emit, terminated by {0} */
    unsigned flags;            /* RTG_TEST_* */
    /* NULL when the test can run here; otherwise writes a sentence "unavailable
     * here because ..." into why and returns it. A NULL hook: always available. */
    const char *(*unavailable)(char *why, size_t len);
    int (*run)(const rtg_opts *o, rtg_result *res);  /* returns an RTG_EXIT_* */
} rtg_test;

/* `--list --json`: every test of the NULL-terminated table with its kind,
 * summary, availability, options (common ones included) and metrics. */
rtg_json *rtg_catalogue_json(const rtg_test *const *tests);
/* Number of options of a parsed set and the i-th one's definition (the
 * effective table: the test's own, then the common ones it takes). */
int rtg_opts_count(const rtg_opts *o);
const rtg_opt *rtg_opts_def(const rtg_opts *o, int i);

/* The test uses the common RT options (--policy --priority --cpus
 * --allow-fallback --no-mlock) and main applies policy/mlockall before run.
 * A test may redefine a common option in its own table (e.g. another default
 * --priority); its own definition wins. */
#define RTG_TEST_RT 1u
/* With RTG_TEST_RT: the test takes no --cpus (it has its own CPU option). */
#define RTG_TEST_NO_CPUS 2u

/* ---- option parsing (opts.c), used by main.c and the unit tests ---- */

/* Options of test t with their defaults applied; NULL on allocation failure. */
rtg_opts *rtg_opts_new(const rtg_test *t);
void rtg_opts_free(rtg_opts *o);
/* Parse "--name value" / "--name=value" / "--flag" arguments. Returns 0, or
 * RTG_EXIT_USAGE with one sentence (what is wrong, what to do) in err. */
int rtg_opts_parse(rtg_opts *o, int argc, char **argv, char *err, size_t errlen);
/* {"option_name": typed value, ...} for every option, defaults included; an
 * optional option that is unset is null, a flag false. */
rtg_json *rtg_opts_params(const rtg_opts *o);
/* `TEST --help`: every option with its type, range, default and help line. */
void rtg_opts_help(FILE *f, const rtg_test *t);
/* Parse a CPU list "0-3,6" into ascending unique cpus[]; each CPU must exist
 * and be in the process's affinity mask. Returns the count, or -1 with a
 * sentence in err (naming the option `what`). */
int rtg_cpu_list_parse(const char *text, const char *what, int *cpus, int max,
                       char *err, size_t errlen);
/* Shortest text for an option bound or default: 1000000 rather than 1e+06. */
const char *rtg_fmt_bound(double v, char *buf, size_t len);

#endif

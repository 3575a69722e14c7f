/* rtgauge-engine TEST [--option value ...]: parse the options from the test's
 * descriptor, set up real-time conditions, run the test, print one JSON
 * document (the contract in docs/engine.md). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "rt.h"
#include "stop.h"
#include "stall.h"
#include "test.h"
#include "availability.h"
#include "portable.h"
#include "output.h"

#define RTG_ENGINE_VERSION "0.1.0"

/* The one table of tests, from the registry (registry.h). */
#define X(id) extern const rtg_test rtg_test_##id;
#include "registry.h"
#undef X

static const rtg_test *const tests[] = {
#define X(id) &rtg_test_##id,
#include "registry.h"
#undef X
    NULL,
};

static const rtg_test *find_test(const char *name)
{
    for (int i = 0; tests[i]; i++)
        if (strcmp(tests[i]->name, name) == 0)
            return tests[i];
    return NULL;
}

/* SIGINT/SIGTERM/SIGHUP and the parent's death stop the run (stop.h). */
static void install_stop_handlers(void)
{
    rtg_stop_install();
}

/* The compact text of a JSON value (the writer ends it with a newline). */
static char *json_text(const rtg_json *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    rtg_j_write(m, v);
    fclose(m);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    return buf;
}

static void write_member(FILE *f, const char *key, const rtg_json *v, bool *first)
{
    rtg_json *k = rtg_j_str(key);
    char *kt = json_text(k), *vt = json_text(v);
    fprintf(f, "%s%s:%s", *first ? "" : ",", kt ? kt : "\"?\"", vt ? vt : "null");
    *first = false;
    free(kt);
    free(vt);
    rtg_j_free(k);
}

/* The document: fixed members in contract order, then the test's extra
 * sections spliced in at the top level (the members of res->extra). */
static void write_document(FILE *f, const char *test, int status, bool interrupted,
                           rtg_json *params, const rtg_result *res)
{
    bool ok = status == RTG_EXIT_OK || status == RTG_EXIT_VERDICT ||
              status == RTG_EXIT_INTERRUPTED;
    bool first = true;
    rtg_json *tmp;
    fputc('{', f);
    write_member(f, "schema", tmp = rtg_j_int(1), &first), rtg_j_free(tmp);
    write_member(f, "test", tmp = test ? rtg_j_str(test) : rtg_j_null(), &first), rtg_j_free(tmp);
    write_member(f, "ok", tmp = rtg_j_bool(ok), &first), rtg_j_free(tmp);
    write_member(f, "interrupted", tmp = rtg_j_bool(interrupted), &first), rtg_j_free(tmp);
    if (!ok)
        write_member(f, "error", tmp = rtg_j_str(res->error), &first), rtg_j_free(tmp);
    if (params)
        write_member(f, "params", params, &first);
    if (res->env)
        write_member(f, "env", res->env, &first);
    if (res->metrics)
        write_member(f, "metrics", res->metrics, &first);
    if (res->verdicts)
        write_member(f, "verdicts", res->verdicts, &first);
    char *extra = res->extra ? json_text(res->extra) : NULL;
    if (extra && strlen(extra) > 2) {
        extra[strlen(extra) - 1] = '\0';          /* drop the closing brace */
        fprintf(f, ",%s", extra + 1);             /* and the opening one */
    }
    free(extra);
    fputs("}\n", f);
    fflush(f);
}

/* A usage or setup error before a run: sentence on stderr, error doc on stdout. */
static int fail_early(const char *test, int status, const char *msg)
{
    rtg_result res = {0};
    snprintf(res.error, sizeof res.error, "%s", msg);
    fprintf(stderr, "rtgauge-engine: %s\n", msg);
    write_document(stdout, test, status, false, NULL, &res);
    return status;
}

static void print_list(void)
{
    for (int i = 0; tests[i]; i++) {
        char why[256];
        const char *no = rtg_test_unavailable(tests[i], why, sizeof why);
        printf("%-15s %-18s %s%s%s%s\n", tests[i]->name, rtg_kind_name(tests[i]->kind),
               tests[i]->summary, no ? " (" : "", no ? no : "", no ? ")" : "");
    }
}

/* --list --json: the catalogue, for programs (docs/engine.md). */
static int print_list_json(void)
{
    rtg_json *c = rtg_catalogue_json(tests);
    if (!c)
        return fail_early(NULL, RTG_EXIT_FAIL, "out of memory while listing the tests.");
    rtg_j_write(stdout, c);
    rtg_j_free(c);
    return RTG_EXIT_OK;
}

static void print_usage(FILE *f)
{
    fprintf(f, "usage: rtgauge-engine TEST [--option value ...]\n"
               "       rtgauge-engine --list [--json] | --version | TEST --help\n"
               "       rtgauge-engine TEST --dry-run [--option value ...]  (check options only)\n"
               "Prints one JSON document per run (see docs/engine.md).\n");
}

static bool wants_help(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

/* --dry-run anywhere after TEST: check the options and print the params that
 * would be in effect, without measuring (how the orchestrator validates a
 * profile before it stores anything). Removes the word from argv. */
static bool take_dry_run(int *argc, char **argv)
{
    bool found = false;
    int j = 2;
    for (int i = 2; i < *argc; i++) {
        if (strcmp(argv[i], "--dry-run") == 0)
            found = true;
        else
            argv[j++] = argv[i];
    }
    *argc = j;
    return found;
}

typedef struct {
    int dma_fd;
} rt_setup;

/* Policy (on the main thread, which RT tests run on or spawn from), mlockall and
 * /dev/cpu_dma_latency, with what was obtained written to env. Returns
 * RTG_EXIT_OK or RTG_EXIT_FAIL with the sentence in res. */
static int setup_rt(const rtg_test *t, const rtg_opts *o, rtg_result *res, rt_setup *rs)
{
    rtg_json *env = res->env;
    rs->dma_fd = -1;
    bool rt = t->flags & RTG_TEST_RT;
    rtg_sched s = {0};
    if (rt) {
        rtg_policy pol;
        char err[512];
        rtg_policy_parse(rtg_opt_str(o, "policy"), &pol);
        if (rtg_sched_apply(&s, pol, (int)rtg_opt_int(o, "priority"),
                            rtg_opt_flag(o, "allow-fallback"), err, sizeof err) != 0)
            return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    }
    rtg_j_set(env, "policy", rtg_j_str(rtg_policy_name(s.policy)));
    rtg_j_set(env, "priority", rtg_j_int(s.priority));
    rtg_j_set(env, "fallback", rtg_j_bool(s.fallback));
    if (s.fallback)
        rtg_j_set(env, "fallback_reason", rtg_j_str(s.why));

    int cpus[RTG_MAX_CPUS];
    int n = (rt && !(t->flags & RTG_TEST_NO_CPUS) && rtg_opt_given(o, "cpus"))
                ? rtg_opt_cpus(o, "cpus", cpus, RTG_MAX_CPUS)
                : rtg_allowed_cpus(cpus, RTG_MAX_CPUS);
    rtg_json *jc = rtg_j_set(env, "cpus", rtg_j_arr());
    for (int i = 0; i < n && i < RTG_MAX_CPUS; i++)
        rtg_j_push(jc, rtg_j_int(cpus[i]));

    bool mlocked = false;
    if (rt && !rtg_opt_flag(o, "no-mlock")) {
        mlocked = rtg_lock_memory() == 0;
        if (!mlocked)
            rtg_j_set(env, "mlock_error", rtg_j_str(strerror(errno)));
    }
    rtg_j_set(env, "mlocked", rtg_j_bool(mlocked));

    /* The clock a test times with (--clock where it has one) and its cost. */
    rtg_clock_id cid = RTG_CLOCK_MONOTONIC;
    const char *cname = NULL;
    for (const rtg_opt *d = t->opts; d && d->name; d++)
        if (strcmp(d->name, "clock") == 0)
            cname = rtg_opt_str(o, "clock");
    if (cname)
        rtg_clock_parse(cname, &cid);
    rtg_clock c;
    char err[256];
    if (rtg_clock_init(&c, cid, err, sizeof err) != 0)
        return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
    rtg_j_set(env, "clock", rtg_j_str(rtg_clock_name(cid)));
    /* 2 x 5 x 5000 timestamps: about 2 ms of CPU, small beside a run's own cost
     * (the overhead test measures the cost properly). */
    rtg_j_set(env, "timestamp_cost_ns", rtg_j_num(rtg_clock_cost_ns(&c, 5000, 5)));

    char why[256] = "unavailable: not a real-time test";
    if (rt)
        rs->dma_fd = rtg_dma_latency_hold(why, sizeof why);
    rtg_j_set(env, "dma_latency", rtg_j_str(why));
    rtg_env_system(env);
    return RTG_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return fail_early(NULL, RTG_EXIT_USAGE,
                          "no test given; run rtgauge-engine --list to see the tests.");
    }
    if (strcmp(argv[1], "--list") == 0) {
        if (argc > 2 && strcmp(argv[2], "--json") == 0)
            return print_list_json();
        print_list();
        return RTG_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("rtgauge-engine %s\n", RTG_ENGINE_VERSION);
        return RTG_EXIT_OK;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(stdout);
        printf("\ntests:\n");
        print_list();
        return RTG_EXIT_OK;
    }
    const rtg_test *t = find_test(argv[1]);
    char msg[512];
    if (!t) {
        snprintf(msg, sizeof msg, "unknown test '%s'; run rtgauge-engine --list to see the tests.", argv[1]);
        return fail_early(NULL, RTG_EXIT_USAGE, msg);
    }
    if (wants_help(argc, argv)) {
        rtg_opts_help(stdout, t);
        return RTG_EXIT_OK;
    }
    bool dry_run = take_dry_run(&argc, argv);
    char why[256];
    const char *no = rtg_test_unavailable(t, why, sizeof why);
    if (no) {
        snprintf(msg, sizeof msg, "the %s test is %s; run rtgauge-engine --list to see the tests available here.",
                 t->name, no);
        return fail_early(t->name, RTG_EXIT_FAIL, msg);
    }
    rtg_opts *o = rtg_opts_new(t);
    if (!o)
        return fail_early(t->name, RTG_EXIT_FAIL, "out of memory while parsing options.");
    if (rtg_opts_parse(o, argc - 2, argv + 2, msg, sizeof msg) != 0) {
        rtg_opts_free(o);
        return fail_early(t->name, RTG_EXIT_USAGE, msg);
    }
    if (dry_run) {
        rtg_result res = {0};
        rtg_json *params = rtg_opts_params(o);
        write_document(stdout, t->name, RTG_EXIT_OK, false, params, &res);
        rtg_j_free(params);
        rtg_opts_free(o);
        return RTG_EXIT_OK;
    }
    FILE *out = stdout;
    const char *out_path = rtg_opt_str(o, "out");
    rtg_output out_file = {0};   /* written whole at the end, renamed over --out (output.h) */
    if (out_path) {
        if (rtg_output_open(&out_file, out_path, RTG_OUTPUT_WHOLE, why, sizeof why) != 0) {
            snprintf(msg, sizeof msg, "cannot write --out %.200s (%s); give a regular file path or -.", out_path,
                     why);
            rtg_opts_free(o);
            return fail_early(t->name, RTG_EXIT_FAIL, msg);
        }
        out = out_file.f;
    }
    install_stop_handlers();

    rtg_result res = {0};
    res.env = rtg_j_obj();
    res.metrics = rtg_j_obj();
    res.verdicts = rtg_j_obj();
    res.extra = rtg_j_obj();
    rt_setup rs;
    int status = setup_rt(t, o, &res, &rs);
    if (status == RTG_EXIT_OK && !rtg_stop)
        status = t->run(o, &res);
    rtg_stall_finish(&res);   /* stops the host-stall observer a test started (stall.h) */
    rtg_dma_latency_release(rs.dma_fd);
    bool interrupted = rtg_stop != 0;
    if (interrupted && (status == RTG_EXIT_OK || status == RTG_EXIT_VERDICT))
        status = RTG_EXIT_INTERRUPTED;
    if (status != RTG_EXIT_OK && status != RTG_EXIT_VERDICT && status != RTG_EXIT_INTERRUPTED) {
        if (!res.error[0])
            snprintf(res.error, sizeof res.error, "the %s test failed without saying why.", t->name);
        fprintf(stderr, "rtgauge-engine: %s\n", res.error);
    }
    rtg_json *params = rtg_opts_params(o);
    write_document(out, t->name, status, interrupted, params, &res);
    if (out_path && rtg_output_close(&out_file, true, why, sizeof why) != 0) {
        fprintf(stderr, "rtgauge-engine: cannot write --out %.200s (%s); the document is lost.\n", out_path, why);
        if (status == RTG_EXIT_OK || status == RTG_EXIT_VERDICT)
            status = RTG_EXIT_FAIL;
    }
    rtg_j_free(params);
    rtg_j_free(res.env);
    rtg_j_free(res.metrics);
    rtg_j_free(res.verdicts);
    rtg_j_free(res.extra);
    rtg_opts_free(o);
    return status;
}

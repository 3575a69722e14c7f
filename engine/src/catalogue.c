/* catalogue: `rtgauge-engine --list --json`, every test described from its
 * descriptor (test.h) — kind, summary, availability here, the options it takes
 * (common ones included, as --help shows them) and the metrics it emits. The
 * orchestrator reads this instead of restating names, ranges or kinds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "availability.h"
#include "portable.h"

static const struct {
    rtg_kind kind;
    const char *name, *meaning;
} kinds[] = {
    {RTG_KIND_LATENCY, "latency", "wake-up latency of periodic real-time threads"},
    {RTG_KIND_MICRO_PERFORMANCE, "micro-performance",
     "the time one operation of the system takes (switch, preemption, semaphore, ...), as distributions"},
    {RTG_KIND_MICRO_BEHAVIOUR, "micro-behaviour",
     "whether the system behaves as a real-time system must (verdicts), or where its scheduling breaks down"},
    {RTG_KIND_APPLICATION, "application", "a real workload, paced at a period or run as fast as possible"},
    {RTG_KIND_LOOP, "loop", "a closed loop with a device across a link, one frame per period"},
    {RTG_KIND_INSTRUMENT, "instrument",
     "checks the measuring itself: the cost of a timestamp, a disturbance with known ground truth"},
};

const char *rtg_kind_name(rtg_kind k)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].kind == k)
            return kinds[i].name;
    return "unknown";
}

static const char *opt_type(rtg_opt_type t)
{
    switch (t) {
    case RTG_OPT_INT: return "int";
    case RTG_OPT_NUM: return "num";
    case RTG_OPT_STR: return "str";
    case RTG_OPT_ENUM: return "choice";
    case RTG_OPT_CPUS: return "cpus";
    case RTG_OPT_FLAG: return "flag";
    }
    return "unknown";
}

static const char *metric_kind(rtg_metric_kind k)
{
    switch (k) {
    case RTG_METRIC_DISTRIBUTION: return "distribution";
    case RTG_METRIC_SCALAR: return "scalar";
    case RTG_METRIC_SERIES: return "series";
    }
    return "unknown";
}

/* An INT bound or default as an integer when it is one, else a number. */
static rtg_json *int_value(double v)
{
    if (v == floor(v) && fabs(v) < 9.2e18)
        return rtg_j_int((int64_t)v);
    return rtg_j_num(v);
}

static rtg_json *opt_default(const rtg_opt *d)
{
    if (d->type == RTG_OPT_FLAG)
        return rtg_j_bool(false);
    if (!d->def)
        return rtg_j_null();
    if (d->type == RTG_OPT_INT)
        return int_value(strtod(d->def, NULL));
    if (d->type == RTG_OPT_NUM)
        return rtg_j_num(strtod(d->def, NULL));
    return rtg_j_str(d->def);
}

static rtg_json *opt_json(const rtg_opt *d)
{
    rtg_json *j = rtg_j_obj();
    rtg_j_set(j, "name", rtg_j_str(d->name));
    rtg_j_set(j, "type", rtg_j_str(opt_type(d->type)));
    rtg_j_set(j, "default", opt_default(d));
    bool ranged = d->type == RTG_OPT_INT || d->type == RTG_OPT_NUM;
    rtg_j_set(j, "min", !ranged ? rtg_j_null() : d->type == RTG_OPT_INT ? int_value(d->min) : rtg_j_num(d->min));
    rtg_j_set(j, "max", !ranged ? rtg_j_null() : d->type == RTG_OPT_INT ? int_value(d->max) : rtg_j_num(d->max));
    if (d->type == RTG_OPT_ENUM && d->choices) {
        rtg_json *c = rtg_j_set(j, "choices", rtg_j_arr());
        const char *p = d->choices;
        while (*p) {
            size_t n = strcspn(p, "|");
            rtg_j_push(c, rtg_j_strf("%.*s", (int)n, p));
            p += n + (p[n] == '|');
        }
    } else {
        rtg_j_set(j, "choices", rtg_j_null());
    }
    rtg_j_set(j, "help", rtg_j_str(d->help ? d->help : ""));
    return j;
}

static rtg_json *metric_json(const rtg_metric *m)
{
    rtg_json *j = rtg_j_obj();
    rtg_j_set(j, "name", rtg_j_str(m->name));
    rtg_j_set(j, "kind", rtg_j_str(metric_kind(m->kind)));
    rtg_j_set(j, "unit", rtg_j_str(m->unit));
    rtg_j_set(j, "per_thread", rtg_j_bool(m->flags & RTG_METRIC_PER_THREAD));
    rtg_j_set(j, "conditional", rtg_j_bool(m->flags & RTG_METRIC_CONDITIONAL));
    rtg_j_set(j, "help", rtg_j_str(m->help));
    return j;
}

static rtg_json *test_json(const rtg_test *t)
{
    rtg_json *j = rtg_j_obj();
    rtg_j_set(j, "name", rtg_j_str(t->name));
    rtg_j_set(j, "kind", rtg_j_str(rtg_kind_name(t->kind)));
    rtg_j_set(j, "summary", rtg_j_str(t->summary));
    char why[256];
    const char *no = rtg_test_unavailable(t, why, sizeof why);
    rtg_json *a = rtg_j_set(j, "availability", rtg_j_obj());
    rtg_j_set(a, "available", rtg_j_bool(no == NULL));
    rtg_j_set(a, "reason", no ? rtg_j_str(no) : rtg_j_null());
    rtg_json *opts = rtg_j_set(j, "options", rtg_j_arr());
    rtg_opts *o = rtg_opts_new(t);
    for (int i = 0; o && i < rtg_opts_count(o); i++)
        rtg_j_push(opts, opt_json(rtg_opts_def(o, i)));
    rtg_opts_free(o);
    rtg_json *ms = rtg_j_set(j, "metrics", rtg_j_arr());
    for (const rtg_metric *m = t->metrics; m && m->name; m++)
        rtg_j_push(ms, metric_json(m));
    return j;
}

rtg_json *rtg_catalogue_json(const rtg_test *const *tests)
{
    rtg_json *c = rtg_j_obj();
    if (!c)
        return NULL;
    rtg_j_set(c, "schema", rtg_j_int(1));
    rtg_json *k = rtg_j_set(c, "kinds", rtg_j_obj());
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        rtg_j_set(k, kinds[i].name, rtg_j_str(kinds[i].meaning));
    rtg_j_set(c, "per_thread",
              rtg_j_str("a metric with per_thread true is also emitted once per thread as NAME#i, i the "
                        "thread's index from 0 (the name alone is the figure over all threads, when it is emitted)"));
    rtg_j_set(c, "conditional",
              rtg_j_str("a metric with conditional true is emitted only under some options or on some systems; "
                        "its help says when"));
    rtg_json *arr = rtg_j_set(c, "tests", rtg_j_arr());
    for (int i = 0; tests[i]; i++)
        rtg_j_push(arr, test_json(tests[i]));
    return c;
}

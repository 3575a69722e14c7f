/* opts: generic option parsing from a test descriptor (test.h), the common
 * options every test shares, the params block and --help. Lives in the library
 * rather than main.c so the unit tests can link it. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"
#include "test.h"

#define MAX_OPTS 64

/* Options of every RTG_TEST_RT test. */
static const rtg_opt common_rt_opts[] = {
    {"policy", RTG_OPT_ENUM, "fifo", 0, 0, "other|fifo|rr",
     "scheduling policy of the measuring threads"},
    {"priority", RTG_OPT_INT, "80", 1, 99, NULL,
     "real-time priority of the measuring threads (ignored for other)"},
    {"cpus", RTG_OPT_CPUS, NULL, 0, 0, NULL,
     "CPUs to measure on, e.g. 0-3,6 (default: every CPU this process may use)"},
    {"allow-fallback", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "when fifo/rr is not permitted, measure as other and say so in env.fallback"},
    {"no-mlock", RTG_OPT_FLAG, NULL, 0, 0, NULL, "do not lock memory with mlockall"},
    {0},
};

/* Options of every test. */
static const rtg_opt common_opts[] = {
    {"out", RTG_OPT_STR, NULL, 0, 0, NULL, "write the JSON document to FILE instead of stdout"},
    {0},
};

typedef struct {
    const rtg_opt *def;
    bool set;          /* has a value (user or default) */
    bool user;         /* given on the command line */
    int64_t i;
    double d;
    char *s;
    bool flag;
    int ncpus;
    int *cpus;
} opt_val;

struct rtg_opts {
    int n;
    opt_val v[MAX_OPTS];
};

const char *rtg_fmt_bound(double v, char *buf, size_t len)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, len, "%.0f", v);
    else
        snprintf(buf, len, "%g", v);
    return buf;
}

static opt_val *find(const rtg_opts *o, const char *name)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->v[i].def->name, name) == 0)
            return (opt_val *)&o->v[i];
    return NULL;
}

/* Accessors are called with names from the test's own table; a wrong name is a
 * programming error, so fail loudly rather than measure with a wrong value. */
static opt_val *must_find(const rtg_opts *o, const char *name)
{
    opt_val *v = find(o, name);
    if (!v) {
        fprintf(stderr, "rtgauge-engine: internal error: no option --%s in this test\n", name);
        abort();
    }
    return v;
}

static void add_table(rtg_opts *o, const rtg_opt *table, unsigned skip_cpus)
{
    for (const rtg_opt *d = table; d && d->name; d++) {
        if (skip_cpus && strcmp(d->name, "cpus") == 0)
            continue;
        if (find(o, d->name) || o->n >= MAX_OPTS)
            continue;     /* the test's own definition wins */
        o->v[o->n++].def = d;
    }
}

static const char *type_name(const rtg_opt *d)
{
    switch (d->type) {
    case RTG_OPT_INT: return "INT";
    case RTG_OPT_NUM: return "NUM";
    case RTG_OPT_STR: return d->choices ? d->choices : "FILE";   /* a text option's metavar */
    case RTG_OPT_ENUM: return "CHOICE";
    case RTG_OPT_CPUS: return "LIST";
    case RTG_OPT_FLAG: return "";
    }
    return "";
}

/* Seconds in one of a time unit's names (ns, us, µs, ms, s, m, h, d); 0 if text is none. */
static double unit_seconds(const char *text)
{
    static const struct { const char *name; double s; } units[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"\xc2\xb5s", 1e-6}, {"ms", 1e-3}, {"s", 1},
        {"m", 60}, {"h", 3600}, {"d", 86400},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(text, units[i].name) == 0)
            return units[i].s;
    return 0;
}

/* The unit a time option counts in, from the end of its name (duration-s, interval-us,
 * start-delay-ms, start-at-ns), in seconds; 0 for an option that is not a time. */
static double option_unit(const char *name)
{
    const char *dash = strrchr(name, '-');
    return dash ? unit_seconds(dash + 1) : 0;
}

/* Strict number parsing: the whole text must be a number. INT accepts plain
 * integers and integral forms like 1e6. A time option also takes a unit, as
 * `rtgauge run --duration` does: --duration-s 5m, --interval-us 1ms (converted to the
 * option's own unit; an INT must come out whole). */
static int parse_number(const opt_val *v, const char *text, double *out)
{
    char *end;
    errno = 0;
    if (!*text || isspace((unsigned char)*text))
        return -1;
    if (v->def->type == RTG_OPT_INT) {
        long long ll = strtoll(text, &end, 10);
        if (*end == '\0' && errno == 0) {
            *out = (double)ll;
            return 0;
        }
    }
    errno = 0;
    double d = strtod(text, &end);
    if (end == text || errno != 0 || !isfinite(d))
        return -1;
    if (*end != '\0') {
        double unit = option_unit(v->def->name), given = unit_seconds(end);
        if (unit == 0 || given == 0)
            return -1;
        d = d * given / unit;
        if (fabs(d - nearbyint(d)) <= 1e-9 * fmax(1.0, fabs(d)))
            d = nearbyint(d);   /* 1.1ms as µs is 1100, not 1100.0000000000002 */
    }
    if (v->def->type == RTG_OPT_INT && d != floor(d))
        return -1;
    *out = d;
    return 0;
}

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return RTG_EXIT_USAGE;
}

int rtg_cpu_list_parse(const char *text, const char *what, int *cpus, int max,
                       char *err, size_t errlen)
{
#ifdef RTG_POSIX_ONLY
    (void)text, (void)cpus, (void)max;
    snprintf(err, errlen, "%s is unavailable in this build: the POSIX-only engine cannot pin threads to CPUs "
             "(affinity is not POSIX); leave it out, or confine the process with the system's own tool.", what);
    return -1;
#endif
    static int allowed[RTG_MAX_CPUS];
    int nallowed = rtg_allowed_cpus(allowed, RTG_MAX_CPUS);
    long nconf = sysconf(_SC_NPROCESSORS_CONF);
    bool chosen[RTG_MAX_CPUS] = {false};
    const char *p = text;
    if (!*p)
        goto syntax;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            goto syntax;
        long lo = strtol(p, &end, 10), hi = lo;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto syntax;
            hi = strtol(p, &end, 10);
            p = end;
        }
        if (*p == ',')
            p++;
        else if (*p)
            goto syntax;
        if (hi < lo)
            goto syntax;
        for (long c = lo; c <= hi; c++) {
            if (c >= nconf || c >= RTG_MAX_CPUS) {
                snprintf(err, errlen, "%s %s names CPU %ld, which does not exist (this machine has CPUs 0-%ld); choose existing CPUs.",
                         what, text, c, nconf - 1);
                return -1;
            }
            bool ok = false;
            for (int k = 0; k < nallowed; k++)
                ok = ok || allowed[k] == c;
            if (!ok) {
                snprintf(err, errlen, "%s %s names CPU %ld, which this process may not use (offline or outside its affinity mask); choose allowed CPUs.",
                         what, text, c);
                return -1;
            }
            chosen[c] = true;
        }
    }
    int n = 0;
    for (int c = 0; c < RTG_MAX_CPUS; c++)
        if (chosen[c]) {
            if (n < max)
                cpus[n] = c;
            n++;
        }
    return n;
syntax:
    snprintf(err, errlen, "%s %s is not a CPU list; write CPUs like 0-3,6.", what, text);
    return -1;
}

/* Store text as the value of v; usage error sentence in err otherwise. */
static int set_value(opt_val *v, const char *text, char *err, size_t errlen)
{
    const rtg_opt *d = v->def;
    char a[32], b[32];
    switch (d->type) {
    case RTG_OPT_INT:
    case RTG_OPT_NUM: {
        double x;
        if (parse_number(v, text, &x) != 0 && option_unit(d->name) != 0)
            return bad(err, errlen, "--%s %s is not %s; give %s like %s, or with a unit "
                       "(ns, us, ms, s, m, h, d) like 500ms or 2m.", d->name, text,
                       d->type == RTG_OPT_INT ? "a whole number of its unit" : "a time",
                       d->type == RTG_OPT_INT ? "a whole number" : "a number",
                       d->def ? d->def : rtg_fmt_bound(d->min, a, sizeof a));
        if (parse_number(v, text, &x) != 0)
            return bad(err, errlen, "--%s %s is not %s; give %s like %s.", d->name, text,
                       d->type == RTG_OPT_INT ? "a whole number" : "a number",
                       d->type == RTG_OPT_INT ? "a whole number" : "a number",
                       d->def ? d->def : rtg_fmt_bound(d->min, a, sizeof a));
        if (x < d->min || x > d->max)
            return bad(err, errlen, "--%s %s is out of range %s..%s; choose a value in that range.",
                       d->name, text, rtg_fmt_bound(d->min, a, sizeof a),
                       rtg_fmt_bound(d->max, b, sizeof b));
        v->d = x;
        v->i = (int64_t)llround(x);
        break;
    }
    case RTG_OPT_ENUM: {
        size_t len = strlen(text);
        bool ok = false;
        for (const char *c = d->choices; c && *c;) {
            const char *bar = strchr(c, '|');
            size_t n = bar ? (size_t)(bar - c) : strlen(c);
            ok = ok || (n == len && strncmp(c, text, n) == 0);
            c = bar ? bar + 1 : c + n;
        }
        if (!ok)
            return bad(err, errlen, "--%s %s is not a valid choice; use one of %s.", d->name, text,
                       d->choices);
        free(v->s);
        v->s = strdup(text);
        break;
    }
    case RTG_OPT_STR:
        if (!*text)
            return bad(err, errlen, "--%s needs a non-empty value; give a file name.", d->name);
        free(v->s);
        v->s = strdup(text);
        break;
    case RTG_OPT_CPUS: {
        int *cpus = malloc(sizeof(int) * RTG_MAX_CPUS);
        char what[80];
        snprintf(what, sizeof what, "--%s", d->name);
        int n = cpus ? rtg_cpu_list_parse(text, what, cpus, RTG_MAX_CPUS, err, errlen) : -1;
        if (n < 0) {
            free(cpus);
            return RTG_EXIT_USAGE;
        }
        free(v->cpus);
        v->cpus = cpus;
        v->ncpus = n;
        free(v->s);
        v->s = strdup(text);
        break;
    }
    case RTG_OPT_FLAG:
        v->flag = true;
        break;
    }
    v->set = true;
    return 0;
}

rtg_opts *rtg_opts_new(const rtg_test *t)
{
    rtg_opts *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    add_table(o, t->opts, 0);
    if (t->flags & RTG_TEST_RT)
        add_table(o, common_rt_opts, t->flags & RTG_TEST_NO_CPUS);
    add_table(o, common_opts, 0);
    for (int i = 0; i < o->n; i++) {
        opt_val *v = &o->v[i];
        if (v->def->def && v->def->type != RTG_OPT_FLAG) {
            char err[256];
            if (set_value(v, v->def->def, err, sizeof err) != 0) {
                fprintf(stderr, "rtgauge-engine: internal error: bad default: %s\n", err);
                abort();
            }
        }
    }
    return o;
}

void rtg_opts_free(rtg_opts *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->n; i++) {
        free(o->v[i].s);
        free(o->v[i].cpus);
    }
    free(o);
}

int rtg_opts_parse(rtg_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return bad(err, errlen, "unexpected argument '%s'; options look like --name value (see --help).", arg);
        char name[128];
        const char *eq = strchr(arg + 2, '=');
        size_t n = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (n >= sizeof name)
            n = sizeof name - 1;
        memcpy(name, arg + 2, n);
        name[n] = '\0';
        opt_val *v = find(o, name);
        if (!v)
            return bad(err, errlen, "unknown option --%s; run with --help to see the options of this test.", name);
        const char *value;
        if (v->def->type == RTG_OPT_FLAG) {
            if (eq)
                return bad(err, errlen, "--%s takes no value; give it alone.", name);
            value = "";
        } else if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return bad(err, errlen, "--%s needs a value (%s); give one after it.", name,
                           type_name(v->def));
            value = argv[++i];
        }
        int rc = set_value(v, value, err, errlen);
        if (rc)
            return rc;
        v->user = true;
    }
    return 0;
}

rtg_json *rtg_opts_params(const rtg_opts *o)
{
    rtg_json *p = rtg_j_obj();
    for (int i = 0; i < o->n; i++) {
        const opt_val *v = &o->v[i];
        char key[128];
        snprintf(key, sizeof key, "%s", v->def->name);
        for (char *c = key; *c; c++)
            if (*c == '-')
                *c = '_';
        rtg_json *j;
        if (v->def->type == RTG_OPT_FLAG)
            j = rtg_j_bool(v->flag);
        else if (!v->set)
            j = rtg_j_null();
        else if (v->def->type == RTG_OPT_INT)
            j = rtg_j_int(v->i);
        else if (v->def->type == RTG_OPT_NUM)
            j = rtg_j_num(v->d);
        else if (v->def->type == RTG_OPT_CPUS) {
            j = rtg_j_arr();
            for (int k = 0; k < v->ncpus; k++)
                rtg_j_push(j, rtg_j_int(v->cpus[k]));
        } else
            j = rtg_j_str(v->s);
        rtg_j_set(p, key, j);
    }
    return p;
}

void rtg_opts_help(FILE *f, const rtg_test *t)
{
    rtg_opts *o = rtg_opts_new(t);
    fprintf(f, "usage: rtgauge-engine %s [--option value ...]\n%s\n\noptions:\n", t->name, t->summary);
    for (int i = 0; o && i < o->n; i++) {
        const rtg_opt *d = o->v[i].def;
        char left[96], a[32], b[32], range[160] = "";
        snprintf(left, sizeof left, "--%s %s", d->name, type_name(d));
        if (d->type == RTG_OPT_INT || d->type == RTG_OPT_NUM)
            snprintf(range, sizeof range, "range %s..%s", rtg_fmt_bound(d->min, a, sizeof a),
                     rtg_fmt_bound(d->max, b, sizeof b));
        else if (d->type == RTG_OPT_ENUM)
            snprintf(range, sizeof range, "one of %s", d->choices);
        char deftext[160];
        if (d->type == RTG_OPT_FLAG)
            snprintf(deftext, sizeof deftext, "flag, default off");
        else if (d->def)
            snprintf(deftext, sizeof deftext, "default %s", d->def);
        else
            snprintf(deftext, sizeof deftext, "default unset");
        fprintf(f, "  %-26s %s [%s%s%s]\n", left, d->help, range, *range ? ", " : "", deftext);
    }
    rtg_opts_free(o);
}

bool rtg_opt_given(const rtg_opts *o, const char *name) { return must_find(o, name)->set; }
bool rtg_opt_user(const rtg_opts *o, const char *name) { return must_find(o, name)->user; }
int64_t rtg_opt_int(const rtg_opts *o, const char *name) { return must_find(o, name)->i; }
double rtg_opt_num(const rtg_opts *o, const char *name) { return must_find(o, name)->d; }
bool rtg_opt_flag(const rtg_opts *o, const char *name) { return must_find(o, name)->flag; }

const char *rtg_opt_str(const rtg_opts *o, const char *name)
{
    const opt_val *v = must_find(o, name);
    return v->set ? v->s : NULL;
}

int rtg_opt_cpus(const rtg_opts *o, const char *name, int *cpus, int max)
{
    const opt_val *v = must_find(o, name);
    for (int i = 0; i < v->ncpus && i < max; i++)
        cpus[i] = v->cpus[i];
    return v->ncpus;
}

int rtg_opts_count(const rtg_opts *o) { return o->n; }
const rtg_opt *rtg_opts_def(const rtg_opts *o, int i) { return o->v[i].def; }

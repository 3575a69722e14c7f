/* json: value tree and compact writer. See json.h.
 * Numbers: integers are written exactly (int64). Doubles are written in the
 * shortest form that reads back to the same double (%.15g, %.16g or %.17g,
 * whichever is first to round-trip), NaN and infinities as null. Measurement
 * averages in rtg_j_dist are rounded to 0.001 ns first (picoseconds are far below
 * any clock's resolution), so they print short. */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct rtg_json {
    rtg_jtype type;
    union {
        bool b;
        int64_t i;
        double d;
        char *s;
        struct {
            rtg_json **items;
            char **keys;          /* objects only */
            size_t n, cap;
        } c;
    } u;
};

/* Allocation failure of a few bytes while building a result leaves nothing
 * sensible to do: report it and stop. */
static void out_of_memory(void)
{
    fputs("rtgauge-engine: out of memory while building the JSON result.\n", stderr);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        out_of_memory();
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static rtg_json *new_value(rtg_jtype t)
{
    rtg_json *v = xmalloc(sizeof *v);
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

rtg_json *rtg_j_null(void) { return new_value(RTG_J_NULL); }

rtg_json *rtg_j_bool(bool b)
{
    rtg_json *v = new_value(RTG_J_BOOL);
    v->u.b = b;
    return v;
}

rtg_json *rtg_j_int(int64_t i)
{
    rtg_json *v = new_value(RTG_J_INT);
    v->u.i = i;
    return v;
}

rtg_json *rtg_j_num(double d)
{
    rtg_json *v = new_value(RTG_J_NUM);
    v->u.d = d;
    return v;
}

rtg_json *rtg_j_str(const char *s)
{
    rtg_json *v = new_value(RTG_J_STR);
    v->u.s = xstrdup(s ? s : "");
    return v;
}

rtg_json *rtg_j_strf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return rtg_j_str("");
    char *buf = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rtg_json *v = new_value(RTG_J_STR);
    v->u.s = buf;
    return v;
}

rtg_json *rtg_j_arr(void) { return new_value(RTG_J_ARR); }
rtg_json *rtg_j_obj(void) { return new_value(RTG_J_OBJ); }

rtg_jtype rtg_j_type(const rtg_json *v) { return v->type; }

static void grow(rtg_json *c)
{
    if (c->u.c.n < c->u.c.cap)
        return;
    size_t cap = c->u.c.cap ? c->u.c.cap * 2 : 8;
    rtg_json **items = realloc(c->u.c.items, cap * sizeof *items);
    if (!items)
        out_of_memory();
    c->u.c.items = items;
    if (c->type == RTG_J_OBJ) {
        char **keys = realloc(c->u.c.keys, cap * sizeof *keys);
        if (!keys)
            out_of_memory();
        c->u.c.keys = keys;
    }
    c->u.c.cap = cap;
}

rtg_json *rtg_j_push(rtg_json *arr, rtg_json *v)
{
    if (!arr || arr->type != RTG_J_ARR)
        return v;
    grow(arr);
    arr->u.c.items[arr->u.c.n++] = v;
    return v;
}

static long find_key(const rtg_json *obj, const char *key)
{
    for (size_t i = 0; i < obj->u.c.n; i++)
        if (strcmp(obj->u.c.keys[i], key) == 0)
            return (long)i;
    return -1;
}

rtg_json *rtg_j_set(rtg_json *obj, const char *key, rtg_json *v)
{
    if (!obj || obj->type != RTG_J_OBJ)
        return v;
    long i = find_key(obj, key);
    if (i >= 0) {
        if (obj->u.c.items[i] != v)
            rtg_j_free(obj->u.c.items[i]);
        obj->u.c.items[i] = v;
        return v;
    }
    grow(obj);
    obj->u.c.keys[obj->u.c.n] = xstrdup(key);
    obj->u.c.items[obj->u.c.n++] = v;
    return v;
}

rtg_json *rtg_j_get(const rtg_json *obj, const char *key)
{
    if (!obj || obj->type != RTG_J_OBJ)
        return NULL;
    long i = find_key(obj, key);
    return i >= 0 ? obj->u.c.items[i] : NULL;
}

rtg_json *rtg_j_obj_at(rtg_json *obj, const char *key)
{
    rtg_json *v = rtg_j_get(obj, key);
    return v ? v : rtg_j_set(obj, key, rtg_j_obj());
}

void rtg_j_free(rtg_json *v)
{
    if (!v)
        return;
    if (v->type == RTG_J_STR)
        free(v->u.s);
    if (v->type == RTG_J_ARR || v->type == RTG_J_OBJ) {
        for (size_t i = 0; i < v->u.c.n; i++) {
            rtg_j_free(v->u.c.items[i]);
            if (v->type == RTG_J_OBJ)
                free(v->u.c.keys[i]);
        }
        free(v->u.c.items);
        free(v->u.c.keys);
    }
    free(v);
}

/* ---- writer ---- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes are not
 * valid UTF-8 (overlong forms, surrogates and values above U+10FFFF rejected). */
static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* RFC 8259 string: quote and backslash escaped, control characters as \u00XX,
 * valid UTF-8 passed through, invalid bytes replaced by U+FFFD so the document
 * stays valid for any strict parser. */
static void write_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', f);
            fputc(*s++, f);
        } else if (*s < 0x20) {
            fprintf(f, "\\u%04x", *s++);
        } else {
            size_t n = utf8_seq_len(s);
            if (n == 0) {
                fputs("\\ufffd", f);
                s++;
            } else {
                fwrite(s, 1, n, f);
                s += n;
            }
        }
    }
    fputc('"', f);
}

static void write_double(FILE *f, double d)
{
    if (!isfinite(d)) {
        fputs("null", f);
        return;
    }
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    fputs(buf, f);
}

static void write_value(FILE *f, const rtg_json *v)
{
    if (!v) {
        fputs("null", f);
        return;
    }
    switch (v->type) {
    case RTG_J_NULL:
        fputs("null", f);
        break;
    case RTG_J_BOOL:
        fputs(v->u.b ? "true" : "false", f);
        break;
    case RTG_J_INT:
        fprintf(f, "%lld", (long long)v->u.i);
        break;
    case RTG_J_NUM:
        write_double(f, v->u.d);
        break;
    case RTG_J_STR:
        write_string(f, v->u.s);
        break;
    case RTG_J_ARR:
        fputc('[', f);
        for (size_t i = 0; i < v->u.c.n; i++) {
            if (i)
                fputc(',', f);
            write_value(f, v->u.c.items[i]);
        }
        fputc(']', f);
        break;
    case RTG_J_OBJ:
        fputc('{', f);
        for (size_t i = 0; i < v->u.c.n; i++) {
            if (i)
                fputc(',', f);
            write_string(f, v->u.c.keys[i]);
            fputc(':', f);
            write_value(f, v->u.c.items[i]);
        }
        fputc('}', f);
        break;
    }
}

void rtg_j_write(FILE *f, const rtg_json *v)
{
    write_value(f, v);
    fputc('\n', f);
}

/* ---- metrics ---- */

static rtg_json *num_ps(double x)
{
    return rtg_j_num(round(x * 1000.0) / 1000.0);
}

static rtg_json *bin(int64_t lo, int64_t hi, uint64_t count)
{
    rtg_json *b = rtg_j_arr();
    rtg_j_push(b, rtg_j_int(lo));
    rtg_j_push(b, rtg_j_int(hi));
    rtg_j_push(b, rtg_j_int((int64_t)count));
    return b;
}

/* Nonzero bins in ascending value order: negatives (hdr_neg, largest magnitude
 * first), the zero bin, then positives. */
static rtg_json *hdr_bins(const rtg_dist *d)
{
    rtg_json *bins = rtg_j_arr();
    if (d->hdr_neg && d->negative) {
        for (size_t i = RTG_HDR_BUCKETS; i-- > 0;)
            if (d->hdr_neg[i])
                rtg_j_push(bins, bin(-rtg_hdr_upper(i), -rtg_hdr_lower(i), d->hdr_neg[i]));
    }
    if (d->hdr) {
        uint64_t zeros = d->hdr[0] - d->negative;
        if (zeros)
            rtg_j_push(bins, bin(0, 0, zeros));
        for (size_t i = 1; i < RTG_HDR_BUCKETS; i++)
            if (d->hdr[i])
                rtg_j_push(bins, bin(rtg_hdr_lower(i), rtg_hdr_upper(i), d->hdr[i]));
    }
    return bins;
}

static rtg_json *linear_hist(const rtg_dist *d)
{
    rtg_json *lin = rtg_j_obj();
    rtg_j_set(lin, "bucket_ns", rtg_j_int(d->lin_bucket_ns));
    rtg_json *counts = rtg_j_set(lin, "counts", rtg_j_arr());
    for (size_t i = 0; i < d->lin_n; i++)
        rtg_j_push(counts, rtg_j_int((int64_t)d->lin[i]));
    rtg_j_set(lin, "overflow", rtg_j_int((int64_t)d->lin_overflow));
    return lin;
}

/* An empty distribution has no min, avg, ... : those are null, count is 0. */
static rtg_json *stat_int(const rtg_dist *d, int64_t v)
{
    return d->count ? rtg_j_int(v) : rtg_j_null();
}

rtg_json *rtg_j_dist(const rtg_dist *d, const char *unit)
{
    static const struct { const char *key; double q; } pct[] = {
        {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}, {"p9999", 0.9999},
    };
    rtg_json *o = rtg_j_obj();
    rtg_j_set(o, "unit", rtg_j_str(unit));
    rtg_j_set(o, "count", rtg_j_int((int64_t)d->count));
    rtg_j_set(o, "min", stat_int(d, d->min));
    rtg_j_set(o, "avg", d->count ? num_ps(rtg_dist_avg(d)) : rtg_j_null());
    rtg_j_set(o, "stddev", d->count ? num_ps(rtg_dist_stddev(d)) : rtg_j_null());
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++)
        rtg_j_set(o, pct[i].key, stat_int(d, rtg_dist_percentile(d, pct[i].q)));
    rtg_j_set(o, "max", stat_int(d, d->max));
    rtg_json *h = rtg_j_set(o, "histogram", rtg_j_obj());
    rtg_j_set(h, "scheme", rtg_j_str("log-linear"));
    rtg_j_set(h, "sub_buckets", rtg_j_int(RTG_HDR_SUB));
    rtg_j_set(h, "bins", hdr_bins(d));
    if (d->lin && d->lin_n)
        rtg_j_set(o, "linear", linear_hist(d));
    return o;
}

rtg_json *rtg_j_series(const rtg_series *s, const char *unit)
{
    rtg_json *o = rtg_j_obj();
    rtg_j_set(o, "unit", rtg_j_str(unit));
    rtg_j_set(o, "window_ns", rtg_j_int(s->window_ns));
    rtg_j_set(o, "start_ns", rtg_j_int(s->start_ns));
    rtg_json *max = rtg_j_set(o, "max", rtg_j_arr());
    for (size_t i = 0; i < s->n; i++)
        rtg_j_push(max, s->max[i] == RTG_SERIES_EMPTY ? rtg_j_null() : rtg_j_int(s->max[i]));
    return o;
}

rtg_json *rtg_j_series_values(int64_t start_ns, int64_t window_ns, const int64_t *v, size_t n, const char *unit)
{
    rtg_json *o = rtg_j_obj();
    rtg_j_set(o, "unit", rtg_j_str(unit));
    rtg_j_set(o, "window_ns", rtg_j_int(window_ns));
    rtg_j_set(o, "start_ns", rtg_j_int(start_ns));
    rtg_json *vals = rtg_j_set(o, "max", rtg_j_arr());
    for (size_t i = 0; i < n; i++)
        rtg_j_push(vals, rtg_j_int(v[i]));
    return o;
}

rtg_json *rtg_j_scalar_int(int64_t v, const char *unit)
{
    rtg_json *o = rtg_j_obj();
    rtg_j_set(o, "unit", rtg_j_str(unit));
    rtg_j_set(o, "value", rtg_j_int(v));
    return o;
}

rtg_json *rtg_j_scalar_num(double v, const char *unit)
{
    rtg_json *o = rtg_j_obj();
    rtg_j_set(o, "unit", rtg_j_str(unit));
    rtg_j_set(o, "value", rtg_j_num(v));
    return o;
}

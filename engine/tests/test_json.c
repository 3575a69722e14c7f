/* Unit tests of json.c: exact bytes written for strings (escaping, UTF-8),
 * numbers, nesting and the metric documents (dist, series, scalar). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"

/* the document as written, without the final newline (caller frees) */
static char *render(const rtg_json *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rtg_j_write(f, v);
    fclose(f);
    CHECK(len > 0 && buf[len - 1] == '\n', "document does not end with a newline");
    if (len > 0)
        buf[len - 1] = '\0';
    return buf;
}

#define CHECK_RENDERS(value, expected)                                              \
    do {                                                                            \
        rtg_json *v_ = (value);                                                     \
        char *got_ = render(v_);                                                    \
        CHECK(strcmp(got_, (expected)) == 0, "wrote\n  %s\nexpected\n  %s", got_, (expected)); \
        free(got_);                                                                 \
        rtg_j_free(v_);                                                             \
    } while (0)

/* A strict decoder of one JSON string literal, independent of the writer: returns
 * the decoded bytes (caller frees) or NULL when the literal is not valid JSON. */
static char *decode_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    char *out = malloc(strlen(p) * 4 + 1), *o = out;
    while (*p && *p != '"') {
        unsigned char c = (unsigned char)*p++;
        if (c < 0x20) {
            free(out);
            return NULL;      /* raw control character: invalid JSON */
        }
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        char e = *p++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (sscanf(p, "%4x", &cp) != 1 || cp >= 0x80) {   /* tests only need ASCII */
                free(out);
                return NULL;
            }
            p += 4;
            *o++ = (char)cp;
            break;
        }
        default:
            free(out);
            return NULL;
        }
    }
    if (*p != '"' || p[1] != '\0') {
        free(out);
        return NULL;
    }
    *o = '\0';
    return out;
}

static void test_strings(void)
{
    CHECK_RENDERS(rtg_j_str("plain"), "\"plain\"");
    CHECK_RENDERS(rtg_j_str("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
    CHECK_RENDERS(rtg_j_str("t\tn\nr\r\x01\x1f\x7f"), "\"t\\u0009n\\u000ar\\u000d\\u0001\\u001f\x7f\"");
    CHECK_RENDERS(rtg_j_str(""), "\"\"");
    /* valid UTF-8 passes through byte for byte */
    CHECK_RENDERS(rtg_j_str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
    /* invalid UTF-8 (stray continuation, overlong, truncated, surrogate) -> U+FFFD */
    CHECK_RENDERS(rtg_j_str("a\xff" "b"), "\"a\\ufffdb\"");
    CHECK_RENDERS(rtg_j_str("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
    CHECK_RENDERS(rtg_j_str("\xe2\x82"), "\"\\ufffd\\ufffd\"");
    CHECK_RENDERS(rtg_j_str("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
    CHECK_RENDERS(rtg_j_strf("%d%%-%s", 42, "x"), "\"42%-x\"");

    /* every ASCII byte round-trips through writer and an independent decoder */
    char all[128];
    for (int i = 1; i < 128; i++)
        all[i - 1] = (char)i;
    all[127] = '\0';
    rtg_json *s = rtg_j_str(all);
    char *text = render(s);
    char *back = decode_string(text);
    CHECK(back && strcmp(back, all) == 0, "ASCII round trip failed: %s", text);
    free(back);
    free(text);
    rtg_j_free(s);
}

static void test_numbers(void)
{
    CHECK_RENDERS(rtg_j_int(0), "0");
    CHECK_RENDERS(rtg_j_int(INT64_MAX), "9223372036854775807");
    CHECK_RENDERS(rtg_j_int(INT64_MIN), "-9223372036854775808");
    CHECK_RENDERS(rtg_j_num(0.1), "0.1");
    CHECK_RENDERS(rtg_j_num(19.5), "19.5");
    CHECK_RENDERS(rtg_j_num(-2.0), "-2");
    CHECK_RENDERS(rtg_j_num(1e300), "1e+300");
    CHECK_RENDERS(rtg_j_num(NAN), "null");
    CHECK_RENDERS(rtg_j_num(INFINITY), "null");
    CHECK_RENDERS(rtg_j_num(-INFINITY), "null");
    CHECK_RENDERS(rtg_j_null(), "null");
    CHECK_RENDERS(rtg_j_bool(true), "true");
    CHECK_RENDERS(rtg_j_bool(false), "false");
    /* any double reads back exactly */
    uint64_t st = 7;
    int bad = 0;
    for (int i = 0; i < 100000; i++) {
        double d;
        uint64_t bits = check_rand(&st);
        memcpy(&d, &bits, sizeof d);
        if (!isfinite(d))
            continue;
        rtg_json *v = rtg_j_num(d);
        char *t = render(v);
        if (strtod(t, NULL) != d || strlen(t) > 24)
            bad++;
        free(t);
        rtg_j_free(v);
    }
    CHECK_EQ_I(bad, 0);
    /* shortest form: 1/3 needs 16 digits, not 17 */
    rtg_json *third = rtg_j_num(1.0 / 3.0);
    char *t = render(third);
    CHECK(strcmp(t, "0.3333333333333333") == 0, "1/3 written as %s", t);
    free(t);
    rtg_j_free(third);
}

static void test_nesting(void)
{
    rtg_json *o = rtg_j_obj();
    rtg_j_set(o, "b", rtg_j_int(1));
    rtg_j_set(o, "a", rtg_j_arr());
    rtg_json *arr = rtg_j_get(o, "a");
    CHECK(arr && rtg_j_type(arr) == RTG_J_ARR, "get of the array failed");
    rtg_j_push(arr, rtg_j_int(1));
    rtg_json *inner = rtg_j_push(arr, rtg_j_obj());
    rtg_j_set(inner, "k\"ey", rtg_j_str("v"));
    rtg_j_push(arr, rtg_j_arr());
    rtg_j_set(o, "b", rtg_j_str("replaced"));        /* keeps its position */
    rtg_json *env = rtg_j_obj_at(o, "env");           /* created */
    rtg_j_set(env, "x", rtg_j_bool(true));
    CHECK(rtg_j_obj_at(o, "env") == env, "obj_at created a second object");
    CHECK(rtg_j_get(o, "missing") == NULL, "get of a missing key");
    CHECK(rtg_j_get(arr, "a") == NULL, "get on an array");
    CHECK_RENDERS(o, "{\"b\":\"replaced\",\"a\":[1,{\"k\\\"ey\":\"v\"},[]],\"env\":{\"x\":true}}");
    CHECK_RENDERS(rtg_j_obj(), "{}");
}

static void test_dist_document(void)
{
    rtg_dist d;
    CHECK(rtg_dist_init(&d, 100, 5) == 0, "dist init failed");
    static const int64_t v[] = {300, -3, 0, 1000, 5, 0, 300};
    rtg_dist_add_array(&d, v, sizeof v / sizeof v[0]);
    /* worked by hand: sorted -3 0 0 5 300 300 1000; avg 1602/7; population
     * stddev 340.882; p50 = 4th value 5; p90..p9999 = 7th value 1000 (bucket
     * [1000,1003] clamped to max); 300 lies in bucket [300,301]; linear buckets
     * of 100 ns: -3,0,0,5 -> [0], 300,300 -> [3], 1000 -> overflow. */
    CHECK_RENDERS(rtg_j_dist(&d, "ns"),
                  "{\"unit\":\"ns\",\"count\":7,\"min\":-3,\"avg\":228.857,\"stddev\":340.882,"
                  "\"p50\":5,\"p90\":1000,\"p99\":1000,\"p999\":1000,\"p9999\":1000,\"max\":1000,"
                  "\"histogram\":{\"scheme\":\"log-linear\",\"sub_buckets\":128,\"bins\":"
                  "[[-3,-3,1],[0,0,2],[5,5,1],[300,301,2],[1000,1003,1]]},"
                  "\"linear\":{\"bucket_ns\":100,\"counts\":[4,0,0,2,0],\"overflow\":1}}");
    rtg_dist_free(&d);

    rtg_dist e;
    rtg_dist_init(&e, 0, 0);
    CHECK_RENDERS(rtg_j_dist(&e, "ns"),
                  "{\"unit\":\"ns\",\"count\":0,\"min\":null,\"avg\":null,\"stddev\":null,"
                  "\"p50\":null,\"p90\":null,\"p99\":null,\"p999\":null,\"p9999\":null,\"max\":null,"
                  "\"histogram\":{\"scheme\":\"log-linear\",\"sub_buckets\":128,\"bins\":[]}}");
    /* a 10 s value: the bin's bounds are exact integers beyond 2^32 */
    rtg_dist_add(&e, 10000000000LL);
    rtg_json *j = rtg_j_dist(&e, "ns");
    char *t = render(j);
    CHECK(strstr(t, "\"bins\":[[9999220736,10066329599,1]]") != NULL, "10 s bin wrong: %s", t);
    CHECK(strstr(t, "\"p9999\":10000000000,\"max\":10000000000") != NULL, "10 s max wrong: %s", t);
    free(t);
    rtg_j_free(j);
    rtg_dist_free(&e);
}

static void test_series_and_scalars(void)
{
    rtg_series s;
    rtg_series_init(&s, 5000, 1000000000, 8);
    rtg_series_add(&s, 5000 + 10, 42);
    rtg_series_add(&s, 5000 + 2000000000LL, -7);
    CHECK_RENDERS(rtg_j_series(&s, "ns"),
                  "{\"unit\":\"ns\",\"window_ns\":1000000000,\"start_ns\":5000,\"max\":[42,null,-7]}");
    rtg_series_free(&s);
    CHECK_RENDERS(rtg_j_scalar_int(3, "count"), "{\"unit\":\"count\",\"value\":3}");
    CHECK_RENDERS(rtg_j_scalar_num(19.25, "ns"), "{\"unit\":\"ns\",\"value\":19.25}");
}

int main(void)
{
    test_strings();
    test_numbers();
    test_nesting();
    test_dist_document();
    test_series_and_scalars();
    return check_done();
}

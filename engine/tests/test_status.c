/* Unit tests of status.c: one line a window, written once every thread is past
 * it; each thread's figures of the window exact against the cycles fed in; the
 * windows add up to the whole; a line's size does not grow with the rate; a
 * thread held off its CPU shows as skipped deadlines in the windows they were due
 * in, up to the end of the run. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "status.h"

/* The integer after "key": in the object of thread `thread` of a line; 0 and
 * *null set when the value is null. -1 when the key is not there. */
static long long field(const char *line, int thread, const char *key, int *null)
{
    char mark[64];
    snprintf(mark, sizeof mark, "{\"thread\":%d,", thread);
    const char *t = strstr(line, mark);
    if (!t)
        return -1;
    const char *end = strchr(t, '}');
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *v = strstr(t, k);
    if (!v || v > end)
        return -1;
    v += strlen(k);
    *null = strncmp(v, "null", 4) == 0;
    return *null ? 0 : strtoll(v, NULL, 10);
}

static int read_lines(FILE *f, char lines[][4096], int max)
{
    rewind(f);
    int n = 0;
    while (n < max && fgets(lines[n], 4096, f))
        n++;
    return n;
}

static char lines[64][4096];

/* Two threads, windows of 1000 ns from 0; thread 0 due every 100 ns, thread 1
 * every 250 ns; thread 1 has one late wake-up (ti 99999) due at 5500. */
static void test_windows(void)
{
    FILE *f = tmpfile();
    int cpus[2] = {3, 5};
    const int64_t periods[2] = {100, 250};
    rtg_status *s = rtg_status_new(f, 2, cpus, periods, 0, 1000, 0, 0);
    CHECK(s != NULL, "new");
    for (int64_t d = 0; d < 10000; d += 100)
        rtg_status_add(s, 0, (uint64_t)(d / 100), d, 10 + d % 1000, d == 4200);
    CHECK_EQ_I(rtg_status_write(s, false), 0);   /* thread 1 has not begun: nothing known */
    for (int64_t d = 0; d <= 3000; d += 250)
        rtg_status_add(s, 1, (uint64_t)(d / 250), d, d == 2750 ? 0 : 20, false);
    CHECK_EQ_I(rtg_status_write(s, false), 3);   /* windows 0..2: both threads are past them */
    CHECK_EQ_I(rtg_status_write(s, false), 0);
    for (int64_t d = 3250; d < 8000; d += 250)
        rtg_status_add(s, 1, (uint64_t)(d / 250), d, d == 5500 ? 99999 : 20, false);
    rtg_status_end(s, 0, 0);
    rtg_status_end(s, 1, 0);
    CHECK_EQ_I(rtg_status_write(s, true), 7);    /* the end: windows 3..9 */
    int n = read_lines(f, lines, 64);
    CHECK_EQ_I(n, 10);
    long long cycles[2] = {0, 0}, max1 = 0;
    for (int w = 0; w < n; w++) {
        char want[32];
        snprintf(want, sizeof want, "{\"window\":%d,", w);
        CHECK(strncmp(lines[w], want, strlen(want)) == 0, "line %d: %s", w, lines[w]);
        int null;
        CHECK_EQ_I(field(lines[w], 0, "cpu", &null), 3);
        CHECK_EQ_I(field(lines[w], 1, "cpu", &null), 5);
        CHECK_EQ_I(field(lines[w], 0, "cycles", &null), 10);
        CHECK_EQ_I(field(lines[w], 0, "min", &null), 10);
        CHECK_EQ_I(field(lines[w], 0, "max", &null), 910);
        CHECK_EQ_I(field(lines[w], 0, "misses", &null), w == 4);
        CHECK_EQ_I(field(lines[w], 0, "skipped", &null), 0);   /* none: no number was missing */
        CHECK_EQ_I(field(lines[w], 1, "skipped", &null), 0);
        field(lines[w], 0, "overflows", &null);
        CHECK(null, "overflows without a linear histogram: null");
        for (int i = 0; i < 2; i++)
            cycles[i] += field(lines[w], i, "cycles", &null);
        long long m = field(lines[w], 1, "max", &null);
        if (w >= 8) {   /* thread 1 had no cycle due there */
            CHECK(null && field(lines[w], 1, "cycles", &null) == 0, "window %d: %s", w, lines[w]);
        } else {
            CHECK_EQ_I(m, w == 5 ? 99999 : 20);
            CHECK_EQ_I(field(lines[w], 1, "p99", &null), w == 5 ? 99999 : 20);
            CHECK_EQ_I(field(lines[w], 1, "min", &null), w == 2 ? 0 : 20);
        }
        if (m > max1)
            max1 = m;
    }
    CHECK_EQ_I(cycles[0], 100);
    CHECK_EQ_I(cycles[1], 32);
    CHECK_EQ_I(max1, 99999);
    rtg_status_free(s);
    fclose(f);
}

/* A thousand cycles a window or ten: one line a window, of the same size give or
 * take the digits of the figures. */
static void test_size_bounded(void)
{
    size_t len[2] = {0, 0};
    int count[2] = {0, 0};
    const int64_t step[2] = {1000, 10};   /* 10 or 1000 cycles in a window of 10000 ns */
    for (int k = 0; k < 2; k++) {
        FILE *f = tmpfile();
        rtg_status *s = rtg_status_new(f, 1, NULL, &step[k], 0, 10000, 1000, 100);
        for (int64_t d = 0; d < 40000; d += step[k])
            rtg_status_add(s, 0, (uint64_t)(d / step[k]), d, 5000 + d % 7, false);
        rtg_status_write(s, true);
        count[k] = read_lines(f, lines, 64);
        for (int i = 0; i < count[k]; i++)
            if (strlen(lines[i]) > len[k])
                len[k] = strlen(lines[i]);
        int null;
        CHECK_EQ_I(field(lines[0], 0, "overflows", &null), 0);
        CHECK_EQ_I(field(lines[0], 0, "cpu", &null), -1);
        rtg_status_free(s);
        fclose(f);
    }
    CHECK_EQ_I(count[0], 4);
    CHECK_EQ_I(count[1], 4);
    CHECK(len[1] <= len[0] + 16, "a line at 100x the rate is %zu bytes, at 1x %zu", len[1], len[0]);
}

/* A thread that ran ahead by many windows while another was held back: its
 * figures are kept until the line can be written, none lost. */
static void test_lagging_thread(void)
{
    FILE *f = tmpfile();
    rtg_status *s = rtg_status_new(f, 2, NULL, NULL, 1000000, 100, 10, 10);   /* no grid: nothing skipped */
    uint64_t k = 0;
    for (int64_t d = 1000000; d < 1000000 + 100 * 40; d += 10)
        rtg_status_add(s, 0, k++, d, 200, false);   /* 200 > 10 buckets of 10 ns: overflows */
    rtg_status_add(s, 1, 0, 1000000, 1, false);
    CHECK_EQ_I(rtg_status_write(s, false), 0);
    rtg_status_add(s, 1, 390, 1000000 + 100 * 39, 1, true);
    CHECK_EQ_I(rtg_status_write(s, false), 39);
    CHECK_EQ_I(rtg_status_write(s, true), 1);
    int n = read_lines(f, lines, 64);
    CHECK_EQ_I(n, 40);
    int null;
    for (int w = 0; w < n; w++) {
        CHECK_EQ_I(field(lines[w], 0, "cycles", &null), 10);
        CHECK_EQ_I(field(lines[w], 0, "overflows", &null), 10);
        CHECK_EQ_I(field(lines[w], 1, "cycles", &null), w == 0 || w == 39);
    }
    CHECK_EQ_I(field(lines[39], 1, "misses", &null), 1);
    for (int w = 0; w < n; w++)
        CHECK_EQ_I(field(lines[w], 1, "skipped", &null), 0);
    rtg_status_free(s);
    fclose(f);
}

/* A thread held off its CPU (every 100 ns, windows of 1000 ns): it measured
 * deadlines 0..2, was late, skipped 3..24, measured 25..29, then was held off to
 * the end (30..99 skipped: the run ended while it was behind). Every window up to
 * the last deadline has a line, and each counts the deadlines skipped in it. */
static void test_held_off(void)
{
    FILE *f = tmpfile();
    const int64_t period = 100;
    rtg_status *s = rtg_status_new(f, 1, NULL, &period, 0, 1000, 0, 0);
    for (uint64_t k = 0; k <= 2; k++)
        rtg_status_add(s, 0, k, (int64_t)k * 100, 10, false);
    rtg_status_add(s, 0, 25, 2500, 2000, true);       /* the first after the gap */
    for (uint64_t k = 26; k <= 29; k++)
        rtg_status_add(s, 0, k, (int64_t)k * 100, 10, false);
    CHECK_EQ_I(rtg_status_write(s, false), 2);       /* windows 0 and 1 */
    rtg_status_end(s, 0, 22 + 70);
    CHECK_EQ_I(rtg_status_write(s, true), 8);        /* windows 2..9, 7..9 only skipped */
    int n = read_lines(f, lines, 64);
    CHECK_EQ_I(n, 10);
    const long long want_skipped[10] = {7, 10, 5, 10, 10, 10, 10, 10, 10, 10};
    const long long want_cycles[10] = {3, 0, 5, 0, 0, 0, 0, 0, 0, 0};
    long long total = 0;
    for (int w = 0; w < n; w++) {
        int null;
        CHECK_EQ_I(field(lines[w], 0, "skipped", &null), want_skipped[w]);
        CHECK_EQ_I(field(lines[w], 0, "cycles", &null), want_cycles[w]);
        field(lines[w], 0, "max", &null);
        CHECK(null == (want_cycles[w] == 0), "window %d: %s", w, lines[w]);
        total += field(lines[w], 0, "skipped", &null);
    }
    CHECK_EQ_I(total, 92);
    int null;
    CHECK_EQ_I(field(lines[2], 0, "misses", &null), 1);
    rtg_status_free(s);
    fclose(f);
}

int main(void)
{
    test_windows();
    test_size_bounded();
    test_lagging_thread();
    test_held_off();
    return check_done();
}

/* status: one JSON line per window of a periodic run (status.h). */
#include "status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "samples.h"

/* One thread's figures of one window, kept until its line is written. */
typedef struct {
    uint64_t cycles, misses, overflows, skipped;
    int64_t min, max, p99;
    double avg;
} entry;

struct rtg_status {
    FILE *f;
    bool broken;              /* a write failed (a reader that went away): write no more */
    int n;
    int *cpus;
    int64_t start_ns, window_ns;
    bool linear;
    rtg_dist *win;            /* per thread: its current window's Ti */
    uint64_t *misses;         /* per thread: its current window's misses */
    int64_t *cur;             /* per thread: its current window, -1 before its first cycle */
    int64_t *period;          /* per thread: its deadline grid (start + k*period), NULL: none */
    int64_t *last;            /* per thread: the number of its last cycle, -1 before the first */
    uint64_t *seen;           /* per thread: its skipped deadlines counted so far */
    int64_t *last_w;          /* per thread: the last window a skipped deadline was counted in */
    int64_t next;             /* the first window whose line is not written */
    size_t rows, cap;         /* windows next .. next+rows-1 are held in held[] */
    entry *held;              /* rows x n entries; zero = no cycle due in the window */
};

rtg_status *rtg_status_new(FILE *f, int nthreads, const int *cpus, const int64_t *periods_ns, int64_t start_ns,
                           int64_t window_ns, int64_t lin_bucket_ns, size_t lin_buckets)
{
    rtg_status *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->f = f;
    s->n = nthreads;
    s->start_ns = start_ns;
    s->window_ns = window_ns > 0 ? window_ns : 1000000000LL;
    s->linear = lin_bucket_ns > 0 && lin_buckets > 0;
    s->cpus = calloc((size_t)nthreads, sizeof *s->cpus);
    s->win = calloc((size_t)nthreads, sizeof *s->win);
    s->misses = calloc((size_t)nthreads, sizeof *s->misses);
    s->cur = calloc((size_t)nthreads, sizeof *s->cur);
    s->last = calloc((size_t)nthreads, sizeof *s->last);
    s->seen = calloc((size_t)nthreads, sizeof *s->seen);
    s->last_w = calloc((size_t)nthreads, sizeof *s->last_w);
    if (periods_ns)
        s->period = calloc((size_t)nthreads, sizeof *s->period);
    bool ok = s->cpus && s->win && s->misses && s->cur && s->last && s->seen && s->last_w &&
              (s->period || !periods_ns);
    for (int i = 0; ok && i < nthreads; i++) {
        s->cpus[i] = cpus ? cpus[i] : -1;
        s->cur[i] = -1;
        s->last[i] = -1;
        s->last_w[i] = -1;
        if (s->period)
            s->period[i] = periods_ns[i];
        ok = rtg_dist_init(&s->win[i], lin_bucket_ns, lin_buckets) == 0;
    }
    if (!ok) {
        rtg_status_free(s);
        return NULL;
    }
    return s;
}

void rtg_status_free(rtg_status *s)
{
    if (!s)
        return;
    if (s->win)
        for (int i = 0; i < s->n; i++)
            rtg_dist_free(&s->win[i]);
    free(s->win);
    free(s->cpus);
    free(s->misses);
    free(s->cur);
    free(s->period);
    free(s->last);
    free(s->seen);
    free(s->last_w);
    free(s->held);
    free(s);
}

/* The entries of window w (w >= next), growing the held rows as needed; NULL
 * when out of memory (that window's figures are then lost, the run goes on). */
static entry *row(rtg_status *s, int64_t w)
{
    size_t k = (size_t)(w - s->next);
    if (k >= s->cap) {
        size_t cap = s->cap ? s->cap : 4;
        while (cap <= k)
            cap *= 2;
        entry *h = realloc(s->held, cap * (size_t)s->n * sizeof *h);
        if (!h)
            return NULL;
        s->held = h;
        s->cap = cap;
    }
    if (k >= s->rows) {
        memset(&s->held[s->rows * (size_t)s->n], 0, (k + 1 - s->rows) * (size_t)s->n * sizeof(entry));
        s->rows = k + 1;
    }
    return &s->held[k * (size_t)s->n];
}

/* Thread i is done with its current window: keep its figures, empty the window. */
static void finish(rtg_status *s, int i)
{
    rtg_dist *d = &s->win[i];
    if (s->cur[i] < s->next)   /* before its first cycle, or already written */
        return;
    entry *r = row(s, s->cur[i]);
    if (r && d->count) {
        uint64_t skipped = r[i].skipped;   /* counted there before (add_skipped) */
        r[i] = (entry){.cycles = d->count, .misses = s->misses[i], .overflows = d->lin_overflow,
                       .min = d->min, .max = d->max, .p99 = rtg_dist_percentile(d, 0.99),
                       .avg = rtg_dist_avg(d), .skipped = skipped};
    }
    rtg_dist_clear(d);
    s->misses[i] = 0;
}

/* Thread i's deadlines numbered first..last were skipped (no wake-up measured): count
 * each in the window it was due in (one already written: the next, as for a cycle). */
static void add_skipped(rtg_status *s, int i, uint64_t first, uint64_t last)
{
    int64_t p = s->period ? s->period[i] : 0;
    if (p <= 0)
        return;
    for (uint64_t k = first; k <= last;) {
        int64_t w = (int64_t)k * p / s->window_ns;
        /* the last deadline due in window w */
        uint64_t end = (uint64_t)(((w + 1) * s->window_ns - 1) / p);
        uint64_t upto = end < last ? end : last;
        entry *r = row(s, w < s->next ? s->next : w);
        if (r)
            r[i].skipped += upto - k + 1;
        if (w > s->last_w[i])
            s->last_w[i] = w;
        k = upto + 1;
    }
}

void rtg_status_add(rtg_status *s, int i, uint64_t number, int64_t deadline_ns, int64_t ti, bool miss)
{
    if (number > (uint64_t)(s->last[i] + 1)) {    /* deadlines skipped since its last cycle */
        add_skipped(s, i, (uint64_t)(s->last[i] + 1), number - 1);
        s->seen[i] += number - 1 - (uint64_t)s->last[i];
    }
    if ((int64_t)number > s->last[i])
        s->last[i] = (int64_t)number;
    int64_t w = deadline_ns <= s->start_ns ? 0 : (deadline_ns - s->start_ns) / s->window_ns;
    if (w < s->next)           /* never expected: its line is written; count it in the next */
        w = s->next;
    if (s->cur[i] < 0)
        s->cur[i] = w;
    else if (w > s->cur[i]) {
        finish(s, i);
        s->cur[i] = w;
    }
    rtg_dist_add(&s->win[i], ti);
    if (miss)
        s->misses[i]++;
}

void rtg_status_end(rtg_status *s, int i, uint64_t skipped)
{
    if (skipped > s->seen[i]) {      /* the rest came after its last cycle */
        uint64_t first = (uint64_t)(s->last[i] + 1);
        add_skipped(s, i, first, first + (skipped - s->seen[i]) - 1);
        s->seen[i] = skipped;
    }
}

static void put_line(rtg_status *s, const entry *r, int64_t w)
{
    rtg_json *line = rtg_j_obj();
    rtg_j_set(line, "window", rtg_j_int(w));
    rtg_j_set(line, "start_ns", rtg_j_int(s->start_ns + w * s->window_ns));
    rtg_j_set(line, "t_s", rtg_j_num((double)w * (double)s->window_ns / 1e9));
    rtg_j_set(line, "window_s", rtg_j_num((double)s->window_ns / 1e9));
    rtg_json *threads = rtg_j_set(line, "threads", rtg_j_arr());
    for (int i = 0; i < s->n; i++) {
        const entry *e = r ? &r[i] : &(entry){0};
        rtg_json *t = rtg_j_push(threads, rtg_j_obj());
        rtg_j_set(t, "thread", rtg_j_int(i));
        rtg_j_set(t, "cpu", rtg_j_int(s->cpus[i]));
        rtg_j_set(t, "cycles", rtg_j_int((int64_t)e->cycles));
        rtg_j_set(t, "min", e->cycles ? rtg_j_int(e->min) : rtg_j_null());
        rtg_j_set(t, "avg", e->cycles ? rtg_j_num(round(e->avg * 10) / 10) : rtg_j_null());   /* 0.1 ns */
        rtg_j_set(t, "max", e->cycles ? rtg_j_int(e->max) : rtg_j_null());
        rtg_j_set(t, "p99", e->cycles ? rtg_j_int(e->p99) : rtg_j_null());
        rtg_j_set(t, "misses", rtg_j_int((int64_t)e->misses));
        rtg_j_set(t, "skipped", rtg_j_int((int64_t)e->skipped));
        rtg_j_set(t, "overflows", s->linear ? rtg_j_int((int64_t)e->overflows) : rtg_j_null());
    }
    rtg_j_write(s->f, line);
    rtg_j_free(line);
}

int rtg_status_write(rtg_status *s, bool final)
{
    int64_t upto = INT64_MAX;  /* lines of windows < upto can be written */
    if (final) {
        upto = s->next;
        for (int i = 0; i < s->n; i++) {
            finish(s, i);
            if (s->cur[i] + 1 > upto)
                upto = s->cur[i] + 1;
            if (s->last_w[i] + 1 > upto)   /* deadlines skipped after its last cycle */
                upto = s->last_w[i] + 1;
        }
    } else {
        for (int i = 0; i < s->n; i++)
            if (s->cur[i] < upto)
                upto = s->cur[i];
    }
    int lines = 0;
    for (; s->next < upto; s->next++, lines++) {
        if (!s->broken)
            put_line(s, s->rows ? s->held : NULL, s->next);
        if (s->rows) {
            s->rows--;
            memmove(s->held, s->held + s->n, s->rows * (size_t)s->n * sizeof *s->held);
        }
    }
    if (final)   /* every thread's window is written: nothing more is held */
        for (int i = 0; i < s->n; i++)
            s->cur[i] = s->next;
    if (!s->broken && (fflush(s->f) != 0 || ferror(s->f)))
        s->broken = true;   /* the status is a view: the measurement goes on without it */
    return lines;
}

/* irq-gap (IRQ_P_DLT analogue): what interrupts take from a running real-time
 * thread, and how long the kernel takes from an interrupt handler back to that
 * thread. One thread at --policy/--priority, pinned to one CPU, reads
 * CLOCK_MONOTONIC in a tight loop for --duration-s; two consecutive readings more
 * than --threshold-ns apart are a gap (the thread did not run), stored (start =
 * the reading before, length) in preallocated memory, as oslat and osnoise see
 * noise. Where trace events are available (root, tracefs, an engine built with
 * libtracefs: irqtrace.h), the handlers that ran on the CPU are recorded beside
 * the loop, and each gap is attributed to the hard-interrupt handlers and
 * softirqs that ran inside it, as osnoise does:
 *   irq_entry = first handler entry - the thread's last reading (interrupted -> handler)
 *   handler   = each hard handler's own span
 *   dispatch  = the thread's next reading - the last hard handler's exit
 *               (handler -> the interrupted thread running again: IRQ_P_DLT; the
 *               softirqs run on the way out fall inside it)
 * A gap with no handler inside (a host stall) or with a task switch on the CPU
 * (sched:sched_switch: a higher-priority thread, the scheduler's fair-server share
 * given to an ordinary task) is other_gap, whatever handlers ran in it. Without tracing (--attribution
 * off, or auto where it is unavailable) the gaps are measured all the same and
 * env.handlers says why there is no attribution. The trace events themselves
 * cost a little time inside each gap (a few hundred ns per event). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gaploop.h"
#include "irqtrace.h"
#include "samples.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt irq_gap_opts[] = {
    {"duration-s", RTG_OPT_NUM, "5", 0.01, 600, NULL, "how long the loop reads the clock"},
    {"threshold-ns", RTG_OPT_INT, "1000", 50, 1000000000, NULL,
     "a pause between two clock readings longer than this is a gap"},
    {"max-gaps", RTG_OPT_INT, "1000000", 100, 100000000, NULL, "gaps stored (more are counted only)"},
    {"attribution", RTG_OPT_ENUM, "auto", 0, 0, "auto|required|off",
     "attribute gaps to interrupt handlers from trace events: where available (auto), or refuse without (required)"},
    {"max-spans", RTG_OPT_INT, "1000000", 1000, 100000000, NULL,
     "interrupt handler spans kept for the attribution (more are counted only)"},
    {"no-mount-tracefs", RTG_OPT_FLAG, NULL, 0, 0, NULL,
     "refuse to mount tracefs where it is missing (no attribution then)"},
    {0},
};

#define SPAN_TOL_NS 500          /* clock reading vs trace timestamp */
#define MAX_SOURCES_LISTED 64
#define WATCHDOG_MARGIN_NS 20000000000LL

typedef struct {
    uint64_t gaps;
    int64_t max_gap, max_span;
    long double span_sum;
    uint64_t spans;
    size_t last_gap;             /* index + 1 of the last gap counted */
} source_stat;

static void put_dist(rtg_result *res, const char *name, rtg_dist *d)
{
    rtg_j_set(res->metrics, name, rtg_j_dist(d, "ns"));
}

/* Each stored gap against the handler spans (both in time order). */
static void attribute(const rtg_gaploop *g, size_t stored, const rtg_irqtrace *t, rtg_result *res)
{
    const rtg_irq_span *sp;
    size_t ns = rtg_irqtrace_spans(t, &sp);
    unsigned nsrc = rtg_irqtrace_nsources(t);
    source_stat *st = calloc(nsrc ? nsrc : 1, sizeof *st);
    rtg_dist irq_gap, other, dispatch, entry, handler, soft;
    rtg_dist *all[] = {&irq_gap, &other, &dispatch, &entry, &handler, &soft};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        rtg_dist_init(all[i], 0, 0);
    uint64_t outside = 0, attributed = 0, preempted = 0;
    size_t j = 0;
    for (size_t i = 0; i < stored; i++) {
        int64_t s = g->start[i], e = g->start[i] + g->len[i];
        while (j < ns && sp[j].exit < s - SPAN_TOL_NS) {
            outside += sp[j].hard == 1;
            j++;
        }
        int64_t first_entry = 0, last_exit = 0;
        bool any = false, switched = false;
        size_t k = j;
        for (; k < ns && sp[k].entry <= e + SPAN_TOL_NS; k++) {
            if (sp[k].entry < s - SPAN_TOL_NS || sp[k].exit > e + SPAN_TOL_NS) {
                outside += sp[k].hard == 1;
                continue;
            }
            if (sp[k].hard == RTG_IRQ_SWITCH) {
                switched = true;
                continue;
            }
            source_stat *x = sp[k].source < nsrc ? &st[sp[k].source] : NULL;
            int64_t dur = sp[k].exit - sp[k].entry;
            if (x) {
                x->spans++;
                x->span_sum += dur;
                x->max_span = dur > x->max_span ? dur : x->max_span;
                if (x->last_gap != i + 1) {          /* each gap once per source */
                    x->last_gap = i + 1;
                    x->gaps++;
                    x->max_gap = g->len[i] > x->max_gap ? g->len[i] : x->max_gap;
                }
            }
            if (!sp[k].hard) {
                rtg_dist_add(&soft, dur);
                continue;
            }
            rtg_dist_add(&handler, dur);
            if (!any || sp[k].entry < first_entry)
                first_entry = sp[k].entry;
            if (!any || sp[k].exit > last_exit)
                last_exit = sp[k].exit;
            any = true;
        }
        j = k;
        preempted += switched;
        if (any && !switched) {
            attributed++;
            rtg_dist_add(&irq_gap, g->len[i]);
            rtg_dist_add(&entry, first_entry > s ? first_entry - s : 0);
            rtg_dist_add(&dispatch, e > last_exit ? e - last_exit : 0);
        } else {
            rtg_dist_add(&other, g->len[i]);
        }
    }
    for (; j < ns; j++)
        outside += sp[j].hard == 1;
    put_dist(res, "irq_gap", &irq_gap);
    put_dist(res, "other_gap", &other);
    put_dist(res, "dispatch", &dispatch);
    put_dist(res, "irq_entry", &entry);
    put_dist(res, "handler", &handler);
    put_dist(res, "softirq", &soft);
    rtg_json *m = res->metrics;
    rtg_j_set(m, "gaps_attributed", rtg_j_scalar_int((int64_t)attributed, "count"));
    rtg_j_set(m, "gaps_unattributed", rtg_j_scalar_int((int64_t)(stored - attributed), "count"));
    rtg_j_set(m, "gaps_switched", rtg_j_scalar_int((int64_t)preempted, "count"));
    rtg_j_set(m, "handlers_below_threshold", rtg_j_scalar_int((int64_t)outside, "count"));
    rtg_j_set(m, "trace_lost", rtg_j_scalar_int((int64_t)rtg_irqtrace_lost(t), "count"));
    rtg_j_set(m, "spans_not_stored", rtg_j_scalar_int((int64_t)rtg_irqtrace_not_stored(t), "count"));
    rtg_json *list = rtg_j_set(res->extra, "sources", rtg_j_arr());
    for (unsigned s = 0; s < nsrc && s < MAX_SOURCES_LISTED; s++) {
        if (!st[s].spans || !strcmp(rtg_irqtrace_source(t, s), "sched_switch"))
            continue;
        rtg_json *o = rtg_j_push(list, rtg_j_obj());
        rtg_j_set(o, "source", rtg_j_str(rtg_irqtrace_source(t, s)));
        rtg_j_set(o, "gaps", rtg_j_int((int64_t)st[s].gaps));
        rtg_j_set(o, "spans", rtg_j_int((int64_t)st[s].spans));
        rtg_j_set(o, "span_avg_ns", rtg_j_num((double)(st[s].span_sum / st[s].spans)));
        rtg_j_set(o, "span_max_ns", rtg_j_int(st[s].max_span));
        rtg_j_set(o, "gap_max_ns", rtg_j_int(st[s].max_gap));
    }
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        rtg_dist_free(all[i]);
    free(st);
}

static int irq_gap_run(const rtg_opts *o, rtg_result *res)
{
    static rtg_gaploop g;
    memset(&g, 0, sizeof g);
    g.duration_ns = (int64_t)(rtg_opt_num(o, "duration-s") * 1e9);
    g.threshold_ns = rtg_opt_int(o, "threshold-ns");
    const char *mode = rtg_opt_str(o, "attribution");
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, false, 1, g.duration_ns + WATCHDOG_MARGIN_NS, NULL, NULL);
    if (status != RTG_EXIT_OK)
        return status;
    if (rtg_gaploop_alloc(&g, (size_t)rtg_opt_int(o, "max-gaps")) != 0) {
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu gaps; lower --max-gaps.", g.cap);
    }

    rtg_json *attr = rtg_j_set(res->env, "handlers", rtg_j_obj());
    rtg_irqtrace *trace = NULL;
    if (strcmp(mode, "off") != 0) {
        char note[300], err[400];
        trace = rtg_irqtrace_start(s.b.cpu, (size_t)rtg_opt_int(o, "max-spans"), !rtg_opt_flag(o, "no-mount-tracefs"),
                                   note, sizeof note, err, sizeof err);
        if (note[0])
            rtg_j_set(attr, "note", rtg_j_str(note));
        if (!trace) {
            if (!strcmp(mode, "required")) {
                rtg_scn_join(&s, res, "");
                rtg_gaploop_free(&g);
                return rtg_fail(res, RTG_EXIT_FAIL, "%s", err);
            }
            rtg_j_set(attr, "reason", rtg_j_str(err));
        }
    } else {
        rtg_j_set(attr, "reason", rtg_j_str("--attribution off"));
    }
    rtg_j_set(attr, "available", rtg_j_bool(trace != NULL));

    rtg_role loop = {"clock loop", rtg_gaploop_main, &g, 0, RTG_SCN_CPU, RTG_AT_STARTED, RTG_PRIM_SEM, 0};
    rtg_scn_add(&s, &loop);
    s.deadline_ends_run = true;
    status = rtg_scn_join(&s, res, "the loop");
    rtg_irqtrace_stop(trace);
    if (status == RTG_EXIT_OK) {
        rtg_gaploop_report(&g, res);
        if (trace) {
            attribute(&g, rtg_gaploop_stored(&g), trace, res);
            rtg_j_set(attr, "events", rtg_j_str(rtg_irqtrace_events(trace)));
            rtg_j_set(attr, "trace_clock", rtg_j_str("mono"));
            rtg_j_set(attr, "cpu", rtg_j_int(s.b.cpu));
        }
        rtg_micro_method(res, "gap: from the last clock reading before the CPU was taken away to the first after it "
                              "came back; dispatch: from the last hard-interrupt handler's exit in a gap to the "
                              "thread's next reading (trace events, trace clock mono)");
    }
    rtg_irqtrace_free(trace);
    if (rtg_scn_leaked(&s))
        return status;
    rtg_gaploop_free(&g);
    return status;
}

static const rtg_metric irq_gap_metrics[] = {
    {"gap", RTG_METRIC_DISTRIBUTION, "ns", 0, "each gap above --threshold-ns the spinning thread saw"},
    {"gaps", RTG_METRIC_SCALAR, "count", 0, "gaps seen"},
    {"gaps_not_stored", RTG_METRIC_SCALAR, "count", 0, "gaps beyond --max-gaps, counted but not stored"},
    {"loops", RTG_METRIC_SCALAR, "count", 0, "iterations of the loop"},
    {"stolen_fraction", RTG_METRIC_SCALAR, "ratio", 0, "share of the run's time spent in gaps"},
    {"run_ns", RTG_METRIC_SCALAR, "ns", 0, "length of the run"},
    {"dispatch", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "IRQ_P_DLT analogue: the last hard-interrupt handler's exit in a gap to the thread running again (with the attribution)"},
    {"irq_entry", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "the thread's last reading before a gap to the first handler's entry: the thread interrupted -> its handler (with the attribution)"},
    {"handler", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "each hard-interrupt handler span inside a gap (with the attribution)"},
    {"softirq", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "each softirq span inside a gap (with the attribution)"},
    {"irq_gap", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "gaps in which a hard-interrupt handler ran and no other task (with the attribution)"},
    {"other_gap", RTG_METRIC_DISTRIBUTION, "ns", RTG_METRIC_CONDITIONAL,
     "gaps with no handler inside (host stalls) or a task switch (another task ran) (with the attribution)"},
    {"gaps_attributed", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "gaps with a handler inside and no task switch (irq_gap)"},
    {"gaps_unattributed", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "the other stored gaps (other_gap)"},
    {"gaps_switched", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "gaps in which the thread was switched out (another task ran): in other_gap whatever handlers ran"},
    {"handlers_below_threshold", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL,
     "hard handler spans in no stored gap (the gap they made was below --threshold-ns, or not stored)"},
    {"trace_lost", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "trace events the kernel dropped"},
    {"spans_not_stored", RTG_METRIC_SCALAR, "count", RTG_METRIC_CONDITIONAL, "handler spans beyond --max-spans"},
    {0},
};

const rtg_test rtg_test_irq_gap = {
    .name = "irq-gap",
    .summary = "IRQ_P_DLT analogue: gaps a spinning thread sees on one CPU, attributed to interrupt handlers "
               "from trace events where available (interrupt -> the thread running again)",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = irq_gap_opts,
    .metrics = irq_gap_metrics,
    .flags = RTG_TEST_RT,
    .run = irq_gap_run,
};

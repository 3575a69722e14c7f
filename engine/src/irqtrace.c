/* irqtrace: interrupt handler spans on one CPU from trace events (irqtrace.h). */
#include "irqtrace.h"
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef RTG_HAVE_TRACEFS

rtg_irqtrace *rtg_irqtrace_start(int cpu, size_t cap, bool may_mount, char *note, size_t notelen,
                                 char *err, size_t errlen)
{
    (void)cpu, (void)cap, (void)may_mount;
    if (notelen)
        note[0] = '\0';
    snprintf(err, errlen, "the attribution to interrupt handlers is unavailable in this build because the "
                          "engine was built without libtracefs (a static or POSIX-only build)");
    return NULL;
}
void rtg_irqtrace_stop(rtg_irqtrace *t) { (void)t; }
size_t rtg_irqtrace_spans(const rtg_irqtrace *t, const rtg_irq_span **spans)
{
    (void)t;
    *spans = NULL;
    return 0;
}
const char *rtg_irqtrace_source(const rtg_irqtrace *t, unsigned source) { (void)t, (void)source; return ""; }
unsigned rtg_irqtrace_nsources(const rtg_irqtrace *t) { (void)t; return 0; }
uint64_t rtg_irqtrace_lost(const rtg_irqtrace *t) { (void)t; return 0; }
uint64_t rtg_irqtrace_not_stored(const rtg_irqtrace *t) { (void)t; return 0; }
const char *rtg_irqtrace_events(const rtg_irqtrace *t) { (void)t; return ""; }
void rtg_irqtrace_free(rtg_irqtrace *t) { (void)t; }

#else

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include <tracefs.h>
#include <event-parse.h>

#include "samples.h"
#include "split.h"

#define IRQ_MAX_EVENTS 64        /* event kinds enabled */
#define IRQ_MAX_SOURCES 512
#define IRQ_DEPTH 8              /* nesting of handlers of one class */
#define IRQ_BUFFER_KB 4096
#define IRQ_DRAIN_NS 100000000

typedef struct {
    int id;
    bool entry, hard;
    enum { K_IRQ, K_VECTOR, K_SOFTIRQ, K_SWITCH } kind;
    int source;                  /* K_VECTOR: fixed */
    struct tep_format_field *f_num, *f_name;
} irq_event;

typedef struct {
    int64_t ts;
    int source;
} open_span;

struct rtg_irqtrace {
    struct tracefs_instance *inst;
    struct tep_handle *tep;
    cpu_set_t cpus;
    irq_event ev[IRQ_MAX_EVENTS];
    int nev;
    char *names[IRQ_MAX_SOURCES];
    int irq_num[IRQ_MAX_SOURCES];   /* K_IRQ sources: their number; -1 otherwise */
    int nsources;
    open_span stack[2][IRQ_DEPTH];  /* [hard] */
    int depth[2];
    rtg_irq_span *spans;
    size_t cap, n;
    uint64_t not_stored, lost;
    char events[1024];
    pthread_t reader;
    bool reader_started;
    _Atomic bool stop;
    pthread_mutex_t lock;
};

static const char *const SOFTIRQ_NAMES[] = {"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL",
                                            "TASKLET", "SCHED", "HRTIMER", "RCU"};
static const char *const SYSTEMS[] = {"irq", "irq_vectors", "sched", NULL};

static int source_named(rtg_irqtrace *t, const char *name, int irq)
{
    for (int i = 0; i < t->nsources; i++)
        if ((irq >= 0 && t->irq_num[i] == irq) || (irq < 0 && t->irq_num[i] < 0 && !strcmp(t->names[i], name)))
            return i;
    if (t->nsources == IRQ_MAX_SOURCES)
        return IRQ_MAX_SOURCES - 1;            /* the last one collects the rest */
    t->names[t->nsources] = strdup(name);
    t->irq_num[t->nsources] = irq;
    return t->nsources++;
}

static void push_span(rtg_irqtrace *t, int64_t entry, int64_t exit, int source, int hard)
{
    if (t->n == t->cap) {
        t->not_stored++;
        return;
    }
    t->spans[t->n++] = (rtg_irq_span){entry, exit, (uint16_t)source, (uint8_t)hard};
}

static int on_event(struct tep_event *event, struct tep_record *r, int cpu, void *ctx)
{
    rtg_irqtrace *t = ctx;
    (void)cpu;
    if (r->missed_events > 0)
        t->lost += (uint64_t)r->missed_events;
    irq_event *e = NULL;
    for (int i = 0; i < t->nev; i++)
        if (t->ev[i].id == event->id) {
            e = &t->ev[i];
            break;
        }
    if (!e)
        return 0;
    int cls = e->hard ? 1 : 0;
    int64_t ts = (int64_t)r->ts;
    if (e->kind == K_SWITCH) {               /* a task switch on the CPU: a marker, not a span */
        push_span(t, ts, ts, e->source, RTG_IRQ_SWITCH);
        return 0;
    }
    if (e->entry) {
        int source = e->source;
        unsigned long long num = 0;
        if (e->kind == K_IRQ) {
            tep_read_number_field(e->f_num, r->data, &num);
            int irq = (int)num;
            int k;
            for (k = 0; k < t->nsources; k++)
                if (t->irq_num[k] == irq)
                    break;
            if (k < t->nsources) {
                source = k;
            } else {
                char name[96];
                int len = 0;
                const char *s = e->f_name ? tep_get_field_raw(NULL, event, "name", r, &len, 0) : NULL;
                snprintf(name, sizeof name, "irq %d %.*s", irq, s ? (int)strnlen(s, (size_t)len) : 0, s ? s : "");
                source = source_named(t, name, irq);
            }
        } else if (e->kind == K_SOFTIRQ) {
            tep_read_number_field(e->f_num, r->data, &num);
            char name[48];
            snprintf(name, sizeof name, "softirq %s",
                     num < sizeof SOFTIRQ_NAMES / sizeof *SOFTIRQ_NAMES ? SOFTIRQ_NAMES[num] : "?");
            source = source_named(t, name, -1);
        }
        if (t->depth[cls] < IRQ_DEPTH)
            t->stack[cls][t->depth[cls]] = (open_span){ts, source};
        t->depth[cls]++;
    } else if (t->depth[cls] > 0) {
        t->depth[cls]--;
        if (t->depth[cls] < IRQ_DEPTH) {
            open_span o = t->stack[cls][t->depth[cls]];
            push_span(t, o.ts, ts, o.source, e->hard);
        }
    }
    return 0;
}

static void drain(rtg_irqtrace *t)
{
    pthread_mutex_lock(&t->lock);
    tracefs_iterate_raw_events(t->tep, t->inst, &t->cpus, sizeof t->cpus, on_event, t);
    pthread_mutex_unlock(&t->lock);
}

static void *reader_main(void *p)
{
    rtg_irqtrace *t = p;
    while (!atomic_load(&t->stop)) {
        struct timespec ts = {0, IRQ_DRAIN_NS};
        nanosleep(&ts, NULL);
        drain(t);
    }
    return NULL;
}

static void add_event(rtg_irqtrace *t, const char *system, const char *name)
{
    if (t->nev == IRQ_MAX_EVENTS)
        return;
    struct tep_event *ev = tep_find_event_by_name(t->tep, system, name);
    if (!ev || tracefs_event_enable(t->inst, system, name) < 0)
        return;
    irq_event *e = &t->ev[t->nev];
    memset(e, 0, sizeof *e);
    e->id = ev->id;
    size_t len = strlen(name);
    e->entry = len > 6 && !strcmp(name + len - 6, "_entry");
    if (!strcmp(system, "sched")) {
        e->kind = K_SWITCH;
        e->source = source_named(t, "sched_switch", -1);
    } else if (!strcmp(system, "irq_vectors")) {
        e->kind = K_VECTOR;
        e->hard = true;
        char vec[64];
        snprintf(vec, sizeof vec, "%.*s", (int)(len - (e->entry ? 6 : 5)), name);
        e->source = source_named(t, vec, -1);
    } else if (!strncmp(name, "softirq", 7)) {
        e->kind = K_SOFTIRQ;
        e->f_num = tep_find_field(ev, "vec");
        if (!e->f_num)
            return;
    } else {
        e->kind = K_IRQ;
        e->hard = true;
        e->f_num = tep_find_field(ev, "irq");
        e->f_name = tep_find_field(ev, "name");
        if (!e->f_num)
            return;
    }
    size_t used = strlen(t->events);
    if (e->kind == K_SWITCH)
        snprintf(t->events + used, sizeof t->events - used, "%s%s:%s", used ? ", " : "", system, name);
    else if (e->entry)
        snprintf(t->events + used, sizeof t->events - used, "%s%s:%.*s", used ? ", " : "", system,
                 (int)(len - 6), name);
    t->nev++;
}

rtg_irqtrace *rtg_irqtrace_start(int cpu, size_t cap, bool may_mount, char *note, size_t notelen,
                                 char *err, size_t errlen)
{
    const char *what = "the attribution to interrupt handlers";
    if (rtg_tracefs_ready(what, may_mount, note, notelen, err, errlen) != 0)
        return NULL;
    rtg_irqtrace *t = calloc(1, sizeof *t);
    if (!t || !(t->spans = calloc(cap ? cap : 1, sizeof *t->spans))) {
        free(t);
        snprintf(err, errlen, "out of memory for %zu interrupt spans.", cap);
        return NULL;
    }
    rtg_touch(t->spans, cap * sizeof *t->spans);
    t->cap = cap;
    pthread_mutex_init(&t->lock, NULL);
    CPU_ZERO(&t->cpus);
    CPU_SET(cpu, &t->cpus);
    char name[64];
    snprintf(name, sizeof name, "rtgauge-irq-%d", (int)getpid());
    t->inst = tracefs_instance_create(name);
    if (!t->inst) {
        snprintf(err, errlen, "%s could not create the trace instance %s (%s); run as root.", what, name,
                 strerror(errno));
        rtg_irqtrace_free(t);
        return NULL;
    }
    t->tep = tracefs_local_events_system(NULL, SYSTEMS);
    if (!t->tep) {
        snprintf(err, errlen, "%s could not read the trace event formats (run as root).", what);
        rtg_irqtrace_free(t);
        return NULL;
    }
    char mask[300] = "";
    size_t len = 0;
    for (int g = cpu / 32; g >= 0; g--)
        len += (size_t)snprintf(mask + len, sizeof mask - len, g ? "%x," : "%x",
                                g == cpu / 32 ? 1u << (cpu % 32) : 0u);
    tracefs_trace_off(t->inst);
    if (tracefs_instance_file_write(t->inst, "trace_clock", "mono") < 0 ||
        tracefs_instance_file_write(t->inst, "tracing_cpumask", mask) < 0 ||
        tracefs_instance_set_buffer_size(t->inst, IRQ_BUFFER_KB, -1) < 0) {
        snprintf(err, errlen, "%s could not set up the trace instance %s (%s); run as root.", what, name,
                 strerror(errno));
        rtg_irqtrace_free(t);
        return NULL;
    }
    add_event(t, "irq", "irq_handler_entry");
    add_event(t, "irq", "irq_handler_exit");
    add_event(t, "irq", "softirq_entry");
    add_event(t, "irq", "softirq_exit");
    add_event(t, "sched", "sched_switch");
    char **vectors = tracefs_system_events(NULL, "irq_vectors");
    for (int i = 0; vectors && vectors[i]; i++) {
        size_t l = strlen(vectors[i]);
        if ((l > 6 && !strcmp(vectors[i] + l - 6, "_entry")) || (l > 5 && !strcmp(vectors[i] + l - 5, "_exit")))
            add_event(t, "irq_vectors", vectors[i]);
    }
    tracefs_list_free(vectors);
    if (t->nev < 2) {
        snprintf(err, errlen, "%s needs the trace events irq:irq_handler_entry and irq_handler_exit, which this "
                              "kernel does not have or this user cannot read (run as root).", what);
        rtg_irqtrace_free(t);
        return NULL;
    }
    if (tracefs_trace_on(t->inst) < 0) {
        snprintf(err, errlen, "%s could not start tracing (%s).", what, strerror(errno));
        rtg_irqtrace_free(t);
        return NULL;
    }
    /* the reader at the ordinary policy, off the measured CPU's priorities (rt.c) */
    char why[256];
    if (rtg_spawn_thread(&t->reader, RTG_POL_OTHER, 0, -1, 8192, reader_main, t, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s could not start its trace reader: %s", what, why);
        rtg_irqtrace_free(t);
        return NULL;
    }
    t->reader_started = true;
    return t;
}

void rtg_irqtrace_stop(rtg_irqtrace *t)
{
    if (!t)
        return;
    tracefs_trace_off(t->inst);
    if (t->reader_started) {
        atomic_store(&t->stop, true);
        pthread_join(t->reader, NULL);
        t->reader_started = false;
    }
    drain(t);
}

size_t rtg_irqtrace_spans(const rtg_irqtrace *t, const rtg_irq_span **spans)
{
    *spans = t ? t->spans : NULL;
    return t ? t->n : 0;
}

const char *rtg_irqtrace_source(const rtg_irqtrace *t, unsigned source)
{
    return t && source < (unsigned)t->nsources ? t->names[source] : "";
}

unsigned rtg_irqtrace_nsources(const rtg_irqtrace *t) { return t ? (unsigned)t->nsources : 0; }
uint64_t rtg_irqtrace_lost(const rtg_irqtrace *t) { return t ? t->lost : 0; }
uint64_t rtg_irqtrace_not_stored(const rtg_irqtrace *t) { return t ? t->not_stored : 0; }
const char *rtg_irqtrace_events(const rtg_irqtrace *t) { return t ? t->events : ""; }

void rtg_irqtrace_free(rtg_irqtrace *t)
{
    if (!t)
        return;
    if (t->reader_started) {
        atomic_store(&t->stop, true);
        pthread_join(t->reader, NULL);
    }
    if (t->inst) {
        tracefs_trace_off(t->inst);
        tracefs_instance_destroy(t->inst);
        tracefs_instance_free(t->inst);
    }
    if (t->tep)
        tep_free(t->tep);
    for (int i = 0; i < t->nsources; i++)
        free(t->names[i]);
    free(t->spans);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

#endif

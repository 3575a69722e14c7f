/* split: Ti into its interrupt and scheduling parts from trace events (split.h). */
#include "split.h"

#ifndef RTG_HAVE_TRACEFS

const char *rtg_split_unavailable(void)
{
    return "the latency split is unavailable in this build because the engine was built without "
           "libtracefs (a static or POSIX-only build, or one where libtracefs-dev and libtraceevent-dev "
           "were not installed)";
}

int rtg_tracefs_ready(const char *what, bool may_mount, char *note, size_t notelen, char *err, size_t errlen)
{
    (void)may_mount;
    if (notelen)
        note[0] = '\0';
    snprintf(err, errlen, "%s is unavailable in this build because the engine was built without libtracefs.", what);
    return -1;
}

rtg_split *rtg_split_start(const int *cpus, int ncpus, bool may_mount, char *note, size_t notelen,
                           char *err, size_t errlen)
{
    (void)cpus, (void)ncpus, (void)may_mount;
    if (notelen)
        note[0] = '\0';
    snprintf(err, errlen, "%s.", rtg_split_unavailable());
    return NULL;
}

void rtg_split_stop(rtg_split *s) { (void)s; }
void rtg_split_report(const rtg_split *s, const int *tids, int n, rtg_result *res)
{
    (void)s, (void)tids, (void)n, (void)res;
}
void rtg_split_free(rtg_split *s) { (void)s; }

#else

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include <tracefs.h>
#include <event-parse.h>

#include "rt.h"
#include "samples.h"
#include "split_pair.h"

#define SPLIT_MAX_PIDS 64          /* tasks of this process seen arming timers */
#define SPLIT_NEG_CACHE 256        /* pids seen that are not ours */
#define SPLIT_BUFFER_KB 4096       /* per CPU */
#define SPLIT_DRAIN_NS 100000000   /* reader period */


struct rtg_split {
    struct tracefs_instance *inst;
    struct tep_handle *tep;
    cpu_set_t cpus;
    int cpu_size;
    struct tep_event *ev_start, *ev_expire, *ev_run;
    const char *run_system, *run_event;   /* the "thread running" marker in use */
    struct tep_format_field *f_start_timer, *f_start_fn, *f_start_soft, *f_start_pid;
    struct tep_format_field *f_exp_timer, *f_exp_now, *f_exp_pid;
    struct tep_format_field *f_run_pid;
    rtg_split_task tasks[SPLIT_MAX_PIDS];
    int ntasks;
    int not_ours[SPLIT_NEG_CACHE];
    int nnot;
    rtg_split_pairing pairing;     /* the sleep callback's address, unmatched and foreign counts */
    uint64_t lost;
    pthread_t reader;
    bool reader_started;
    _Atomic bool stop;
    pthread_mutex_t lock;          /* one drainer at a time */
};

static const char *const SYSTEMS[] = {"timer", "syscalls", "sched", NULL};

/* The marker of "the thread runs": its clock_nanosleep returning (in the thread's own
 * context, after it was switched in). sched:sched_switch would be earlier, but a kernel
 * may not trace the switch out of the idle task (this machine's 6.x KVM guest does not),
 * so a wake-up on an idle CPU would never be seen; it is the fallback where the kernel
 * lacks syscall events. */
static bool have_event(const char *system, const char *event)
{
    char *path = tracefs_event_get_file(NULL, system, event, "format");
    bool ok = path && access(path, R_OK) == 0;
    tracefs_put_tracing_file(path);
    return ok;
}

static bool tracefs_mounted(const char **dir)
{
    return tracefs_tracing_dir_is_mounted(false, dir) == 1 && *dir;
}

/* Mount tracefs where it is expected, as rtla, trace-cmd and libtracefs do when it is
 * missing; it stays mounted (it is the system's, not this run's). 0 when tracefs is
 * there after (also when another process mounted it meanwhile), else -1 with why. */
static int mount_tracefs(const char *what, char *note, size_t notelen, char *why, size_t whylen)
{
    const char *dir = NULL;
    if (mount("nodev", RTG_TRACEFS_DIR, "tracefs", 0, NULL) == 0) {
        snprintf(note, notelen, "tracefs was not mounted: mounted it at %s for %s "
                                "(left mounted, as rtla and trace-cmd do)", RTG_TRACEFS_DIR, what);
        return 0;
    }
    int e = errno;
    if (tracefs_mounted(&dir))
        return 0;
    snprintf(why, whylen, "%s", strerror(e));
    return -1;
}

const char *rtg_split_unavailable(void)
{
    static char why[256];
    const char *dir = NULL;
    if (!tracefs_mounted(&dir))
        return "the latency split needs tracefs, which is not mounted (mount -t tracefs nodev "
               RTG_TRACEFS_DIR ", as root)";
    const char *need[][2] = {{"timer", "hrtimer_start"}, {"timer", "hrtimer_expire_entry"}};
    if (!have_event("syscalls", "sys_exit_clock_nanosleep") && !have_event("sched", "sched_switch"))
        return "the latency split needs the trace event syscalls:sys_exit_clock_nanosleep or "
               "sched:sched_switch, which this kernel does not have or this user cannot read (run as root)";
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (!have_event(need[i][0], need[i][1])) {
            snprintf(why, sizeof why,
                     "the latency split needs the trace event %s:%s, which this kernel does not "
                     "have or this user cannot read (run as root)", need[i][0], need[i][1]);
            return why;
        }
    }
    return NULL;
}

/* Is pid a task of this process? Remembered either way. */
static rtg_split_task *task_of(rtg_split *s, int pid)
{
    for (int i = 0; i < s->ntasks; i++)
        if (s->tasks[i].pid == pid)
            return &s->tasks[i];
    for (int i = 0; i < s->nnot; i++)
        if (s->not_ours[i] == pid)
            return NULL;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", pid);
    if (access(path, F_OK) != 0 || s->ntasks == SPLIT_MAX_PIDS) {
        s->not_ours[s->nnot++ % SPLIT_NEG_CACHE] = pid;
        if (s->nnot > SPLIT_NEG_CACHE)
            s->nnot = SPLIT_NEG_CACHE;
        return NULL;
    }
    rtg_split_task *t = &s->tasks[s->ntasks];
    if (rtg_split_task_init(t, pid) != 0)
        return NULL;
    s->ntasks++;
    return t;
}

static unsigned long long field(struct tep_format_field *f, struct tep_record *r)
{
    unsigned long long v = 0;
    tep_read_number_field(f, r->data, &v);
    return v;
}

static int on_event(struct tep_event *ev, struct tep_record *r, int cpu, void *ctx)
{
    rtg_split *s = ctx;
    (void)cpu;
    if (r->missed_events > 0)
        s->lost += (uint64_t)r->missed_events;
    if (ev->id == s->ev_start->id) {
        rtg_split_task *t = task_of(s, (int)field(s->f_start_pid, r));
        if (t)
            rtg_split_on_start(&s->pairing, t, field(s->f_start_timer, r), field(s->f_start_fn, r),
                               (long long)field(s->f_start_soft, r));
    } else if (ev->id == s->ev_expire->id) {
        rtg_split_on_expire(s->tasks, s->ntasks, field(s->f_exp_timer, r), (long long)field(s->f_exp_now, r),
                            r->ts);
    } else if (ev->id == s->ev_run->id) {
        int next = (int)field(s->f_run_pid, r);
        for (int i = 0; i < s->ntasks; i++)
            if (s->tasks[i].pid == next) {
                rtg_split_on_run(&s->pairing, &s->tasks[i], r->ts);
                break;
            }
    }
    return 0;
}

static void drain(rtg_split *s)
{
    pthread_mutex_lock(&s->lock);
    tracefs_iterate_raw_events(s->tep, s->inst, &s->cpus, s->cpu_size, on_event, s);
    pthread_mutex_unlock(&s->lock);
}

static void *reader_main(void *p)
{
    rtg_split *s = p;
    while (!atomic_load(&s->stop)) {
        struct timespec ts = {0, SPLIT_DRAIN_NS};
        nanosleep(&ts, NULL);
        drain(s);
    }
    return NULL;
}

static int lookup(rtg_split *s, char *err, size_t errlen)
{
    s->ev_start = tep_find_event_by_name(s->tep, "timer", "hrtimer_start");
    s->ev_expire = tep_find_event_by_name(s->tep, "timer", "hrtimer_expire_entry");
    bool syscall = have_event("syscalls", "sys_exit_clock_nanosleep");
    s->run_system = syscall ? "syscalls" : "sched";
    s->run_event = syscall ? "sys_exit_clock_nanosleep" : "sched_switch";
    s->ev_run = tep_find_event_by_name(s->tep, s->run_system, s->run_event);
    if (!s->ev_start || !s->ev_expire || !s->ev_run) {
        snprintf(err, errlen, "the kernel's timer and sched trace events could not be read; "
                              "the latency split is unavailable here.");
        return -1;
    }
    s->f_start_timer = tep_find_field(s->ev_start, "hrtimer");
    s->f_start_fn = tep_find_field(s->ev_start, "function");
    s->f_start_soft = tep_find_field(s->ev_start, "softexpires");
    s->f_start_pid = tep_find_common_field(s->ev_start, "common_pid");
    s->f_exp_timer = tep_find_field(s->ev_expire, "hrtimer");
    s->f_exp_now = tep_find_field(s->ev_expire, "now");
    s->f_exp_pid = tep_find_common_field(s->ev_expire, "common_pid");
    s->f_run_pid = syscall ? tep_find_common_field(s->ev_run, "common_pid")
                           : tep_find_field(s->ev_run, "next_pid");
    if (!s->f_start_timer || !s->f_start_fn || !s->f_start_soft || !s->f_start_pid || !s->f_exp_timer || !s->f_exp_now ||
        !s->f_run_pid) {
        snprintf(err, errlen, "the kernel's hrtimer or thread-running event lacks a field the split "
                              "needs (hrtimer, function, softexpires, now, next_pid); it is unavailable here.");
        return -1;
    }
    return 0;
}

int rtg_tracefs_ready(const char *what, bool may_mount, char *note, size_t notelen, char *err, size_t errlen)
{
    const char *dir = NULL;
    if (notelen)
        note[0] = '\0';
    if (tracefs_mounted(&dir))
        return 0;
    char why_mount[128];
    if (!may_mount) {
        snprintf(err, errlen, "%s needs tracefs, which is not mounted; mount it "
                              "(mount -t tracefs nodev %s) or drop --no-mount-tracefs.", what, RTG_TRACEFS_DIR);
        return -1;
    }
    if (mount_tracefs(what, note, notelen, why_mount, sizeof why_mount) != 0) {
        snprintf(err, errlen, "%s needs tracefs, which is not mounted, and mounting it at "
                              "%s failed (%s); run as root.", what, RTG_TRACEFS_DIR, why_mount);
        return -1;
    }
    return 0;
}

rtg_split *rtg_split_start(const int *cpus, int ncpus, bool may_mount, char *note, size_t notelen,
                           char *err, size_t errlen)
{
    if (rtg_tracefs_ready("the latency split", may_mount, note, notelen, err, errlen) != 0)
        return NULL;
    const char *why = rtg_split_unavailable();
    if (why) {
        snprintf(err, errlen, "%s.", why);
        return NULL;
    }
    rtg_split *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory for the latency split.");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    CPU_ZERO(&s->cpus);
    for (int i = 0; i < ncpus; i++)
        CPU_SET(cpus[i], &s->cpus);
    s->cpu_size = sizeof s->cpus;
    char name[64];
    snprintf(name, sizeof name, "rtgauge-split-%d", (int)getpid());
    s->inst = tracefs_instance_create(name);
    if (!s->inst) {
        snprintf(err, errlen, "could not create the trace instance %s (%s); run as root.", name,
                 strerror(errno));
        free(s);
        return NULL;
    }
    s->tep = tracefs_local_events_system(NULL, SYSTEMS);
    if (!s->tep || lookup(s, err, errlen) != 0) {
        if (!s->tep)
            snprintf(err, errlen, "could not read the trace event formats; the latency split is "
                                  "unavailable here.");
        rtg_split_free(s);
        return NULL;
    }
    /* the thread's own sleep timer is told from the kernel's timers by its callback
     * (split_pair.h); where kallsyms hides it, every timer is taken, as env.split says */
    s->pairing.sleep_fn = rtg_split_kernel_symbol("/proc/kallsyms", RTG_SPLIT_SLEEP_FN);
    /* the instance's cpumask: hex mask of the measured CPUs (up to 1024) */
    char mask[300] = "";
    size_t len = 0;
    int top = 0;
    for (int i = 0; i < ncpus; i++)
        top = cpus[i] > top ? cpus[i] : top;
    for (int g = top / 32; g >= 0; g--) {
        unsigned v = 0;
        for (int b = 0; b < 32; b++)
            if (CPU_ISSET(g * 32 + b, &s->cpus))
                v |= 1u << b;
        len += (size_t)snprintf(mask + len, sizeof mask - len, g ? "%x," : "%x", v);
    }
    tracefs_trace_off(s->inst);
    if (tracefs_instance_file_write(s->inst, "trace_clock", "mono") < 0 ||
        tracefs_instance_file_write(s->inst, "tracing_cpumask", mask) < 0 ||
        tracefs_instance_set_buffer_size(s->inst, SPLIT_BUFFER_KB, -1) < 0 ||
        tracefs_event_enable(s->inst, "timer", "hrtimer_start") < 0 ||
        tracefs_event_enable(s->inst, "timer", "hrtimer_expire_entry") < 0 ||
        tracefs_event_enable(s->inst, s->run_system, s->run_event) < 0 ||
        tracefs_trace_on(s->inst) < 0) {
        snprintf(err, errlen, "could not set up the trace instance %s (%s); run as root.", name,
                 strerror(errno));
        rtg_split_free(s);
        return NULL;
    }
    /* the reader at the ordinary policy, off the measured CPU's priorities (rt.c) */
    char why_reader[256];
    if (rtg_spawn_thread(&s->reader, RTG_POL_OTHER, 0, -1, 8192, reader_main, s, why_reader,
                         sizeof why_reader) != 0) {
        snprintf(err, errlen, "could not start the trace reader: %s", why_reader);
        rtg_split_free(s);
        return NULL;
    }
    s->reader_started = true;
    return s;
}

void rtg_split_stop(rtg_split *s)
{
    if (!s)
        return;
    tracefs_trace_off(s->inst);
    if (s->reader_started) {
        atomic_store(&s->stop, true);
        pthread_join(s->reader, NULL);
        s->reader_started = false;
    }
    drain(s);
}

static void put(rtg_json *m, const char *base, int i, const rtg_dist *d)
{
    char key[64];
    if (i < 0)
        snprintf(key, sizeof key, "%s", base);
    else
        snprintf(key, sizeof key, "%s#%d", base, i);
    rtg_j_set(m, key, rtg_j_dist(d, "ns"));
}

void rtg_split_report(const rtg_split *s, const int *tids, int n, rtg_result *res)
{
    rtg_dist irq, sched;
    if (!s || rtg_dist_init(&irq, 0, 0) != 0)
        return;
    if (rtg_dist_init(&sched, 0, 0) != 0) {
        rtg_dist_free(&irq);
        return;
    }
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < s->ntasks; k++) {
            if (s->tasks[k].pid != tids[i])
                continue;
            rtg_dist_merge(&irq, &s->tasks[k].irq);
            rtg_dist_merge(&sched, &s->tasks[k].sched);
            if (n > 1) {
                put(res->metrics, "ti_irq", i, &s->tasks[k].irq);
                put(res->metrics, "ti_sched", i, &s->tasks[k].sched);
            }
        }
    }
    put(res->metrics, "ti_irq", -1, &irq);
    put(res->metrics, "ti_sched", -1, &sched);
    rtg_j_set(res->metrics, "split_lost", rtg_j_scalar_int((int64_t)s->lost, "count"));
    rtg_j_set(res->metrics, "split_unmatched", rtg_j_scalar_int((int64_t)s->pairing.unmatched, "count"));
    rtg_json *e = rtg_j_set(res->env, "split", rtg_j_obj());
    char source[200];
    snprintf(source, sizeof source, "trace events timer:hrtimer_start, timer:hrtimer_expire_entry, %s:%s",
             s->run_system, s->run_event);
    rtg_j_set(e, "source", rtg_j_str(source));
    rtg_j_set(e, "running_marker", rtg_j_str(s->run_event));
    rtg_j_set(e, "trace_clock", rtg_j_str("mono"));
    /* whether timers the kernel armed in the thread's context were told apart (split_pair.h) */
    rtg_j_set(e, "sleep_timer", s->pairing.sleep_fn ? rtg_j_str(RTG_SPLIT_SLEEP_FN) : rtg_j_null());
    rtg_j_set(e, "foreign_timers", rtg_j_int((int64_t)s->pairing.foreign));
    rtg_dist_free(&irq);
    rtg_dist_free(&sched);
}

void rtg_split_free(rtg_split *s)
{
    if (!s)
        return;
    if (s->reader_started) {
        atomic_store(&s->stop, true);
        pthread_join(s->reader, NULL);
    }
    if (s->inst) {
        tracefs_trace_off(s->inst);
        tracefs_instance_destroy(s->inst);
        tracefs_instance_free(s->inst);
    }
    if (s->tep)
        tep_free(s->tep);
    for (int i = 0; i < s->ntasks; i++)
        rtg_split_task_free(&s->tasks[i]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

#endif

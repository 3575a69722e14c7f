/* rt: scheduling policy, priority, affinity, memory locking, stack prefault,
 * /dev/cpu_dma_latency and the system facts of the env block. See rt.h. */
#include <signal.h>
#include "rt.h"
#include "portable.h"

#ifndef RTG_POSIX_ONLY
#include <alloca.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

int rtg_policy_parse(const char *name, rtg_policy *p)
{
    if (strcmp(name, "other") == 0)
        *p = RTG_POL_OTHER;
    else if (strcmp(name, "fifo") == 0)
        *p = RTG_POL_FIFO;
    else if (strcmp(name, "rr") == 0)
        *p = RTG_POL_RR;
    else
        return -1;
    return 0;
}

const char *rtg_policy_name(rtg_policy p)
{
    switch (p) {
    case RTG_POL_FIFO: return "fifo";
    case RTG_POL_RR: return "rr";
    default: return "other";
    }
}

static int os_policy(rtg_policy p)
{
    return p == RTG_POL_FIFO ? SCHED_FIFO : p == RTG_POL_RR ? SCHED_RR : SCHED_OTHER;
}

static void set_other(rtg_sched *s)
{
    struct sched_param sp = {.sched_priority = 0};
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    s->policy = RTG_POL_OTHER;
    s->priority = 0;
}

int rtg_sched_apply(rtg_sched *s, rtg_policy p, int prio, bool allow_fallback,
                    char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->asked = p;
    if (p == RTG_POL_OTHER) {
        set_other(s);
        return 0;
    }
    char emu[200];
    if (rtg_emulation(emu, sizeof emu) == 1) {
        /* the emulator's host threads would get the policy: not the target's real time */
        snprintf(s->why, sizeof s->why, "SCHED_%s is not real time here: %s",
                 p == RTG_POL_FIFO ? "FIFO" : "RR", emu);
        if (allow_fallback) {
            set_other(s);
            s->fallback = true;
            return 0;
        }
        snprintf(err, errlen, "%s; run the engine on a machine of its architecture, or pass "
                 "--allow-fallback to measure as other.", s->why);
        return -1;
    }
    struct sched_param sp = {.sched_priority = prio};
    int rc = pthread_setschedparam(pthread_self(), os_policy(p), &sp);
    if (rc == 0) {
        s->policy = p;
        s->priority = prio;
        return 0;
    }
    if (rc == EPERM) {
        struct rlimit rl = {0, 0};
        getrlimit(RLIMIT_RTPRIO, &rl);
        snprintf(s->why, sizeof s->why,
                 "SCHED_%s priority %d was refused: no CAP_SYS_NICE and RLIMIT_RTPRIO is %lld",
                 p == RTG_POL_FIFO ? "FIFO" : "RR", prio, (long long)rl.rlim_cur);
    } else {
        snprintf(s->why, sizeof s->why, "SCHED_%s priority %d failed: %s",
                 p == RTG_POL_FIFO ? "FIFO" : "RR", prio, strerror(rc));
    }
    if (allow_fallback) {
        set_other(s);
        s->fallback = true;
        return 0;
    }
    snprintf(err, errlen,
             "%s; run as root, or grant CAP_SYS_NICE or an rtprio limit of at least %d "
             "(ulimit -r / limits.conf), or pass --allow-fallback to measure as other.",
             s->why, prio);
    return -1;
}

#ifdef RTG_POSIX_ONLY
/* No affinity in POSIX: CPU 0 of a system with one CPU online is the only place
 * a thread can be "pinned" to; -1 means not pinned. */
static int no_pinning(int cpu, char *err, size_t errlen)
{
    if (cpu < 0 || (cpu == 0 && rtg_online_cpus() == 1))
        return 0;
    snprintf(err, errlen, "cannot pin a thread to CPU %d: this POSIX-only build has no thread affinity "
             "(not a POSIX interface); confine the process with the system's own tool instead.", cpu);
    return -1;
}

int rtg_pin_cpu(int cpu, char *err, size_t errlen)
{
    return no_pinning(cpu, err, errlen);
}

/* The one CPU of a uniprocessor, else -1: threads go where the system puts them. */
int rtg_allowed_cpus(int *cpus, int max)
{
    if (max < 1)
        return 0;
    cpus[0] = rtg_online_cpus() == 1 ? 0 : -1;
    return 1;
}

int rtg_confine_cpus(const int *cpus, int n, char *err, size_t errlen)
{
    (void)cpus, (void)n, (void)err, (void)errlen;   /* no affinity in POSIX: the system places threads */
    return 0;
}
#else
int rtg_pin_cpu(int cpu, char *err, size_t errlen)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
        snprintf(err, errlen, "could not pin a thread to CPU %d (%s); choose a CPU this process may use.",
                 cpu, strerror(rc));
        return -1;
    }
    return 0;
}

/* Confine the calling thread (and the threads it starts later) to cpus[0..n), each
 * free to run on any of them: the scheduler places them, nothing is pinned. */
int rtg_confine_cpus(const int *cpus, int n, char *err, size_t errlen)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++)
        if (cpus[i] >= 0 && cpus[i] < CPU_SETSIZE)
            CPU_SET(cpus[i], &set);
    if (CPU_COUNT(&set) == 0)
        return 0;
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0) {
        snprintf(err, errlen, "could not confine the threads to the CPUs given (%s); choose CPUs this "
                 "process may use.", strerror(rc));
        return -1;
    }
    return 0;
}

int rtg_allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    return n;
}
#endif

void rtg_thread_switches(uint64_t *nv, uint64_t *niv, int sign)
{
#ifdef RUSAGE_THREAD   /* the POSIX-only build: per-thread counts are Linux-only, they stay as they are */
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        *nv += (uint64_t)(sign * ru.ru_nvcsw);
        *niv += (uint64_t)(sign * ru.ru_nivcsw);
    }
#else
    (void)nv, (void)niv, (void)sign;
#endif
}

int rtg_lock_memory(void)
{
    return mlockall(MCL_CURRENT | MCL_FUTURE);
}

/* noinline + volatile writes: the compiler must not drop the touch of the stack. */
__attribute__((noinline)) void rtg_prefault_stack(size_t size)
{
#ifdef RTG_POSIX_ONLY
    volatile unsigned char buf[size ? size : 1];   /* a VLA: alloca is not POSIX */
#else
    volatile unsigned char *buf = alloca(size);
#endif
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    for (size_t i = 0; i < size; i += (size_t)page)
        buf[i] = 0;
#ifdef RTG_POSIX_ONLY
    (void)buf[0];   /* the VLA is used (GCC would call it set but unused) */
#endif
}

int rtg_dma_latency_hold(char *why, size_t whylen)
{
#ifdef RTG_POSIX_ONLY
    snprintf(why, whylen, "unavailable in this build: /dev/cpu_dma_latency is Linux-only");
    return -1;
#endif
    int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "unavailable: cannot open /dev/cpu_dma_latency (%s)", strerror(errno));
        return -1;
    }
    int32_t zero = 0;
    if (write(fd, &zero, sizeof zero) != (ssize_t)sizeof zero) {
        snprintf(why, whylen, "unavailable: cannot write /dev/cpu_dma_latency (%s)", strerror(errno));
        close(fd);
        return -1;
    }
    snprintf(why, whylen, "held at 0");
    return fd;
}

void rtg_dma_latency_release(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* First line of a small file, without the newline; false when unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
#ifdef RTG_POSIX_ONLY
    (void)path, (void)buf, (void)len;
    return false;   /* the POSIX-only build reads no /proc or /sys: those facts are null */
#endif
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static void set_file_int(rtg_json *env, const char *key, const char *path)
{
    char buf[64];
    if (read_line(path, buf, sizeof buf))
        rtg_j_set(env, key, rtg_j_int(strtoll(buf, NULL, 10)));
    else
        rtg_j_set(env, key, rtg_j_null());
}

/* The preemption model: the debugfs knob of PREEMPT_DYNAMIC kernels shows the
 * active mode as "none voluntary (full)"; without it, the build string of
 * uname -v names the configured model. */
static void set_preempt(rtg_json *env, const struct utsname *u)
{
    char buf[128];
    const char *model;
    if (strstr(u->version, "PREEMPT_RT"))
        model = "PREEMPT_RT";
    else if (strstr(u->version, "PREEMPT_DYNAMIC"))
        model = "PREEMPT_DYNAMIC";
    else if (strstr(u->version, "PREEMPT"))
        model = "PREEMPT";
    else
        model = "none or voluntary";
    rtg_j_set(env, "preempt_model", rtg_j_str(model));
    if (read_line("/sys/kernel/debug/sched/preempt", buf, sizeof buf)) {
        char *open = strchr(buf, '('), *close = open ? strchr(open, ')') : NULL;
        if (open && close) {
            *close = '\0';
            rtg_j_set(env, "preempt_mode", rtg_j_str(open + 1));
        }
    } else {
        rtg_j_set(env, "preempt_mode", rtg_j_null());
    }
}

/* The machine the engine was compiled for, named as uname -m names it, and
 * whether a kernel of machine k runs that code natively (a 64-bit kernel also
 * runs the 32-bit code of its family). Under qemu-user, uname() answers with the
 * emulated machine, but /proc/sys/kernel/arch is the kernel's own. */
#if defined(__x86_64__)
#define BUILD_MACHINE "x86_64"
static bool native_on(const char *k) { return strcmp(k, "x86_64") == 0; }
#elif defined(__i386__)
#define BUILD_MACHINE "i386"
static bool native_on(const char *k) { return strcmp(k, "x86_64") == 0 || (k[0] == 'i' && strstr(k, "86")); }
#elif defined(__aarch64__)
#define BUILD_MACHINE "aarch64"
static bool native_on(const char *k) { return strncmp(k, "aarch64", 7) == 0; }
#elif defined(__arm__)
#define BUILD_MACHINE "arm"
static bool native_on(const char *k) { return strncmp(k, "arm", 3) == 0 || strncmp(k, "aarch64", 7) == 0; }
#elif defined(__riscv) && __riscv_xlen == 64
#define BUILD_MACHINE "riscv64"
static bool native_on(const char *k) { return strcmp(k, "riscv64") == 0; }
#elif defined(__riscv)
#define BUILD_MACHINE "riscv32"
static bool native_on(const char *k) { return strncmp(k, "riscv", 5) == 0; }
#elif defined(__powerpc64__)
#define BUILD_MACHINE "ppc64"
static bool native_on(const char *k) { return strncmp(k, "ppc64", 5) == 0; }
#elif defined(__powerpc__)
#define BUILD_MACHINE "ppc"
static bool native_on(const char *k) { return strncmp(k, "ppc", 3) == 0; }
#else
#define BUILD_MACHINE NULL
static bool native_on(const char *k) { (void)k; return true; }
#endif

int rtg_emulation(char *why, size_t whylen)
{
    char k[65];
    if (BUILD_MACHINE == NULL || !read_line("/proc/sys/kernel/arch", k, sizeof k))
        return -1;
    if (native_on(k))
        return 0;
    snprintf(why, whylen, "the engine is built for %s but the kernel is %s, so it runs under a "
             "user-mode emulator (qemu-user) and its timing is the emulator's on this %s host",
             BUILD_MACHINE, k, k);
    return 1;
}

static void set_emulation(rtg_json *env)
{
    char k[65], why[200];
    rtg_j_set(env, "engine_machine", BUILD_MACHINE ? rtg_j_str(BUILD_MACHINE) : rtg_j_null());
    rtg_j_set(env, "kernel_machine",
              read_line("/proc/sys/kernel/arch", k, sizeof k) ? rtg_j_str(k) : rtg_j_null());
    int e = rtg_emulation(why, sizeof why);
    rtg_j_set(env, "emulated", e < 0 ? rtg_j_null() : rtg_j_bool(e == 1));
}

void rtg_env_system(rtg_json *env)
{
    struct utsname u;
    if (uname(&u) == 0) {
        rtg_j_set(env, "kernel", rtg_j_str(u.release));
        rtg_j_set(env, "kernel_version", rtg_j_str(u.version));
        rtg_j_set(env, "machine", rtg_j_str(u.machine));
        rtg_j_set(env, "hostname", rtg_j_str(u.nodename));
        set_preempt(env, &u);
    }
    char buf[128];
    rtg_j_set(env, "realtime_kernel",
              rtg_j_bool(read_line("/sys/kernel/realtime", buf, sizeof buf) && buf[0] == '1'));
    set_file_int(env, "sched_rt_runtime_us", "/proc/sys/kernel/sched_rt_runtime_us");
    set_file_int(env, "sched_rt_period_us", "/proc/sys/kernel/sched_rt_period_us");
    if (read_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", buf, sizeof buf))
        rtg_j_set(env, "clocksource", rtg_j_str(buf));
    else
        rtg_j_set(env, "clocksource", rtg_j_null());
    rtg_j_set(env, "online_cpus", rtg_j_int(sysconf(_SC_NPROCESSORS_ONLN)));
    rtg_j_set(env, "configured_cpus", rtg_j_int(sysconf(_SC_NPROCESSORS_CONF)));
    rtg_j_set(env, "uid", rtg_j_int((int64_t)geteuid()));
    rtg_j_set(env, "page_size", rtg_j_int(sysconf(_SC_PAGESIZE)));
    set_emulation(env);
}

/* Threads are created with their policy, priority and CPU already set (explicit
 * attributes, nothing inherited) and with SIGINT/SIGTERM/SIGHUP blocked, so only the main
 * thread handles a stop. */
int rtg_spawn_thread(pthread_t *th, rtg_policy policy, int priority, int cpu, size_t stack_kib,
                    void *(*fn)(void *), void *arg, char *err, size_t errlen)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack_kib * 1024);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    int pol = policy == RTG_POL_FIFO ? SCHED_FIFO : policy == RTG_POL_RR ? SCHED_RR : SCHED_OTHER;
    struct sched_param prm = {.sched_priority = pol == SCHED_OTHER ? 0 : priority};
    pthread_attr_setschedpolicy(&a, pol);
    pthread_attr_setschedparam(&a, &prm);
#ifdef RTG_POSIX_ONLY
    if (no_pinning(cpu, err, errlen) != 0) {
        pthread_attr_destroy(&a);
        return EINVAL;
    }
#else
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pthread_attr_setaffinity_np(&a, sizeof set, &set);
    }
#endif
    sigset_t s, old;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &s, &old);
    int rc = pthread_create(th, &a, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    if (rc == EAGAIN)
        snprintf(err, errlen, "could not create a thread (%s): the thread or memory limit is reached; "
                 "ask for fewer threads or raise ulimit -u.", strerror(rc));
    else if (rc == EPERM)
        snprintf(err, errlen, "could not create a %s thread at priority %d (%s); run as root or grant "
                 "CAP_SYS_NICE.", rtg_policy_name(policy), priority, strerror(rc));
    else if (rc != 0)
        snprintf(err, errlen, "could not create a thread (%s).", strerror(rc));
    return rc;
}

/* rt: scheduling policy, priority, affinity, memory locking, stack prefault,
 * /dev/cpu_dma_latency. Every call reports what it actually obtained, so the
 * env block says what was measured rather than what was asked for. */
#ifndef RTG_RT_H
#define RTG_RT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "json.h"

typedef enum { RTG_POL_OTHER = 0, RTG_POL_FIFO, RTG_POL_RR } rtg_policy;

int rtg_policy_parse(const char *name, rtg_policy *p);   /* 0 or -1 */
const char *rtg_policy_name(rtg_policy p);

typedef struct {
    rtg_policy asked, policy;  /* policy = what the thread got */
    int priority;              /* 0 for other */
    bool fallback;             /* asked fifo/rr, got other under --allow-fallback */
    char why[256];             /* why a fallback or failure happened */
} rtg_sched;

/* Apply policy/priority to the calling thread. When the privilege is missing:
 * allow_fallback -> SCHED_OTHER, s->fallback = true, returns 0;
 * otherwise returns -1 with a sentence in err (what to do: run as root or grant
 * CAP_SYS_NICE / an rtprio limit, or pass --allow-fallback). */
int rtg_sched_apply(rtg_sched *s, rtg_policy p, int prio, bool allow_fallback,
                    char *err, size_t errlen);
/* Start fn(arg) in a thread at policy/priority, pinned to cpu (-1: not pinned), with a
 * stack of stack_kib KiB and the stop signals blocked. 0, or the pthread error with a
 * sentence in err (what to do: fewer threads, ulimit -u, or the RT privilege). */
#include <pthread.h>
int rtg_spawn_thread(pthread_t *th, rtg_policy policy, int priority, int cpu, size_t stack_kib,
                     void *(*fn)(void *), void *arg, char *err, size_t errlen);
/* Pin the calling thread to one CPU (cpu >= 0) ; 0 or -1 with err. */
int rtg_pin_cpu(int cpu, char *err, size_t errlen);
/* CPUs the process may run on, ascending; returns count. */
int rtg_allowed_cpus(int *cpus, int max);
/* Confine the calling thread and those it starts to cpus[0..n) without pinning any to one. */
int rtg_confine_cpus(const int *cpus, int n, char *err, size_t errlen);

/* Add sign (+1 / -1) times the calling thread's voluntary and involuntary
 * context switches so far (getrusage RUSAGE_THREAD) to *nv and *niv: -1 at the
 * start of a span and +1 at its end count the span's. Linux only: the POSIX-only
 * build leaves them as they are. */
void rtg_thread_switches(uint64_t *nv, uint64_t *niv, int sign);

/* mlockall(MCL_CURRENT|MCL_FUTURE); 0 or -1 (errno kept). */
int rtg_lock_memory(void);
/* Touch size bytes of stack so page faults do not happen in the measured loop. */
void rtg_prefault_stack(size_t size);

/* Hold /dev/cpu_dma_latency at 0 while the fd stays open. Returns fd >= 0 or -1
 * (not present / not writable); the reason goes to why. */
int rtg_dma_latency_hold(char *why, size_t whylen);
void rtg_dma_latency_release(int fd);

/* 1 when the engine runs under a user-mode emulator (its build machine is not one
 * the kernel runs natively: qemu-user), with the sentence in why; 0 when native;
 * -1 when unknown (no /proc/sys/kernel/arch, or an unlisted build machine).
 * Under emulation rtg_sched_apply treats fifo/rr as unavailable. */
int rtg_emulation(char *why, size_t whylen);

/* Fill env with facts of the machine and the process: kernel (uname), preempt
 * model as far as user space can read it, RT throttling (sched_rt_runtime_us /
 * period), clocksource, cpu count, uid, page size, and engine_machine,
 * kernel_machine, emulated (see rtg_emulation). */
void rtg_env_system(rtg_json *env);

#endif

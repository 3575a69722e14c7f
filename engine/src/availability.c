/* availability: whether a test can run in this build and on this system
 * (availability.h). */
#include "availability.h"

#include <stdio.h>
#include <string.h>

#include "portable.h"

#ifdef RTG_POSIX_ONLY
/* What each test needs that the POSIX-only build does not have. */
enum { NEEDS_ONE_CPU = 1, NEEDS_PROC = 2 };

static const struct {
    const char *name;
    unsigned needs;
} needs[] = {
    /* a /proc read of a thread's state, system call or effective priority */
    {"pi", NEEDS_ONE_CPU | NEEDS_PROC}, {"mut-arc", NEEDS_ONE_CPU | NEEDS_PROC},
    {"sem-lck", NEEDS_ONE_CPU}, {"sem-rel", NEEDS_ONE_CPU},
    /* threads that must share one CPU; "blocked" is checked by priorities (scenario.c) */
    {"switch", NEEDS_ONE_CPU}, {"sem", NEEDS_ONE_CPU}, {"message", NEEDS_ONE_CPU},
    {"preempt", NEEDS_ONE_CPU}, {"mutex", NEEDS_ONE_CPU}, {"deadlock-break", NEEDS_ONE_CPU},
    /* threads that must share one CPU, placed by handshakes only */
    {"shuffle", NEEDS_ONE_CPU}, {"thread", NEEDS_ONE_CPU}, {"thr-new", NEEDS_ONE_CPU},
    {"thr-rr", NEEDS_ONE_CPU}, {"hartstone", NEEDS_ONE_CPU}, {"spin", NEEDS_ONE_CPU},
    {"tick", NEEDS_ONE_CPU},
};
#endif

const char *rtg_test_unavailable(const rtg_test *t, char *why, size_t len)
{
#ifdef RTG_POSIX_ONLY
    for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++) {
        if (strcmp(needs[i].name, t->name) != 0)
            continue;
        if (needs[i].needs & NEEDS_PROC) {
            snprintf(why, len, "unavailable in this build because it reads a thread's state and effective "
                     "(boosted) priority, which only Linux shows (/proc/self/task) and the POSIX-only build "
                     "does not read");
            return why;
        }
        long n = rtg_online_cpus();
        if ((needs[i].needs & NEEDS_ONE_CPU) && n != 1) {
            char cpus[32] = "an unknown number of";
            if (n >= 0)
                snprintf(cpus, sizeof cpus, "%ld", n);
            snprintf(why, len, "unavailable in this build because its threads must share one CPU, the POSIX-only "
                     "build cannot pin threads (affinity is not POSIX) and %s CPUs are online; it runs on a "
                     "system with one CPU online", cpus);
            return why;
        }
    }
#endif
    return t->unavailable ? t->unavailable(why, len) : NULL;
}

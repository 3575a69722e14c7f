/* availability: whether a test can run in this build and on this system. The
 * POSIX-only build (portable.h) lacks what some tests need: CPU affinity (their
 * threads must share one CPU: available only when one CPU is online) or /proc
 * (a thread's state and effective priority); each test's own hook says the rest
 * (e.g. no tracefs for the latency split). */
#ifndef RTG_AVAILABILITY_H
#define RTG_AVAILABILITY_H
#include <stddef.h>

#include "test.h"

/* Availability of test t in this build and on this system: the build's own
 * reasons first (RTG_POSIX_ONLY), then the test's hook. NULL when available,
 * else a sentence "unavailable ... because ..." in why. */
const char *rtg_test_unavailable(const rtg_test *t, char *why, size_t len);

#endif

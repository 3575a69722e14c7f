/* Unit tests of portable.h, in whichever build this is: the monotonic timed
 * semaphore wait times out no earlier than asked (POSIX-only build: through
 * sem_timedwait on CLOCK_REALTIME), the timed join gives up at its deadline and
 * joins the same thread later, and a test is unavailable in the POSIX-only
 * build for the reasons portable.c gives. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "availability.h"
#include "portable.h"
#include "test.h"

static void test_sem_wait(void)
{
    sem_t s;
    sem_init(&s, 0, 0);
    int64_t t0 = rtg_mono_ns();
    struct timespec dl = rtg_ns_timespec(t0 + 20000000LL);
    int rc = rtg_sem_clockwait_mono(&s, &dl);
    int err = errno;
    int64_t took = rtg_mono_ns() - t0;
    CHECK(rc == -1 && err == ETIMEDOUT, "an empty semaphore times out (rc %d, %s)", rc, strerror(err));
    CHECK(took >= 20000000LL, "not earlier than asked: %lld ns", (long long)took);
    CHECK(took < 520000000LL, "and not much later: %lld ns", (long long)took);
    sem_post(&s);
    dl = rtg_ns_timespec(rtg_mono_ns() + 1000000000LL);
    CHECK_EQ_I(rtg_sem_clockwait_mono(&s, &dl), 0);
    /* a deadline already past: a unit is still taken, none makes it time out */
    sem_post(&s);
    dl = rtg_ns_timespec(rtg_mono_ns() - 1000000LL);
    CHECK_EQ_I(rtg_sem_clockwait_mono(&s, &dl), 0);
    CHECK(rtg_sem_clockwait_mono(&s, &dl) == -1 && errno == ETIMEDOUT, "past deadline, empty: timeout");
    sem_destroy(&s);
}

static sem_t go;

static void *waits_for_go(void *p)
{
    sem_wait(&go);
    return p;
}

static void test_join(void)
{
    sem_init(&go, 0, 0);
    pthread_t th;
    static int token;
    CHECK_EQ_I(pthread_create(&th, NULL, waits_for_go, &token), 0);
    int64_t t0 = rtg_mono_ns();
    struct timespec dl = rtg_ns_timespec(t0 + 20000000LL);
    CHECK_EQ_I(rtg_join_until(th, NULL, &dl), ETIMEDOUT);
    int64_t took = rtg_mono_ns() - t0;
    CHECK(took >= 20000000LL && took < 520000000LL, "gave up at the deadline: %lld ns", (long long)took);
    /* a second timed-out attempt on the same thread, then the join that succeeds */
    dl = rtg_ns_timespec(rtg_mono_ns() + 5000000LL);
    CHECK_EQ_I(rtg_join_until(th, NULL, &dl), ETIMEDOUT);
    sem_post(&go);
    void *ret = NULL;
    dl = rtg_ns_timespec(rtg_mono_ns() + 2000000000LL);
    CHECK_EQ_I(rtg_join_until(th, &ret, &dl), 0);
    CHECK(ret == &token, "the thread's return value");
    sem_destroy(&go);
}

static const char *never_here(char *why, size_t len)
{
    snprintf(why, len, "unavailable here because of the test's own hook");
    return why;
}

static int no_run(const rtg_opts *o, rtg_result *r) { (void)o, (void)r; return 0; }

static void test_availability(void)
{
    char why[256];
    rtg_test own = {.name = "own", .summary = "s", .unavailable = never_here, .run = no_run};
    rtg_test plain = {.name = "plain", .summary = "s", .run = no_run};
    rtg_test sw = {.name = "pi", .summary = "s", .run = no_run};
    rtg_test thread = {.name = "thread", .summary = "s", .run = no_run};
    CHECK(rtg_test_unavailable(&plain, why, sizeof why) == NULL, "no hook: available");
    const char *no = rtg_test_unavailable(&own, why, sizeof why);
    CHECK(no && strstr(no, "own hook"), "the test's hook is asked");
    const char *a = rtg_test_unavailable(&sw, why, sizeof why);
#ifdef RTG_POSIX_ONLY
    CHECK(a && strstr(a, "unavailable in this build") && strstr(a, "/proc/self/task"), "pi: %s", a ? a : "-");
    const char *b = rtg_test_unavailable(&thread, why, sizeof why);
    if (sysconf(_SC_NPROCESSORS_ONLN) == 1)
        CHECK(b == NULL, "one CPU online: thread is available (%s)", b ? b : "-");
    else
        CHECK(b && strstr(b, "share one CPU"), "thread: %s", b ? b : "-");
    CHECK_EQ_I(rtg_thread_tid(), -1);
    CHECK(!rtg_can_pin(), "no pinning in the POSIX-only build");
#else
    CHECK(a == NULL && rtg_test_unavailable(&thread, why, sizeof why) == NULL, "the Linux build has them");
    CHECK(rtg_thread_tid() > 0, "a kernel thread id");
    CHECK(rtg_can_pin(), "pinning");
#endif
}

int main(void)
{
    test_sem_wait();
    test_join();
    test_availability();
    return check_done();
}

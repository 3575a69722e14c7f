/* Unit tests of the scenario harness and the primitives layer: a thread is
 * placed only when it is really blocked in its primitive's system call, a thread
 * that never gets there fails the placement within the bound (no hang), the
 * explicit handshake works, and the futex is available exactly when built in. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "prim.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt demo_opts[] = {
    {"timeout-s", RTG_OPT_NUM, "20", 1, 3600, NULL, "watchdog"},
    {0},
};

static int demo_run(const rtg_opts *o, rtg_result *r) { (void)o; (void)r; return 0; }

static const rtg_test demo = {.name = "demo", .summary = "a demo", .opts = demo_opts, .flags = RTG_TEST_RT, .run = demo_run};

typedef struct {
    sem_t sem;
    int fd[2];
    _Atomic int stop;
} shared;

static void *blocks_on_sem(void *p)
{
    shared *s = p;
    rtg_sem_wait(&s->sem);
    return NULL;
}

static void *blocks_on_pipe(void *p)
{
    shared *s = p;
    char c;
    while (read(s->fd[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

static void *spins(void *p)
{
    shared *s = p;
    while (!atomic_load(&s->stop) && !rtg_micro_stopping())
        ;
    return NULL;
}

static void *handshake_then_sem(void *p)
{
    shared *s = p;
    rtg_scn_here();
    rtg_sem_wait(&s->sem);
    return NULL;
}

static void unblock(void *p)
{
    shared *s = p;
    atomic_store(&s->stop, 1);
    sem_post(&s->sem);
    sem_post(&s->sem);
    if (write(s->fd[1], "xx", 2) < 0) {
        /* the reader is gone */
    }
}

static rtg_opts *make_opts(void)
{
    rtg_opts *o = rtg_opts_new(&demo);
    char err[256];
    char *argv[] = {"--policy", "other", NULL};
    CHECK(rtg_opts_parse(o, 2, argv, err, sizeof err) == 0, "%s", err);
    return o;
}

static void reset(shared *s)
{
    sem_init(&s->sem, 0, 0);
    CHECK(pipe(s->fd) == 0, "pipe");
    atomic_store(&s->stop, 0);
}

static void finish(shared *s)
{
    sem_destroy(&s->sem);
    close(s->fd[0]);
    close(s->fd[1]);
}

/* A thread blocked on a semaphore is placed; one blocked in read is placed as
 * a pipe reader, and is not taken for a semaphore waiter. */
static void test_places_blocked_threads(rtg_opts *o)
{
    static shared sh;
    reset(&sh);
    rtg_result res = {rtg_j_obj(), rtg_j_obj(), rtg_j_obj(), rtg_j_obj(), ""};
    rtg_scenario s;
    CHECK_EQ_I(rtg_scn_init(&s, o, &res, false, 2, 0, unblock, &sh), RTG_EXIT_OK);
    rtg_role a = {"sem waiter", blocks_on_sem, &sh, 0, RTG_SCN_CPU, RTG_AT_BLOCKED, RTG_PRIM_SEM, 0};
    rtg_role b = {"pipe reader", blocks_on_pipe, &sh, 0, RTG_SCN_CPU, RTG_AT_BLOCKED, RTG_PRIM_PIPE, 0};
    CHECK(rtg_scn_add(&s, &a) == 0, "%s", s.err);
    CHECK(rtg_scn_add(&s, &b) == 0, "%s", s.err);
    int tid_a = atomic_load(&s.t[0].tid), tid_b = atomic_load(&s.t[1].tid);
    CHECK(rtg_thread_blocked_on(tid_a, RTG_PRIM_SEM), "the semaphore waiter is blocked in futex");
    CHECK(!rtg_thread_blocked_on(tid_a, RTG_PRIM_PIPE), "a futex wait is not a pipe read");
    CHECK(rtg_thread_blocked_on(tid_b, RTG_PRIM_PIPE), "the pipe reader is blocked in read");
    CHECK(!rtg_thread_blocked_on(tid_b, RTG_PRIM_SEM), "a read is not a futex wait");
    sem_post(&sh.sem);
    CHECK(write(sh.fd[1], "x", 1) == 1, "write");
    CHECK_EQ_I(rtg_scn_join(&s, &res, "the demo"), RTG_EXIT_OK);
    finish(&sh);
}

/* A thread that never blocks fails its placement within the bound, with a
 * sentence naming it; the watchdog then stops it and the join returns. */
static void test_never_blocking_thread_fails_in_bounded_time(rtg_opts *o)
{
    static shared sh;
    reset(&sh);
    rtg_result res = {rtg_j_obj(), rtg_j_obj(), rtg_j_obj(), rtg_j_obj(), ""};
    rtg_scenario s;
    CHECK_EQ_I(rtg_scn_init(&s, o, &res, false, 2, 0, unblock, &sh), RTG_EXIT_OK);
    s.place_ns = 300000000LL;
    rtg_role spin = {"spinner", spins, &sh, 0, RTG_SCN_CPU, RTG_AT_BLOCKED, RTG_PRIM_SEM, 0};
    rtg_role next = {"next", blocks_on_sem, &sh, 0, RTG_SCN_CPU, RTG_AT_BLOCKED, RTG_PRIM_SEM, 0};
    int64_t t0 = rtg_mono_ns();
    CHECK(rtg_scn_add(&s, &spin) != 0, "a spinning thread is not blocked");
    int64_t took = rtg_mono_ns() - t0;
    CHECK(took >= s.place_ns && took < s.place_ns + 1000000000LL, "placement gave up after %lld ns",
          (long long)took);
    CHECK(strstr(s.err, "spinner") && strstr(s.err, "did not block"), "%s", s.err);
    CHECK(rtg_scn_add(&s, &next) != 0 && s.n == 1, "nothing starts after a failed placement");
    CHECK_EQ_I(rtg_scn_join(&s, &res, "the demo"), RTG_EXIT_FAIL);
    CHECK(strstr(res.error, "spinner") != NULL, "%s", res.error);
    atomic_store(&rtg_micro_abort, 0);
    finish(&sh);
}

/* The explicit handshake: placed once the thread called rtg_scn_here. */
static void test_handshake(rtg_opts *o)
{
    static shared sh;
    reset(&sh);
    rtg_result res = {rtg_j_obj(), rtg_j_obj(), rtg_j_obj(), rtg_j_obj(), ""};
    rtg_scenario s;
    CHECK_EQ_I(rtg_scn_init(&s, o, &res, false, 1, 0, unblock, &sh), RTG_EXIT_OK);
    rtg_role h = {"greeter", handshake_then_sem, &sh, 0, RTG_SCN_CPU, RTG_AT_HERE, RTG_PRIM_SEM, 0};
    CHECK(rtg_scn_add(&s, &h) == 0, "%s", s.err);
    CHECK(atomic_load(&s.t[0].here) == 1, "the handshake was seen");
    sem_post(&sh.sem);
    CHECK_EQ_I(rtg_scn_join(&s, &res, "the demo"), RTG_EXIT_OK);
    finish(&sh);
}

static void test_futex_availability(void)
{
    char why[256] = "";
    bool have = rtg_prim_available(RTG_PRIM_FUTEX, why, sizeof why);
#if defined(RTG_HAVE_FUTEX)
    CHECK(have, "built with the futex");
#else
    CHECK(!have && strstr(why, "unavailable in this build because"), "%s", why);
#endif
    CHECK(rtg_prim_available(RTG_PRIM_SEM, why, sizeof why), "a semaphore is always there");
}

int main(void)
{
    rtg_opts *o = make_opts();
    test_futex_availability();
    test_places_blocked_threads(o);
    test_handshake(o);
    test_never_blocking_thread_fails_in_bounded_time(o);
    rtg_opts_free(o);
    return check_done();
}

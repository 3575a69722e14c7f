/* shuffle (Rhealstone semaphore shuffle): two threads of equal priority hand a
 * token back and forth; one sample per hand-over, both directions. The giver
 * takes t0 just before it releases the token, the other thread takes t1 as soon
 * as its acquire returns; shuffle = t1 - t0. Both threads share one CPU unless
 * --cpus names two, so the giver goes on until it blocks in its own acquire and
 * a sample spans: release call, the giver's blocking acquire, context switch,
 * and the return of the other thread's acquire. --pause-us makes the receiver
 * sleep before it hands the token back, as rt-tests' ptsematest/svsematest
 * do (-i): the CPU idles between samples and each hand-over starts cold.
 * --primitive:
 *   sem      two POSIX unnamed semaphores, post the other's / wait on one's own;
 *   mutex    one PTHREAD_PRIO_INHERIT mutex owned by whoever holds the token:
 *            unlock hands ownership straight to the blocked waiter (the kernel's
 *            rt_mutex hand-over), so the same mutex is never re-taken by the
 *            thread that let it go; the giver unlocks only once the other is
 *            queued on it (a no-op wait on one CPU);
 *   condvar  a turn variable under a mutex, pthread_cond_signal / wait;
 *   futex    a turn word, FUTEX_WAKE / FUTEX_WAIT (private), no library layer.
 * futex and mutex need the Linux futex (prim_futex.c: the mutex hand-over is
 * seen in the PI mutex's futex word); a build without it refuses them, saying why. */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "scenario.h"
#include "test.h"

static const rtg_opt shuffle_opts[] = {
    {"primitive", RTG_OPT_ENUM, "sem", 0, 0, "sem|mutex|condvar|futex", "what the token is"},
    {"iterations", RTG_OPT_INT, "20000", 10, 10000000, NULL, "hand-overs measured (both directions)"},
    {"pause-us", RTG_OPT_INT, "0", 0, 1000000, NULL,
     "the receiver sleeps this long before handing the token back (untimed; rt-tests' -i pacing)"},
    {"timeout-s", RTG_OPT_NUM, "30", 1, 3600, NULL,
     "watchdog: stop the run after this many seconds and report what was measured (marked incomplete)"},
    {0},
};

#define WARMUP 20

typedef enum { P_SEM, P_MUTEX, P_CONDVAR, P_FUTEX } primitive;

typedef struct {
    primitive prim;
    const rtg_bench *b;
    sem_t sem[2];
    pthread_mutex_t pi;       /* mutex: the token */
    pthread_mutex_t mx;       /* condvar */
    pthread_cond_t cv;
    _Atomic int turn;         /* condvar, futex: who holds the token */
    size_t total, k;          /* hand-overs wanted / done (written by the receiver) */
    int64_t pause_ns;
    bool done;
    int64_t t0;
    int64_t *dt;
    int64_t *at;              /* each sample's start t0 (its span: host stalls) */
    bool failed;
} token;

static bool acquire(token *t, int me)
{
    switch (t->prim) {
    case P_SEM:
        rtg_sem_wait(&t->sem[me]);
        return true;
    case P_MUTEX:
        return pthread_mutex_timedlock(&t->pi, &t->b->deadline_rt) == 0;
    case P_CONDVAR:
        pthread_mutex_lock(&t->mx);
        while (atomic_load(&t->turn) != me && !rtg_micro_stopping())
            pthread_cond_wait(&t->cv, &t->mx);
        pthread_mutex_unlock(&t->mx);
        return true;
    case P_FUTEX:
        while (atomic_load(&t->turn) != me && !rtg_micro_stopping())
            rtg_futex_wait(&t->turn, 1 - me);
        return true;
    }
    return false;
}

static void release(token *t, int other)
{
    switch (t->prim) {
    case P_SEM:
        sem_post(&t->sem[other]);
        break;
    case P_MUTEX:
        while (!rtg_pi_mutex_has_waiter(&t->pi) && !rtg_micro_stopping())
            sched_yield();   /* on one CPU the other thread needs it to get queued */
        pthread_mutex_unlock(&t->pi);
        break;
    case P_CONDVAR:
        pthread_mutex_lock(&t->mx);
        atomic_store(&t->turn, other);
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mx);
        break;
    case P_FUTEX:
        atomic_store(&t->turn, other);
        rtg_futex_wake(&t->turn, 1);
        break;
    }
}

static void *player(token *t, int me)
{
    int other = 1 - me;
    if (me == 0) {
        if (t->prim == P_MUTEX)
            pthread_mutex_lock(&t->pi);
        rtg_scn_here();   /* holds the token: the other player may start */
        t->t0 = rtg_mono_ns();
        release(t, other);
    }
    for (;;) {
        if (!acquire(t, me)) {
            t->failed = true;
            atomic_store(&rtg_micro_abort, 1);
            return NULL;
        }
        int64_t t1 = rtg_mono_ns();
        if (t->done || rtg_micro_stopping())
            break;
        t->at[t->k] = t->t0;
        t->dt[t->k++] = t1 - t->t0;
        if (t->k >= t->total)
            t->done = true;
        if (t->pause_ns)
            rtg_sleep_until(rtg_mono_ns() + t->pause_ns);
        t->t0 = rtg_mono_ns();
        release(t, other);
        if (t->done)
            return NULL;
    }
    if (t->prim == P_MUTEX)
        pthread_mutex_unlock(&t->pi);
    return NULL;
}

static void *player_a(void *p) { return player(p, 0); }
static void *player_b(void *p) { return player(p, 1); }

static void unblock_token(void *p)
{
    token *t = p;
    sem_post(&t->sem[0]);
    sem_post(&t->sem[1]);
    pthread_mutex_lock(&t->mx);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mx);
    if (t->prim == P_FUTEX)
        rtg_futex_wake(&t->turn, 2);
}

static primitive parse_primitive(const char *s)
{
    return strcmp(s, "mutex") == 0 ? P_MUTEX : strcmp(s, "condvar") == 0 ? P_CONDVAR
         : strcmp(s, "futex") == 0 ? P_FUTEX : P_SEM;
}

static void init_token(token *t)
{
    sem_init(&t->sem[0], 0, 0);
    sem_init(&t->sem[1], 0, 0);
    rtg_mutex_init(&t->pi, RTG_PRIM_PI_MUTEX, 0);
    pthread_mutex_init(&t->mx, NULL);
    rtg_cond_init(&t->cv);
    atomic_store(&t->turn, 0);
}

static void destroy_token(token *t)
{
    sem_destroy(&t->sem[0]);
    sem_destroy(&t->sem[1]);
    pthread_mutex_destroy(&t->pi);
    pthread_mutex_destroy(&t->mx);
    pthread_cond_destroy(&t->cv);
}

/* What the primitive needs from this build (the futex: see prim.h). */
static bool usable(primitive p, char *why, size_t len)
{
    if (p == P_FUTEX)
        return rtg_prim_available(RTG_PRIM_FUTEX, why, len);
    if (p == P_MUTEX)
        return rtg_prim_available(RTG_PRIM_PI_WAITERS, why, len);
    return true;
}

static int shuffle_run(const rtg_opts *o, rtg_result *res)
{
    static token t;
    memset(&t, 0, sizeof t);
    t.prim = parse_primitive(rtg_opt_str(o, "primitive"));
    char why[256];
    if (!usable(t.prim, why, sizeof why))
        return rtg_fail(res, RTG_EXIT_USAGE, "--primitive %s: %s; choose sem or condvar.",
                        rtg_opt_str(o, "primitive"), why);
    rtg_scenario s;
    int status = rtg_scn_init(&s, o, res, false, 2, 0, unblock_token, &t);
    if (status != RTG_EXIT_OK)
        return status;
    t.b = &s.b;
    t.total = WARMUP + (size_t)rtg_opt_int(o, "iterations");
    t.pause_ns = rtg_opt_int(o, "pause-us") * 1000;
    t.dt = calloc(t.total, sizeof *t.dt);
    t.at = calloc(t.total, sizeof *t.at);
    if (t.at)
        rtg_touch(t.at, t.total * sizeof *t.at);
    if (!t.dt || !t.at) {
        free(t.dt), free(t.at);
        rtg_scn_join(&s, res, "");
        return rtg_fail(res, RTG_EXIT_FAIL, "out of memory for %zu samples; ask for fewer --iterations.", t.total);
    }
    init_token(&t);
    int cpu_a = rtg_micro_cpu_of(&s.b, 0), cpu_b = rtg_micro_cpu_of(&s.b, 1);
    /* a holds the token (for mutex: has locked it) before b starts */
    rtg_role a = {"first player", player_a, &t, 0, cpu_a, RTG_AT_HERE, RTG_PRIM_SEM, 0};
    rtg_role b = {"second player", player_b, &t, 0, cpu_b, RTG_AT_STARTED, RTG_PRIM_SEM, 0};
    if (rtg_scn_add(&s, &a) == 0)
        rtg_scn_add(&s, &b);
    status = rtg_scn_join(&s, res, "the hand-overs");
    if (status == RTG_EXIT_OK && t.failed && !s.incomplete)
        status = rtg_fail(res, RTG_EXIT_FAIL,
                          "the hand-overs did not finish within --timeout-s %.0f s; raise it or ask for fewer --iterations.",
                          rtg_opt_num(o, "timeout-s"));
    if (status == RTG_EXIT_OK) {
        rtg_samples smp = {t.dt + (t.k < WARMUP ? t.k : WARMUP), 0, 0, t.at + (t.k < WARMUP ? t.k : WARMUP)};
        smp.n = smp.cap = t.k > WARMUP ? t.k - WARMUP : 0;
        rtg_samples_report(res, "shuffle", &smp);
        rtg_scn_mark_incomplete(&s, res, (int64_t)(t.total - WARMUP), (int64_t)smp.n);
        rtg_j_set(res->env, "cpus_used", rtg_j_strf("%d,%d", cpu_a, cpu_b));
        rtg_micro_method(res, "shuffle: from the giver's timestamp just before it releases the token to the "
                              "receiver's first timestamp after its acquire returned");
    }
    if (rtg_scn_leaked(&s))
        return status;
    destroy_token(&t);
    free(t.dt);
    free(t.at);
    return status;
}

static const rtg_metric shuffle_metrics[] = {
    {"shuffle", RTG_METRIC_DISTRIBUTION, "ns", 0, "hand-over time of the primitive between the two threads, both directions"},
    {0},
};

const rtg_test rtg_test_shuffle = {
    .name = "shuffle",
    .summary = "semaphore shuffle: hand a semaphore (mutex, condvar, futex) back and forth between two threads",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = shuffle_opts,
    .metrics = shuffle_metrics,
    .flags = RTG_TEST_RT,
    .run = shuffle_run,
};

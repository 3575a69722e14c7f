/* stop: see stop.h. */
#include "portable.h"
#include "stop.h"

#include <errno.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) && !defined(RTG_POSIX_ONLY)
#include <sys/prctl.h>
#endif

#include "clock.h"
#include "test.h"

/* test.h: set by SIGINT/SIGTERM/SIGHUP, polled by every loop */
volatile sig_atomic_t rtg_stop = 0;

static sem_t stop_sem;
static pthread_once_t stop_once = PTHREAD_ONCE_INIT;

static void init_sem(void)
{
    sem_init(&stop_sem, 0, 0);
}

void rtg_stop_request(void)
{
    rtg_stop = 1;
    sem_post(&stop_sem);   /* async-signal-safe; initialised before any handler runs */
}

void rtg_stop_notify(void)
{
    pthread_once(&stop_once, init_sem);
    sem_post(&stop_sem);
}

bool rtg_stop_wait(int64_t timeout_ns)
{
    pthread_once(&stop_once, init_sem);
    if (!rtg_stop) {
        struct timespec ts = rtg_ns_timespec(rtg_mono_ns() + timeout_ns);
        while (rtg_sem_clockwait_mono(&stop_sem, &ts) != 0 && errno == EINTR && !rtg_stop)
            ;
    }
    return rtg_stop != 0;
}

static void on_stop_signal(int sig)
{
    (void)sig;
    rtg_stop_request();
}

static void on_wake_signal(int sig)
{
    (void)sig;
}

static void install_wake(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_wake_signal;
    sigemptyset(&sa.sa_mask);   /* no SA_RESTART: the interrupted wait returns EINTR */
    sigaction(RTG_WAKE_SIGNAL, &sa, NULL);
}

static pthread_once_t wake_once = PTHREAD_ONCE_INIT;

void rtg_wake_install(void)
{
    pthread_once(&wake_once, install_wake);
}

void rtg_wake_thread(pthread_t th)
{
    pthread_kill(th, RTG_WAKE_SIGNAL);
}

/* SIGTERM when the parent dies; a parent gone already counts as a stop. */
static void stop_with_parent(void)
{
#if defined(__linux__) && !defined(RTG_POSIX_ONLY)
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) == 0 && getppid() != parent)
        rtg_stop_request();
#endif
}

void rtg_stop_install(void)
{
    pthread_once(&stop_once, init_sem);
    rtg_wake_install();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);   /* no SA_RESTART: a blocking call in the main thread returns */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* SIGHUP (the terminal or ssh session closed) stops as SIGTERM does: what was
       measured is written. Left ignored when it was (nohup). */
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN)
        sigaction(SIGHUP, &sa, NULL);
    stop_with_parent();
}

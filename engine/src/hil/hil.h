/* hil: the hardware-in-the-loop loop. A device (the controller stand-in) sends a
 * UDP frame every period at absolute deadlines; the simulation blocks on its
 * socket, wakes on arrival, runs one payload step and replies with its state.
 * Device side: round trip per frame, a miss when the reply is not back by the
 * next send instant. Sim side: Ti (arrival -> sim running), Ts (step), Tw (next
 * expected frame - end of reply). Measured loops only store into preallocated
 * arrays; distributions are folded after the run. */
#ifndef RTG_HIL_H
#define RTG_HIL_H
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt.h"
#include "samples.h"

#define HIL_MAGIC_FRAME 0x52544846u   /* "RTHF" */
#define HIL_MAGIC_REPLY 0x52544852u   /* "RTHR" */
#define HIL_MIN_FRAME 32
#define HIL_MAX_FRAME 1472            /* one Ethernet MTU of UDP payload */
#define HIL_REPLY_BYTES 48

/* Input frame; padded with zeros to --frame-bytes. */
typedef struct {
    uint32_t magic, flags;
    uint64_t seq;
    int64_t send_ns;       /* device CLOCK_MONOTONIC when sent */
    int64_t deadline_ns;   /* device CLOCK_MONOTONIC: the scheduled send instant */
} hil_frame;

/* The state the simulation sends back. */
typedef struct {
    uint32_t magic, flags;
    uint64_t seq;          /* of the frame answered */
    int64_t send_ns;       /* echoed */
    uint64_t step;         /* simulation steps done */
    double state;          /* e.g. the tire's centroid height */
    int64_t sim_ns;        /* sim CLOCK_MONOTONIC at the reply */
} hil_reply;

/* One payload step; returns a number standing for the state. */
typedef double (*hil_step_fn)(void *arg);

typedef struct {
    int cpu;               /* -1: not pinned */
    rtg_policy policy;
    int priority;
    bool allow_fallback;
} hil_thread_cfg;

typedef struct {
    hil_thread_cfg th;
    int fd;                /* bound socket */
    int64_t period_ns;
    uint64_t frames;       /* expected frames (sizes the arrays) */
    hil_step_fn step;
    void *step_arg;
    uint64_t drop_every;   /* > 0: ignore every Nth frame (seq % N == N - 1): test of loss accounting */
    bool device_local;     /* the device's clock is this host's CLOCK_MONOTONIC */
    int64_t first_wait_ns; /* give up when no frame arrives within this */
    int64_t idle_ns;       /* stop when no frame arrives for this long after one did */
    _Atomic int *device_done;  /* both roles in one process: stop when set (may be NULL) */
} hil_sim_cfg;

typedef struct {
    uint64_t received, answered, ignored, gaps, reordered, bad;
    uint64_t n;            /* cycles recorded in ti/ts/tw */
    int64_t *ti, *ts, *tw;
    bool kernel_ts;        /* Ti from SO_TIMESTAMPNS (else from the device's send time) */
    bool anchored;         /* Tw from first arrival + k * period (device clock unknown) */
    rtg_sched sched;
    int tid;
    uint64_t nvcsw, nivcsw;
    char err[256];
} hil_sim_out;

typedef struct {
    hil_thread_cfg th;
    int fd;                /* connected to the simulation */
    int64_t period_ns;
    uint64_t frames;
    size_t frame_bytes;
    int64_t start_ns;      /* first send instant, CLOCK_MONOTONIC */
    int64_t linger_ns;     /* after the last frame: keep listening this long for late replies */
} hil_device_cfg;

typedef struct {
    uint64_t sent, received, late, duplicate, bad, send_errors;
    int64_t *send_ns, *reply_ns;   /* per frame; reply_ns 0 = no reply */
    int64_t max_send_lag_ns;       /* latest send relative to its deadline */
    rtg_sched sched;
    int tid;
    char err[256];
} hil_device_out;

/* Sockets (hil/link.c). Each returns an fd or -1 with a sentence in err. */
int hil_parse_address(const char *text, struct sockaddr_in *sa, char *err, size_t errlen);
int hil_bind(const struct sockaddr_in *sa, bool rx_timestamps, bool *got_ts, char *err, size_t errlen);
int hil_connect(int fd, const struct sockaddr_in *to, char *err, size_t errlen);
/* Scheduling and pinning of the calling thread; 0 or -1 with err. */
int hil_thread_setup(const hil_thread_cfg *c, rtg_sched *got, char *err, size_t errlen);

/* The two roles (hil/sim.c, hil/device.c); both run on the calling thread and
 * return 0 or -1 with out->err. */
int hil_sim_run(const hil_sim_cfg *cfg, hil_sim_out *out);
void hil_sim_out_free(hil_sim_out *o);
int hil_device_run(const hil_device_cfg *cfg, hil_device_out *out);
void hil_device_out_free(hil_device_out *o);

/* Payload "work": spin for a fixed wall time (calibration-free). */
typedef struct { int64_t ns; uint64_t steps; } hil_work;
double hil_work_step(void *arg);

#endif

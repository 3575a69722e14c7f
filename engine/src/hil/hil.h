/* hil: the hardware-in-the-loop loop. A device (the controller stand-in) sends a
 * UDP frame every period at absolute deadlines; the simulation blocks on its
 * socket, wakes on arrival, runs one payload step and replies with its state.
 * Device side: round trip per frame, a miss when the reply is not back by the
 * next send instant. Sim side: Ti (arrival -> sim running), Ts (step), Tw (next
 * expected frame - end of reply). Both run on the cycle driver (periodic.h): a
 * timer trigger for the device, a frame trigger for the simulation; measured
 * loops only store into rings that the driver's collector folds. */
#ifndef RTG_HIL_H
#define RTG_HIL_H
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "periodic.h"
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

/* One payload step; returns a number standing for the state. A step longer
 * than a period polls rtg_cycle_stopping(c) and returns early when it is set. */
typedef double (*hil_step_fn)(void *arg, const rtg_cycle_ctx *c);

/* The simulation: a FRAME-triggered thread of the cycle driver. */
typedef struct {
    int fd;                /* the bound socket (the driver's FRAME trigger reads it; replies go out on it) */
    int64_t period_ns;
    uint64_t frames;       /* expected frames */
    hil_step_fn step;
    void *step_arg;
    uint64_t drop_every;   /* > 0: ignore every Nth frame (seq % N == N - 1): test of loss accounting */
    bool device_local;     /* the device's clock is this host's CLOCK_MONOTONIC */
    bool alone;            /* no device thread in this process: end after the last frame */
    int64_t first_wait_ns; /* give up when no frame arrives within this */
    int64_t idle_ns;       /* stop when no frame arrives for this long after one did */
} hil_sim_cfg;

typedef struct {
    hil_sim_cfg cfg;
    uint64_t received, answered, ignored, gaps, reordered, bad;
    bool kernel_ts;        /* Ti from SO_TIMESTAMPNS (else from the device's send time) */
    bool anchored;         /* Tw from first arrival + k * period (device clock unknown) */
    uint64_t expected, seq0;
    int64_t started, last_arrival, anchor, end_by;
    hil_reply rep;
    char err[256];
} hil_sim;

/* The device: a TIMER-triggered sender and a FRAME-triggered receiver on the
 * same socket and CPU. Cycle k < frames of the sender sends frame k at start +
 * k * period; cycle `frames` is the linger (not recorded), after which the run
 * ends. The receiver blocks in recvmsg and stamps each reply as recvmsg returns;
 * round trips go through a ring to the collector, so memory does not grow with
 * the number of frames. */
typedef struct {
    int fd;                /* connected to the simulation */
    int64_t period_ns;
    uint64_t frames;
    size_t frame_bytes;
    int64_t linger_ns;     /* after the last frame: keep listening this long for late replies */
} hil_device_cfg;

/* Replies are matched to frames in a window of this many frames (a bitmap): a
 * reply that comes back later than that is not counted (stale_replies) and its
 * frame counts as lost. 2^20 frames: 21 s at the shortest period. */
#define HIL_SEEN_WINDOW (1u << 20)

typedef struct {
    hil_device_cfg cfg;
    unsigned char *buf;            /* one frame */
    _Atomic uint64_t *seen;        /* HIL_SEEN_WINDOW bits: a reply to seq s came (s % window) */
    rtg_ring rts;                  /* round trips, ns (int64), folded by the collector */
    rtg_dist round_trip;
    _Atomic int64_t start_ns;      /* send instant of frame 0 (set by the sender) */
    _Atomic uint64_t sent;         /* set by the sender before each send; the receiver reads it */
    uint64_t received, late, duplicate, bad, stale;   /* the receiver's */
    uint64_t send_errors;
    int64_t max_send_lag_ns;       /* latest send relative to its deadline */
} hil_device;

/* Sockets (hil/link.c). Each returns an fd or -1 with a sentence in err. */
int hil_parse_address(const char *text, struct sockaddr_in *sa, char *err, size_t errlen);
int hil_bind(const struct sockaddr_in *sa, bool rx_timestamps, bool *got_ts, char *err, size_t errlen);
int hil_connect(int fd, const struct sockaddr_in *to, char *err, size_t errlen);
/* The two roles (hil/sim.c, hil/device.c) as cycle-driver payloads. */
void hil_sim_init(hil_sim *s, const hil_sim_cfg *cfg);
void hil_sim_cycle(void *arg, rtg_cycle_ctx *c);
bool hil_sim_idle(void *arg, int64_t now_ns);   /* true: stop waiting (err set if nothing came) */
int hil_device_init(hil_device *d, const hil_device_cfg *cfg, char *err, size_t errlen);
void hil_device_free(hil_device *d);
void hil_device_cycle(void *arg, rtg_cycle_ctx *c);   /* the sender */
void hil_device_reply(void *arg, rtg_cycle_ctx *c);   /* the receiver: one reply */
bool hil_device_rx_idle(void *arg, int64_t now_ns);  /* the receiver ends with the run */
void hil_device_collect(void *arg);

/* Payload "work": spin for a fixed wall time (calibration-free). */
typedef struct { int64_t ns; uint64_t steps; } hil_work;
double hil_work_step(void *arg, const rtg_cycle_ctx *c);

#endif

/* hil device: the controller stand-in of the hardware-in-the-loop loop
 * (hil/frame.h: what it sends and gets back). It sends a UDP frame every
 * period at absolute deadlines: round trip per frame, a miss when the reply is
 * not back by the next send instant. */
#ifndef RTG_HIL_DEVICE_H
#define RTG_HIL_DEVICE_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hil/frame.h"
#include "periodic/periodic.h"
#include "samples.h"

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

int hil_device_init(hil_device *d, const hil_device_cfg *cfg, char *err, size_t errlen);
void hil_device_free(hil_device *d);
void hil_device_cycle(void *arg, rtg_cycle_ctx *c);   /* the sender */
void hil_device_reply(void *arg, rtg_cycle_ctx *c);   /* the receiver: one reply */
bool hil_device_rx_idle(void *arg, int64_t now_ns);  /* the receiver ends with the run */
void hil_device_collect(void *arg);

#endif

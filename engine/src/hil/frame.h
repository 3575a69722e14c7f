/* hil frame: the wire format of the hardware-in-the-loop loop (docs/hil.md):
 * the device's input frame and the simulation's reply, one UDP datagram each
 * (both ends run this engine, or a device that speaks the format).
 * The loop itself: hil/sim.h, hil/device.h; its sockets: hil/link.h. */
#ifndef RTG_HIL_FRAME_H
#define RTG_HIL_FRAME_H
#include <stdint.h>

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

#endif

/* hil sim: the simulation side of the hardware-in-the-loop loop (hil/frame.h:
 * what it receives and answers). The simulation blocks on its socket, wakes on
 * arrival, runs one payload step and replies with its state: Ti (arrival -> sim
 * running), Ts (step), Tw (next expected frame - end of reply). It is a
 * FRAME-triggered thread of the cycle driver (periodic.h), whose measured loop
 * only stores into a ring the driver's collector folds. */
#ifndef RTG_HIL_SIM_H
#define RTG_HIL_SIM_H
#include <stdbool.h>
#include <stdint.h>

#include "hil/frame.h"
#include "periodic/periodic.h"

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

void hil_sim_init(hil_sim *s, const hil_sim_cfg *cfg);
void hil_sim_cycle(void *arg, rtg_cycle_ctx *c);   /* the driver's payload: one frame */
bool hil_sim_idle(void *arg, int64_t now_ns);      /* true: stop waiting (err set if nothing came) */

/* A step "work": spin for a fixed wall time (calibration-free). */
typedef struct { int64_t ns; uint64_t steps; } hil_work;
double hil_work_step(void *arg, const rtg_cycle_ctx *c);

#endif

/* periodic_trigger: a measuring thread's loop (periodic_trigger.c). */
#ifndef RTG_PERIODIC_TRIGGER_H
#define RTG_PERIODIC_TRIGGER_H
#include "periodic/periodic_shared.h"

/* The measuring loop of w's trigger, until its cycles,
 * duration, a stop or its payload end it. */
void rtg_pd_measure(rtg_pd_worker *w);

#endif

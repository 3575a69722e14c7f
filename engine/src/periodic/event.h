/* event: the EVENT trigger's post side (periodic.h: the triggers). Another thread
 * posts; the measuring thread's loop (periodic_trigger.c) takes each post as one
 * cycle, timed from the post instant. */
#ifndef RTG_PERIODIC_EVENT_H
#define RTG_PERIODIC_EVENT_H
#include <semaphore.h>

#include "samples.h"

/* An event posted by another thread (trigger EVENT): each post is one cycle,
 * timed from the post instant. Single poster, single waiter. */
typedef struct {
    sem_t sem;
    rtg_ring posts;        /* int64 post instants */
} rtg_event;
int rtg_event_init(rtg_event *e);   /* 0, or -1 out of memory */
void rtg_event_free(rtg_event *e);
void rtg_event_post(rtg_event *e);  /* from any thread; never blocks */

#endif

/* event: the EVENT trigger's post side (event.h). */
#include "periodic/event.h"

#include "clock.h"

#define EVENT_RING 4096                  /* posts not yet taken by the waiter */

int rtg_event_init(rtg_event *e)
{
    if (sem_init(&e->sem, 0, 0) != 0)
        return -1;
    if (rtg_ring_init(&e->posts, sizeof(int64_t), EVENT_RING) != 0) {
        sem_destroy(&e->sem);
        return -1;
    }
    return 0;
}

void rtg_event_free(rtg_event *e)
{
    rtg_ring_free(&e->posts);
    sem_destroy(&e->sem);
}

void rtg_event_post(rtg_event *e)
{
    int64_t *slot = rtg_ring_slot(&e->posts);
    if (!slot)
        return;   /* the waiter is EVENT_RING posts behind: counted as dropped */
    *slot = rtg_mono_ns();
    rtg_ring_publish(&e->posts);
    sem_post(&e->sem);
}

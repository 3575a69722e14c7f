/* periodic_shared: a measuring thread's ring and frame buffer (periodic_shared.h). */
#include "periodic/periodic_shared.h"

#include <stdlib.h>

int rtg_pd_worker_init(rtg_pd_worker *w, rtg_pd_shared *sh, int index, rtg_periodic_thread *out,
                       const rtg_trigger *tr, size_t ring_cap)
{
    w->sh = sh;
    w->index = index;
    w->out = out;
    w->tr = tr;
    w->last_number = -1;
    if (rtg_ring_init(&w->ring, sizeof(rtg_cycle), ring_cap) != 0)
        return -1;
    if (tr->kind == RTG_TRIGGER_FRAME) {
        w->frame = calloc(1, RTG_PD_FRAME_MAX);
        if (!w->frame)
            return -1;
        rtg_touch(w->frame, RTG_PD_FRAME_MAX);
    }
    return 0;
}

void rtg_pd_worker_free(rtg_pd_worker *w)
{
    rtg_ring_free(&w->ring);
    free(w->frame);
    w->frame = NULL;
}

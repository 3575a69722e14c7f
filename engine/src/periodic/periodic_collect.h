/* periodic_collect: the collector of a periodic run (periodic_collect.c). */
#ifndef RTG_PERIODIC_COLLECT_H
#define RTG_PERIODIC_COLLECT_H
#include <pthread.h>

#include "periodic/periodic_shared.h"

/* The collector thread (p: the rtg_pd_shared); drains every
 * 50 ms until every worker is done, then once more. */
void *rtg_pd_collector_main(void *p);
/* Keep the collector off the measured CPUs when another CPU is allowed. */
void rtg_pd_place_collector(pthread_attr_t *a, const rtg_periodic_cfg *cfg);

#endif

/* periodic_samples: the raw samples file of a periodic run (formats: periodic.h). */
#ifndef RTG_PERIODIC_SAMPLES_H
#define RTG_PERIODIC_SAMPLES_H
#include <stdbool.h>
#include <stdio.h>

#include "periodic/cycle.h"

void rtg_pd_samples_header(FILE *f, bool binary);
void rtg_pd_samples_write(FILE *f, bool binary, int thread, const rtg_cycle *c);

#endif

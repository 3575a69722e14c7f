/* periodic_samples: the raw samples file of a periodic run, written by the
 * collector (formats: periodic.h, docs/samples.md). */
#include "periodic/periodic_samples.h"

#include <string.h>

static void put_le32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

void rtg_pd_samples_header(FILE *f, bool binary)
{
    if (binary) {
        unsigned char h[16];
        memcpy(h, "RTGSAMP1", 8);
        put_le32(h + 8, 48);
        put_le32(h + 12, 0);
        fwrite(h, 1, sizeof h, f);
    } else {
        fputs("thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns\n", f);
    }
}

void rtg_pd_samples_write(FILE *f, bool binary, int thread, const rtg_cycle *c)
{
    if (binary) {
        unsigned char r[48];
        put_le32(r, (uint32_t)thread);
        put_le32(r + 4, 0);
        put_le64(r + 8, c->cycle);
        put_le64(r + 16, (uint64_t)c->deadline_ns);
        put_le64(r + 24, (uint64_t)c->ti);
        put_le64(r + 32, (uint64_t)c->ts);
        put_le64(r + 40, (uint64_t)c->tw);
        fwrite(r, 1, sizeof r, f);
    } else {
        fprintf(f, "%d,%llu,%lld,%lld,%lld,%lld\n", thread, (unsigned long long)c->cycle,
                (long long)c->deadline_ns, (long long)c->ti, (long long)c->ts, (long long)c->tw);
    }
}

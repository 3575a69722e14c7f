/* json: a small value tree and its writer. Every engine run builds one result
 * document (see result.h) from these values and prints it once at the end. */
#ifndef RTG_JSON_H
#define RTG_JSON_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { RTG_J_NULL, RTG_J_BOOL, RTG_J_INT, RTG_J_NUM, RTG_J_STR, RTG_J_ARR, RTG_J_OBJ } rtg_jtype;
typedef struct rtg_json rtg_json;

rtg_json *rtg_j_null(void);
rtg_json *rtg_j_bool(bool b);
rtg_json *rtg_j_int(int64_t v);
rtg_json *rtg_j_num(double v);         /* NaN/inf are written as null */
rtg_json *rtg_j_str(const char *s);    /* copied */
rtg_json *rtg_j_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
rtg_json *rtg_j_arr(void);
rtg_json *rtg_j_obj(void);
/* append to an array; returns the value */
rtg_json *rtg_j_push(rtg_json *arr, rtg_json *v);
/* set key in object (replaces an existing key, keeps insertion order); returns v */
rtg_json *rtg_j_set(rtg_json *obj, const char *key, rtg_json *v);
rtg_json *rtg_j_get(const rtg_json *obj, const char *key);   /* NULL if absent */
/* get key, creating an empty object there if absent */
rtg_json *rtg_j_obj_at(rtg_json *obj, const char *key);
rtg_jtype rtg_j_type(const rtg_json *v);
void rtg_j_free(rtg_json *v);
/* compact, valid JSON (strings escaped per RFC 8259), newline at end */
void rtg_j_write(FILE *f, const rtg_json *v);

/* Distribution as in the contract: {"unit":"ns","count","min","avg","stddev","p50",
 * "p90","p99","p999","p9999","max","histogram":{"scheme":"log-linear",
 * "sub_buckets":128,"bins":[[lo,hi,count],...nonzero only]}, and when a linear
 * histogram exists "linear":{"bucket_ns":w,"counts":[...],"overflow":n}} */
#include "samples.h"
rtg_json *rtg_j_dist(const rtg_dist *d, const char *unit);
/* Series: {"unit":u,"window_ns":w,"start_ns":s,"max":[...]} (empty window = null) */
rtg_json *rtg_j_series(const rtg_series *s, const char *unit);
/* A series of N per-window values (counts or sums) in the same shape, its values
 * under "max" as the contract keeps a series' values; none is null. */
rtg_json *rtg_j_series_values(int64_t start_ns, int64_t window_ns, const int64_t *v, size_t n, const char *unit);
/* Scalar metric: {"unit":u,"value":v} */
rtg_json *rtg_j_scalar_int(int64_t v, const char *unit);
rtg_json *rtg_j_scalar_num(double v, const char *unit);

#endif

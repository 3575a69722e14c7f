/* check: the engine's minimal unit-test assertions. Unlike assert() they stay on
 * in release builds (b_ndebug=if-release), report every failure with its place
 * and a formatted explanation, and let the test go on to report more.
 *   CHECK(cond, "fmt", ...)   record a failure when cond is false
 *   CHECK_EQ_I(a, b)          int64 equality, printing both values
 *   return check_done();      exit status 0 when nothing failed, 1 otherwise
 * Meson treats exit status 77 as "skipped" (CHECK_SKIP). */
#ifndef RTG_CHECK_H
#define RTG_CHECK_H
#include <stdint.h>
#include <stdio.h>

static int check_failures;
static int check_count;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        check_count++;                                                            \
        if (!(cond)) {                                                            \
            check_failures++;                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

#define CHECK_EQ_I(a, b)                                                          \
    do {                                                                          \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);           \
        CHECK(check_a_ == check_b_, "%s = %lld, %s = %lld", #a, check_a_, #b, check_b_); \
    } while (0)

#define CHECK_SKIP 77

static inline int check_done(void)
{
    if (check_failures)
        fprintf(stderr, "%d of %d checks failed\n", check_failures, check_count);
    else
        printf("all %d checks passed\n", check_count);
    return check_failures ? 1 : 0;
}

/* splitmix64: small, seedable, good enough for test data */
static inline uint64_t check_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0,1) */
static inline double check_rand01(uint64_t *state)
{
    return (double)(check_rand(state) >> 11) * 0x1.0p-53;
}

#endif

/* The memory-bandwidth floor of the tire model's fast solver (bench/memfloor.py).
 *
 *   memfloor copy|tire MASSES ROUNDS
 *
 * tire: the fast solver's memory traffic without its arithmetic. The state is a
 *   structure of arrays (x, y, vx, vy) read and a new one written each step; node i
 *   also reads its opposite node i + n/2 (mod n), which at a million masses is long
 *   out of cache when its turn comes: 8 streams read and 4 written, 96 bytes a node.
 * copy: one array in, one out, of the same total size (a STREAM copy).
 * Prints one line per round: "NS_PER_MASS BYTES_PER_S" (bytes read + written).
 * A scalar read through a volatile (zero) keeps every load and stops the compiler from
 * turning a loop into memcpy. Every page is touched before the timed rounds. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#define TILE 256

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double *array(size_t n, double v)
{
    double *a = malloc(n * sizeof(double));
    if (!a) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        a[i] = v + (double)i;
    return a;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "copy") && strcmp(argv[1], "tire"))) {
        fprintf(stderr, "usage: memfloor copy|tire MASSES ROUNDS\n");
        return 2;
    }
    const int tire = !strcmp(argv[1], "tire");
    const size_t n = strtoul(argv[2], NULL, 10) & ~(size_t)1;
    const int rounds = atoi(argv[3]);
    if (n < 2 || rounds < 1) {
        fprintf(stderr, "MASSES at least 2, ROUNDS at least 1\n");
        return 2;
    }
    static volatile double zero = 0.0;
    const double s = zero;
    double *in[4], *out[4], *cin = NULL, *cout = NULL;
    if (tire) {
        for (int k = 0; k < 4; k++) {
            in[k] = array(n, k);
            out[k] = array(n, 0);
        }
    } else {
        cin = array(4 * n, 1);
        cout = array(4 * n, 0);
    }
    const size_t h = n / 2;
    double check = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now(), bytes;
        if (tire) {
            double *x = in[0], *y = in[1], *vx = in[2], *vy = in[3];
            double *nx = out[0], *ny = out[1], *nvx = out[2], *nvy = out[3];
            for (size_t half = 0; half < 2; half++) {       /* the opposite: + n/2, then - n/2 */
                const size_t a = half ? h : 0, b = half ? n : h;
                const ptrdiff_t d = half ? -(ptrdiff_t)h : (ptrdiff_t)h;
                for (size_t t = a; t < b; t += TILE) {       /* tiles, as the solver goes */
                    const size_t e = t + TILE < b ? t + TILE : b;
                    for (size_t i = t; i < e; i++)
                        nx[i] = x[i] + s * x[i + d];
                    for (size_t i = t; i < e; i++)
                        ny[i] = y[i] + s * y[i + d];
                    for (size_t i = t; i < e; i++)
                        nvx[i] = vx[i] + s * vx[i + d];
                    for (size_t i = t; i < e; i++)
                        nvy[i] = vy[i] + s * vy[i + d];
                }
            }
            bytes = 96.0 * n;
            check += nx[n - 1];
        } else {
            for (size_t i = 0; i < 4 * n; i++)
                cout[i] = cin[i] + s;
            bytes = 2.0 * 4 * n * sizeof(double);
            check += cout[n - 1];
        }
        double t = now() - t0;
        printf("%.4f %.0f\n", t * 1e9 / n, bytes / t);
    }
    return check < 0 ? 1 : 0;                 /* the results are used */
}

/* Median cost of one-row calls of the sgp C library on the host:
 * sgp_model_predict, sgp_model_mean and sgp_model_update, 10,000 each,
 * on an updatable blob of 4 inputs (not run by CI). From the repository root:
 *   python python/bench/one_row_calls.py --save /tmp/m32d4.sgp
 *   cargo build --release -p sgp-capi
 *   cc -O2 -I target/release capi/c/bench_calls.c target/release/libsgp_capi.a \
 *       -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o /tmp/bench_calls
 *   /tmp/bench_calls /tmp/m32d4.sgp
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sgp.h"

#define CALLS 10000
#define INPUTS 4

static SgpModel model;
static unsigned char blob[65536];
static float rows[CALLS][INPUTS];
static double took[CALLS];

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    if (f == NULL) {
        fprintf(stderr, "usage: bench_calls BLOB (an updatable model of %d inputs)\n", INPUTS);
        return 2;
    }
    size_t len = fread(blob, 1, sizeof blob, f);
    fclose(f);
    if (sgp_model_load(&model, sizeof model, blob, len) != 0) {
        fprintf(stderr, "the library refused the blob\n");
        return 1;
    }
    srand(1);
    for (int i = 0; i < CALLS; i++)
        for (int j = 0; j < INPUTS; j++) rows[i][j] = 4.0f * rand() / RAND_MAX - 2.0f;
    const char *names[3] = {"predict", "mean", "update"};
    printf("median of %d one-row calls:\n", CALLS);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < CALLS; i++) {
            SgpPrediction p;
            SgpInnovation seen;
            float mean;
            double start = now_ns();
            SgpStatus status = k == 0   ? sgp_model_predict(&model, rows[i], INPUTS, &p)
                               : k == 1 ? sgp_model_mean(&model, rows[i], INPUTS, &mean)
                                        : sgp_model_update(&model, rows[i], INPUTS,
                                                           0.5f * rows[i][0], &seen);
            took[i] = now_ns() - start;
            if (status != 0) {
                fprintf(stderr, "%s: status %d\n", names[k], (int)status);
                return 1;
            }
        }
        qsort(took, CALLS, sizeof took[0], ascending);
        printf("  %-8s %6.2f us\n", names[k], took[CALLS / 2] / 1e3);
    }
    return 0;
}

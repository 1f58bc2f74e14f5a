/* The latency harness the cache examples share: `PROG --sweep N1,N2,...` prints, for
 * each size, the best time per operation of SWEEP_ROUNDS short timed rounds (the curve
 * bench/cache_cliff.py finds the knees in), and a plain run reads `N [OPS]`. The rounds
 * are those of `perfsleuth cache calibrate`'s chases (10 of 20,000 dependent steps, a
 * few ms: on a loaded machine one of them has usually not been preempted, where a
 * round of 4,000,000 always was).
 * An example includes it where its own harness begins, so that the lines of the code
 * before it keep the numbers tests and docs cite. */
#ifndef LATENCY_SWEEP_H
#define LATENCY_SWEEP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The N of the sweep's current size, for an example's round function. */
static size_t sweep_n;
/* The work per operation at that size, when an example's own work grows with N
 * (uthash: the chain entries a lookup passes, more as the chains lengthen between
 * two doublings of the buckets); printed as a third column when set. */
static double sweep_work;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define SWEEP_ROUNDS 10
#define SWEEP_ROUND_OPS 20000

/* The best ns per operation of SWEEP_ROUNDS rounds of SWEEP_ROUND_OPS operations by
 * ROUND on STATE; its checksum is used, so the rounds cannot be optimised away. */
static double fastest_round(uint64_t (*round_of)(void *state, size_t ops), void *state) {
    double best = 1e30;
    for (int round = 0; round < SWEEP_ROUNDS; round++) {
        double start = now_ns();
        uint64_t check = round_of(state, SWEEP_ROUND_OPS);
        double per_op = (now_ns() - start) / (double)SWEEP_ROUND_OPS;
        if (check == 42)
            puts("");
        if (per_op < best)
            best = per_op;
    }
    return best;
}

/* With `--sweep N1,N2,...`: the size of the OBJECT, then "N NS" per OPERATION for each
 * N (and the work per operation, when the example measures it), and 1; else 0. */
static int latency_sweep(int argc, char **argv, const char *object, size_t size,
                         const char *operation, double (*latency_ns)(size_t n)) {
    if (argc < 3 || strcmp(argv[1], "--sweep") != 0)
        return 0;
    printf("# sizeof(%s) = %zu\n# n ns_per_%s\n", object, size, operation);
    for (char *item = strtok(argv[2], ","); item; item = strtok(NULL, ",")) {
        double ns = latency_ns((size_t)atol(item));
        printf(sweep_work > 0 ? "%zu %.2f %.4f\n" : "%zu %.2f\n", (size_t)atol(item), ns,
               sweep_work);
    }
    return 1;
}

/* A plain run's N (at least 1) and OPS (default 4*N); exits 2 saying why otherwise.
 * WHAT names the N things. */
static size_t plain_run(int argc, char **argv, const char *what, size_t *ops) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N [OPS] | --sweep N1,N2,...\n", argv[0]);
        exit(2);
    }
    size_t n = (size_t)atol(argv[1]);
    *ops = argc > 2 ? (size_t)atol(argv[2]) : 4 * n;
    if (n == 0) {
        fprintf(stderr, "N must be a positive number of %s\n", what);
        exit(2);
    }
    return n;
}

#endif

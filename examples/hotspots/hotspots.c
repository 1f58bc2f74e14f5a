/* Known hot spots: compute_a does 3 units of work per call, compute_b 2 and
 * compute_c 1, so their total shares of CPU time are about 50%, 33% and 17%.
 * Each spends two thirds in its own loop and one third in the shared helper
 * work(), which therefore has about a third of the self time.
 * An always-inlined helper (mix) gives the symbolizer an inline frame to find.
 * Usage: hotspots [ITERATIONS]  (default 4000000) */
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) unsigned long mix(unsigned long x) {
    x ^= x >> 13;
    x *= 0x9E3779B97F4A7C15ul;
    return x ^ (x >> 29);
}

__attribute__((noinline)) unsigned long work(unsigned long seed, int rounds) {
    for (int i = 0; i < rounds; i++)
        seed = mix(seed + (unsigned long)i);
    return seed;
}

#define COMPUTE(name, rounds)                                   \
    __attribute__((noinline)) unsigned long name(unsigned long s) { \
        for (int i = 0; i < 2 * (rounds); i++)                  \
            s = mix(s ^ (unsigned long)i);                      \
        return work(s, rounds) ^ s;                             \
    }

COMPUTE(compute_a, 15)
COMPUTE(compute_b, 10)
COMPUTE(compute_c, 5)

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 4000000;
    unsigned long acc = 1;
    for (long i = 0; i < n; i++) {
        acc += compute_a(acc);
        acc += compute_b(acc);
        acc += compute_c(acc);
    }
    printf("%lu\n", acc);
    return 0;
}

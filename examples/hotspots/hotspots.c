/* Known hot spots: compute_a does ~3 units of work per call, compute_b ~2,
 * compute_c ~1, so their shares of CPU time are about 50%, 33% and 17%.
 * An inlined helper (mix) gives the symbolizer an inline frame to find.
 * Usage: hotspots [ITERATIONS]  (default 40000000) */
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

__attribute__((noinline)) unsigned long compute_a(unsigned long s) { return work(s, 30); }
__attribute__((noinline)) unsigned long compute_b(unsigned long s) { return work(s, 20); }
__attribute__((noinline)) unsigned long compute_c(unsigned long s) { return work(s, 10); }

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

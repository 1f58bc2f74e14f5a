/* The program calling the stripped library (see solver.c): its own loop takes about
 * a third of the time, solver_check the rest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

uint64_t solver_check(uint64_t formula);

__attribute__((noinline)) static uint64_t candidate(uint64_t i) {
    uint64_t h = i;
    for (int k = 0; k < 40000; k++)
        h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    return h;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000;
    uint64_t sum = 0;
    for (long i = 0; i < n; i++)
        sum += solver_check(candidate((uint64_t)i));
    printf("%llu\n", (unsigned long long)sum);
    return 0;
}

/* Planted problem: most of the time is in a shared library shipped stripped (like
 * Debian's libz3.so.4 under K2): its internal functions have no names in a profile,
 * only its exported entry point does. perfsleuth must name the library and size it
 * (a hot-library finding), not report only "samples have no function name". */
#include <stdint.h>

static uint64_t mix(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ULL;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dULL;
    return x ^ (x >> 33);
}

__attribute__((noinline)) static uint64_t propagate(uint64_t seed, int rounds) {
    uint64_t acc = seed;
    for (int i = 0; i < rounds; i++)
        acc = mix(acc + (uint64_t)i);
    return acc;
}

uint64_t solver_check(uint64_t formula) {
    return propagate(formula, 20000) ^ formula; /* not a tail call: on the stack */
}

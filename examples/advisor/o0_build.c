/* Planted problem: built with -O0 (see the Makefile). The loop is ordinary
   integer arithmetic that -O2 keeps in registers; at -O0 every variable lives
   in a stack slot and each use is a load and a store. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long mix(unsigned long h, unsigned long v) {
    h ^= v + 0x9e3779b97f4a7c15ul + (h << 6) + (h >> 2);
    return h;
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100000000;
    unsigned long h = 0;
    for (long i = 0; i < rounds; ++i) h = mix(h, (unsigned long)i);
    printf("%lu\n", h);
    return 0;
}

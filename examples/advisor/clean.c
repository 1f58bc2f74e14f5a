/* No planted problem: a well-built (-O2 -g) integer kernel whose time is all
   in its own loop. The advisor should report nothing with high confidence. */
#include <stdio.h>
#include <stdlib.h>

static unsigned collatz_steps(unsigned long n) {
    unsigned steps = 0;
    while (n != 1) {
        n = (n & 1) ? 3 * n + 1 : n >> 1;
        ++steps;
    }
    return steps;
}

int main(int argc, char **argv) {
    unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 3000000;
    unsigned long longest = 0, best = 1;
    for (unsigned long n = 1; n < limit; ++n) {
        unsigned s = collatz_steps(n);
        if (s > longest) {
            longest = s;
            best = n;
        }
    }
    printf("%lu %lu\n", best, longest);
    return 0;
}

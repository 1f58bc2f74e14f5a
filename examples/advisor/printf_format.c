/* Planted problem: printf-style formatting of numbers in the hot loop
   (snprintf with %d and %.6f); glibc's vfprintf and its float printer dominate. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 900000;
    char line[128];
    unsigned long total = 0;
    for (int i = 0; i < rounds; ++i) {
        int n = snprintf(line, sizeof line, "id=%d value=%.6f ratio=%g", i, i * 0.37, i / 7.0);
        total += (unsigned long)n + (unsigned char)line[n - 1];
    }
    printf("%lu\n", total);
    return 0;
}

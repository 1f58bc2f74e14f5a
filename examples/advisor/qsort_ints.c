/* Planted problem: qsort with a comparison callback on a large int array;
   time goes to glibc's generic sort and the indirect comparator calls. */
#include <stdio.h>
#include <stdlib.h>

static int compare_ints(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 12;
    const size_t n = 400000;
    int *values = malloc(n * sizeof *values);
    unsigned seed = 7;
    long checksum = 0;
    for (int r = 0; r < rounds; ++r) {
        for (size_t i = 0; i < n; ++i) {
            seed = seed * 1664525u + 1013904223u;
            values[i] = (int)(seed >> 1);
        }
        qsort(values, n, sizeof *values, compare_ints);
        checksum += values[n / 2] % 1000;
    }
    printf("%ld\n", checksum);
    free(values);
    return 0;
}

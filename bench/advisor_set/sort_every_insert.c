/* Planted: qsort of the whole array after every insert. Fix (-DFIXED): sort once. */
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(void) {
    enum { N = 8000 };
    static int v[N];
    unsigned seed = 7;
    for (int i = 0; i < N; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (int)(seed >> 8);
#ifndef FIXED
        qsort(v, (size_t)i + 1, sizeof v[0], by_value);
#endif
    }
#ifdef FIXED
    qsort(v, N, sizeof v[0], by_value);
#endif
    printf("%d %d\n", v[0], v[N - 1]);
    return 0;
}

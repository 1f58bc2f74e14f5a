/* Planted: malloc/free of a small scratch record per item. Fix (-DFIXED): one reused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rec { char name[40]; long value; };

static long process(int i, struct rec *scratch) {
#ifndef FIXED
    struct rec *r = malloc(sizeof *r + (size_t)(i % 7) * 16);
#else
    struct rec *r = scratch;
#endif
    __asm__ volatile("" : : "r"(r) : "memory"); /* the record escapes, as in real code */
    r->value = i * 3;
    r->name[0] = (char)i;
    long v = r->value + r->name[0];
#ifndef FIXED
    free(r);
#endif
    (void)scratch;
    return v;
}

int main(void) {
    struct rec *scratch = malloc(sizeof *scratch + 7 * 16);
    void *keep[64] = {0};
    long total = 0;
    for (int i = 0; i < 40000000; i++) {
        total += process(i, scratch);
        if (i % 1000 == 0) { free(keep[i % 64]); keep[i % 64] = malloc(64 + (size_t)(i % 512)); }
    }
    printf("%ld\n", total);
    return 0;
}

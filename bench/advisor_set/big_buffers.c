/* Planted: a 40 MiB buffer malloc'ed, used and freed per request. Above glibc's
   largest mmap threshold (32 MiB), each one is mmap'ed, faulted in page by page as it
   is touched, and unmapped. Fix (-DFIXED): one buffer reused. */
#include <stdio.h>
#include <stdlib.h>

#define SIZE (40 << 20)

static unsigned handle(unsigned char *buf, int request) {
    unsigned sum = 0;
    for (long i = 0; i < SIZE; i += 4096) buf[i] = (unsigned char)(request + i);
    for (long i = 0; i < SIZE; i += 4096) sum += buf[i];
    return sum;
}

int main(void) {
    unsigned total = 0;
#ifdef FIXED
    unsigned char *buf = malloc(SIZE);
#endif
    for (int r = 0; r < 60; r++) {
#ifndef FIXED
        unsigned char *buf = malloc(SIZE);
#endif
        total += handle(buf, r);
#ifndef FIXED
        free(buf);
#endif
    }
    printf("%u\n", total);
    return 0;
}

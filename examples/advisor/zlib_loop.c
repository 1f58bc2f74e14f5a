/* Planted problem: a zlib compress loop at the highest level; deflate_slow and
   longest_match in libz dominate the profile. */
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    const uLong size = 1 << 20;
    unsigned char *input = malloc(size);
    uLongf bound = compressBound(size);
    unsigned char *output = malloc(bound);
    unsigned seed = 12345;
    for (uLong i = 0; i < size; ++i) {
        seed = seed * 1103515245u + 12345u;
        input[i] = "the quick brown fox jumps over the lazy dog "[(seed >> 16) % 44];
    }
    unsigned long total = 0;
    for (int r = 0; r < rounds; ++r) {
        uLongf out_len = bound;
        input[r % size] ^= 1;
        if (compress2(output, &out_len, input, size, 9) != Z_OK) return 1;
        total += out_len;
    }
    printf("%lu\n", total);
    free(input);
    free(output);
    return 0;
}

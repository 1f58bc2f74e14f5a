/* Planted: fputc per character on a stream (each call locks the FILE). Fix (-DFIXED):
   the line built in a buffer and written with one fwrite. */
#include <stdio.h>

int main(void) {
    FILE *out = fopen("/dev/null", "w");
    char line[128];
    for (int i = 0; i < 1500000; i++) {
        int n = 0;
        for (int c = 0; c < 100; c++) line[n++] = (char)('a' + (i + c) % 26);
        line[n++] = '\n';
#ifdef FIXED
        fwrite(line, 1, (size_t)n, out);
#else
        for (int c = 0; c < n; c++) fputc(line[c], out);
#endif
    }
    fclose(out);
    return 0;
}

/* Planted: snprintf("%f") per value (glibc's multi-precision float printing).
   Fix (-DFIXED): fixed-point digits by hand (the values have 3 decimals). */
#include <stdio.h>

static int format_price(char *out, long milli) {
#ifdef FIXED
    char tmp[24];
    int n = 0;
    long whole = milli / 1000, frac = milli % 1000;
    do { tmp[n++] = (char)('0' + whole % 10); whole /= 10; } while (whole);
    int len = 0;
    while (n) out[len++] = tmp[--n];
    out[len++] = '.';
    out[len++] = (char)('0' + frac / 100);
    out[len++] = (char)('0' + frac / 10 % 10);
    out[len++] = (char)('0' + frac % 10);
    out[len] = 0;
    return len;
#else
    return snprintf(out, 24, "%.3f", (double)milli / 1000.0);
#endif
}

int main(void) {
    char buf[24];
    long total = 0;
    for (long i = 0; i < 3000000; i++) total += format_price(buf, i * 7919 % 100000000);
    printf("%ld\n", total);
    return 0;
}

/* Planted problem: decimal numbers parsed with strtod in the hot loop (the text
   is prepared once, outside the measured work). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    enum { COUNT = 100000 };
    static char text[COUNT][32];
    for (int i = 0; i < COUNT; ++i) snprintf(text[i], sizeof text[i], "%d.%06d", i, i * 7919 % 1000000);
    double sum = 0;
    for (int r = 0; r < rounds; ++r)
        for (int i = 0; i < COUNT; ++i) sum += strtod(text[i], NULL);
    printf("%f\n", sum);
    return 0;
}

/* Planted: strlen in the loop condition of a loop that writes the string (rescanned
   each iteration). Fix (-DFIXED): the length taken once. */
#include <stdio.h>
#include <string.h>

static void upcase(char *s) {
#ifdef FIXED
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
#else
    for (size_t i = 0; i < strlen(s); i++)
#endif
        if (s[i] >= 'a' && s[i] <= 'z') s[i] = (char)(s[i] - 32);
}

int main(void) {
    static char line[20000];
    long total = 0;
    for (int round = 0; round < 300; round++) {
        memset(line, 'a' + round % 26, sizeof line - 1);
        line[sizeof line - 1] = 0;
        upcase(line);
        total += line[round];
    }
    printf("%ld\n", total);
    return 0;
}

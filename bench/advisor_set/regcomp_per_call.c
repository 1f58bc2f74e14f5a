/* Planted: a POSIX regex compiled for every line. Fix (-DFIXED): compiled once. */
#include <regex.h>
#include <stdio.h>

static int matches(regex_t *once, const char *line) {
#ifdef FIXED
    return regexec(once, line, 0, NULL, 0) == 0;
#else
    (void)once;
    regex_t re;
    regcomp(&re, "^user[0-9]+@(mail|web)\\.example\\.(com|org)$", REG_EXTENDED | REG_NOSUB);
    int hit = regexec(&re, line, 0, NULL, 0) == 0;
    regfree(&re);
    return hit;
#endif
}

int main(void) {
    regex_t once;
    regcomp(&once, "^user[0-9]+@(mail|web)\\.example\\.(com|org)$", REG_EXTENDED | REG_NOSUB);
    char line[64];
    long hits = 0;
    for (int i = 0; i < 40000; i++) {
        snprintf(line, sizeof line, "user%d@%s.example.%s", i, i % 3 ? "mail" : "ftp", i % 2 ? "com" : "org");
        hits += matches(&once, line);
    }
    printf("%ld\n", hits);
    return 0;
}

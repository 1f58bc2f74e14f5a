/* Planted: stat(2) of the same configuration file for every item. Fix (-DFIXED): once. */
#include <stdio.h>
#include <sys/stat.h>

static long config_size(void) {
    struct stat st;
    return stat("/etc/debian_version", &st) == 0 ? (long)st.st_size : 0;
}

int main(void) {
    long total = 0;
#ifdef FIXED
    long size = config_size();
#endif
    for (int i = 0; i < 600000; i++) {
#ifdef FIXED
        total += size + i % 3;
#else
        total += config_size() + i % 3;
#endif
    }
    printf("%ld\n", total);
    return 0;
}

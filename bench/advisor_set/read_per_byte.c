/* Planted: read(2) of one byte at a time. Fix (-DFIXED): 64 KiB blocks. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static long count_lines(int fd) {
    long lines = 0;
#ifdef FIXED
    static char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) lines += buf[i] == '\n';
#else
    char c;
    while (read(fd, &c, 1) == 1) lines += c == '\n';
#endif
    return lines;
}

int main(void) {
    long total = 0;
    for (int round = 0; round < 20; round++) {
        int fd = open("/usr/share/common-licenses/GPL-3", O_RDONLY);
        total += count_lines(fd);
        close(fd);
    }
    printf("%ld\n", total);
    return 0;
}

/* Planted: fsync after every record. Fix (-DFIXED): one fsync after the batch. */
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>

static void save(int fd, int i) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "record %d\n", i);
    write(fd, buf, (size_t)n);
#ifndef FIXED
    fsync(fd);
#endif
}

int main(void) {
    char path[] = "/var/tmp/advisor_set_fsyncXXXXXX";
    int fd = mkstemp(path);
    for (int i = 0; i < 600; i++) save(fd, i);
    fsync(fd);
    close(fd);
    unlink(path);
    return 0;
}

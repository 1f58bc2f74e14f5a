/* Planted: one write(2) per 24-byte record. Fix (-DFIXED): a 64 KiB stdio buffer. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static void log_event(int fd, FILE *out, int i) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "event %08d level 3\n", i);
#ifdef FIXED
    (void)fd;
    fwrite(buf, 1, (size_t)n, out);
#else
    (void)out;
    write(fd, buf, (size_t)n);
#endif
}

int main(void) {
    int fd = open("/dev/null", O_WRONLY);
    FILE *out = fdopen(fd, "w");
    setvbuf(out, NULL, _IOFBF, 1 << 16);
    for (int i = 0; i < 2000000; i++) log_event(fd, out, i);
    fclose(out);
    return 0;
}

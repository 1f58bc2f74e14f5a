/* Waiting that is not a lock. Planted problems:
 *   poller: a thread that works about 2 ms, then sleeps 2 ms (usleep) to check for
 *           more instead of blocking until there is some -- a sleep/poll loop on a
 *           thread that clearly works, even on a busy machine;
 *   writer: a thread that fsyncs after every MiB it writes -- I/O waits.
 * usage: pollsync [SECONDS] */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int stop;
static volatile unsigned long sink;
static char path[] = "/tmp/pollsync.XXXXXX";

static void work(int n) {
    for (int i = 0; i < n; i++) sink += (unsigned long)i * 7;
}

static void *poller(void *arg) {
    (void)arg;
    while (!stop) {
        work(6000000);
        usleep(2000);
    }
    return NULL;
}

static void *writer(void *arg) {
    int fd = *(int *)arg;
    char block[4096];
    memset(block, 'x', sizeof block);
    while (!stop) {
        work(100000);
        for (int i = 0; i < 256; i++)
            if (write(fd, block, sizeof block) < 0) return NULL;
        fsync(fd);
        lseek(fd, 0, SEEK_SET); /* the same blocks again: closing a long file waits too */
    }
    return NULL;
}

int main(int argc, char **argv) {
    int seconds = argc > 1 ? atoi(argv[1]) : 3;
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    unlink(path);
    pthread_t a, b;
    pthread_create(&a, NULL, poller, NULL);
    pthread_create(&b, NULL, writer, &fd);
    sleep(seconds);
    stop = 1;
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    close(fd);
    puts("pollsync: done");
    return 0;
}

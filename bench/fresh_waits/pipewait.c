/* Two reader threads each wait in epoll_wait (no timeout) on a pipe that a writer
 * thread of its own feeds, one 8-byte message after each piece of work, then read the
 * message and work on it. The readers time epoll_wait + read: the truth for `io`;
 * the writers' write() calls are not timed (the pipe never fills: they do not block).
 * Prints that time over the lifetime of all four started threads.
 * usage: pipewait MESSAGES */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static int messages;
static uint64_t waited_total, lived_total;
static pthread_mutex_t totals = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t digest(uint64_t x, int rounds) {
    for (int k = 0; k < rounds; k++) x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + k;
    return x;
}

static void add_totals(uint64_t waited, uint64_t lived) {
    pthread_mutex_lock(&totals);
    waited_total += waited;
    lived_total += lived;
    pthread_mutex_unlock(&totals);
}

static void *writer(void *arg) {
    int fd = (int)(intptr_t)arg;
    uint64_t born = now_ns(), h = (uint64_t)fd;
    for (int i = 0; i < messages; i++) {
        h = digest(h, 60000);
        if (write(fd, &h, sizeof h) != sizeof h) abort();
    }
    add_totals(0, now_ns() - born);
    return NULL;
}

static void *reader(void *arg) {
    int fd = (int)(intptr_t)arg;
    uint64_t born = now_ns(), waited = 0, h = 0, v;
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    for (int i = 0; i < messages; i++) {
        uint64_t t0 = now_ns();
        epoll_wait(ep, &out, 1, -1);
        if (read(fd, &v, sizeof v) != sizeof v) abort();
        waited += now_ns() - t0;
        h = digest(h ^ v, 30000);
    }
    sink = h;
    add_totals(waited, now_ns() - born);
    return NULL;
}

int main(int argc, char **argv) {
    messages = argc > 1 ? atoi(argv[1]) : 12000;
    pthread_t threads[4];
    for (int i = 0; i < 2; i++) {
        int fds[2];
        if (pipe(fds)) return 1;
        pthread_create(&threads[2 * i], NULL, reader, (void *)(intptr_t)fds[0]);
        pthread_create(&threads[2 * i + 1], NULL, writer, (void *)(intptr_t)fds[1]);
    }
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    fprintf(stderr, "threads waited %llu ns of %llu ns\n", (unsigned long long)waited_total,
            (unsigned long long)lived_total);
    return 0;
}

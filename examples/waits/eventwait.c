/* A consumer thread waits for a producer's messages, one after each piece of the
 * producer's work (~4 ms), and works ~2 ms on each. How it waits:
 *   block: in epoll_wait on the producer's pipe, no timeout (-1): a blocking wait that
 *          wakes exactly when there is work -- not a poll loop, whatever its stack;
 *   poll:  in poll() with a 1 ms timeout on a pipe nobody writes, checking a counter the
 *          producer bumps after each timeout -- a poll loop (planted).
 * usage: eventwait block|poll [SECONDS] */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop, posted;
static int pipe_fds[2], idle_fds[2];
static volatile unsigned long sink;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) void work(double seconds) {
    unsigned long x = sink;
    for (double until = now_s() + seconds; now_s() < until;)
        for (int k = 0; k < 1000; k++) x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

static void *producer(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        work(0.004);
        atomic_fetch_add(&posted, 1);
        if (write(pipe_fds[1], "m", 1) != 1) abort();
    }
    close(pipe_fds[1]);
    return NULL;
}

static __attribute__((noinline)) void wait_blocking(int ep) {
    struct epoll_event out;
    char m;
    epoll_wait(ep, &out, 1, -1);
    if (read(pipe_fds[0], &m, 1) != 1) atomic_store(&stop, 1);
}

static __attribute__((noinline)) void wait_polling(int *seen) {
    struct pollfd idle = {.fd = idle_fds[0], .events = POLLIN};
    while (atomic_load(&posted) == *seen && !atomic_load(&stop)) poll(&idle, 1, 1);
    *seen += 1;
}

static void *consumer(void *arg) {
    int polling = arg != NULL, seen = 0;
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = pipe_fds[0]};
    epoll_ctl(ep, EPOLL_CTL_ADD, pipe_fds[0], &ev);
    while (!atomic_load(&stop)) {
        if (polling)
            wait_polling(&seen);
        else
            wait_blocking(ep);
        work(0.002);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "block") && strcmp(argv[1], "poll"))) {
        fprintf(stderr, "usage: eventwait block|poll [SECONDS]\n");
        return 2;
    }
    int seconds = argc > 2 ? atoi(argv[2]) : 3;
    if (pipe(pipe_fds) || pipe(idle_fds)) return 1;
    pthread_t p, c;
    pthread_create(&c, NULL, consumer, strcmp(argv[1], "poll") ? NULL : argv[1]);
    pthread_create(&p, NULL, producer, NULL);
    sleep(seconds);
    atomic_store(&stop, 1);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    puts("eventwait: done");
    return 0;
}

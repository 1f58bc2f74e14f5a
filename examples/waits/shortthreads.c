/* A thread per task: rounds of 3 threads, each living about a millisecond, that wait
 * on a condition variable for the main thread's input, then compute. Planted
 * problem: the threads are short-lived (a pool would keep them), and they wait
 * about half their life. Each times its own wait (born to woken) and its life (born
 * to done); the totals are printed:
 *     threads waited W ns of L ns
 * usage: shortthreads [ROUNDS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WORKERS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_set = PTHREAD_COND_INITIALIZER;
static unsigned long input;
static int ready;

struct worker {
    pthread_t thread;
    unsigned long seed;
    long waited, lived;
};

static long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) static unsigned long crunch(unsigned long h, int n) {
    for (int k = 0; k < n; k++) h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul + (unsigned long)k;
    return h;
}

static void *work(void *arg) {
    struct worker *w = arg;
    long born = now_ns();
    pthread_mutex_lock(&lock);
    while (!ready) pthread_cond_wait(&ready_set, &lock);
    unsigned long seed = input;
    pthread_mutex_unlock(&lock);
    long woken = now_ns();
    w->seed = crunch(seed + w->seed, 300000);
    w->waited = woken - born;
    w->lived = now_ns() - born;
    return NULL;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    long waited = 0, lived = 0;
    unsigned long sink = 0;
    for (int r = 0; r < rounds; r++) {
        struct worker workers[WORKERS];
        ready = 0;
        for (int i = 0; i < WORKERS; i++) {
            workers[i] = (struct worker){.seed = (unsigned long)i};
            pthread_create(&workers[i].thread, NULL, work, &workers[i]);
        }
        unsigned long value = crunch((unsigned long)r, 400000);
        pthread_mutex_lock(&lock);
        input = value;
        ready = 1;
        pthread_cond_broadcast(&ready_set);
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < WORKERS; i++) {
            pthread_join(workers[i].thread, NULL);
            waited += workers[i].waited;
            lived += workers[i].lived;
            sink ^= workers[i].seed;
        }
    }
    fprintf(stderr, "threads waited %ld ns of %ld ns (%lx)\n", waited, lived, sink & 1);
}

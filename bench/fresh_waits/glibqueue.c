/* GLib's own threads, queue and lock (Debian's libglib2.0, stripped): main pushes
 * jobs into a GAsyncQueue; 3 g_thread_new workers pop them (g_async_queue_pop, which
 * waits on GLib's futex-based GCond), digest each outside any lock, then fold the
 * digest into a shared table under a GMutex (GLib's futex-based lock, not a pthread
 * mutex). Each worker times its pop (`condvar`) and its g_mutex_lock (`mutex`); prints
 * their totals over the workers' lifetime.
 * usage: glibqueue JOBS THREADS */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static GAsyncQueue *jobs;
static GMutex table_lock, totals_lock;
static uint64_t table[4096];
static uint64_t popped_total, locked_total, lived_total;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t digest(uint64_t x, int rounds) {
    for (int k = 0; k < rounds; k++) x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + k;
    return x;
}

static __attribute__((noinline)) void fold(uint64_t d) {
    for (int k = 0; k < 64; k++) table[(d >> (k % 20)) & 4095] += digest(d + k, 40);
}

static gpointer worker(gpointer arg) {
    (void)arg;
    uint64_t born = now_ns(), popped = 0, locked = 0;
    for (;;) {
        uint64_t t0 = now_ns();
        uintptr_t job = (uintptr_t)g_async_queue_pop(jobs);
        uint64_t t1 = now_ns();
        popped += t1 - t0;
        if (job == 1) break;
        uint64_t d = digest(job, 6000);
        uint64_t t2 = now_ns();
        g_mutex_lock(&table_lock);
        locked += now_ns() - t2;
        fold(d);
        g_mutex_unlock(&table_lock);
    }
    uint64_t lived = now_ns() - born;
    g_mutex_lock(&totals_lock);
    popped_total += popped;
    locked_total += locked;
    lived_total += lived;
    g_mutex_unlock(&totals_lock);
    return NULL;
}

int main(int argc, char **argv) {
    int n_jobs = argc > 1 ? atoi(argv[1]) : 20000;
    int n = argc > 2 ? atoi(argv[2]) : 3;
    jobs = g_async_queue_new();
    GThread *threads[64];
    for (int i = 0; i < n; i++) threads[i] = g_thread_new("worker", worker, NULL);
    uint64_t seed = 12345;
    for (int j = 0; j < n_jobs; j++) {
        seed = digest(seed, 3000); /* the producer works too: the queue runs dry */
        g_async_queue_push(jobs, (gpointer)(uintptr_t)(seed | 2));
    }
    for (int i = 0; i < n; i++) g_async_queue_push(jobs, (gpointer)(uintptr_t)1);
    for (int i = 0; i < n; i++) g_thread_join(threads[i]);
    uint64_t sum = 0;
    for (int k = 0; k < 4096; k++) sum += table[k];
    printf("%llu\n", (unsigned long long)sum);
    fprintf(stderr, "waited lock %llu ns pop %llu ns of %llu ns\n",
            (unsigned long long)locked_total, (unsigned long long)popped_total,
            (unsigned long long)lived_total);
    return 0;
}

/* Benchmark workload for bench/perf_import.sh: several threads running a mix of
 * call paths (recursion of varying depth, a few leaf kernels, qsort callbacks,
 * some libc/malloc traffic) so the profile has many distinct stacks, like a
 * real program, not one hot loop. Build: cc -O2 -g -fno-omit-frame-pointer -pthread */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;
static double seconds = 10.0;

static inline __attribute__((always_inline)) uint64_t mix(uint64_t x) {
    x ^= x >> 31; x *= 0x7fb5d329728ea185ULL; x ^= x >> 27; return x;
}

__attribute__((noinline)) uint64_t leaf_hash(uint64_t n, uint64_t s) {
    for (uint64_t i = 0; i < n; i++) s = mix(s + i);
    return s;
}

__attribute__((noinline)) uint64_t leaf_mem(size_t n) {
    char *a = malloc(n), *b = malloc(n);
    memset(a, (int)n, n);
    memcpy(b, a, n);
    uint64_t s = (uint64_t)b[n / 2];
    free(a); free(b);
    return s;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

__attribute__((noinline)) uint64_t leaf_sort(uint64_t seed) {
    uint64_t v[512];
    for (int i = 0; i < 512; i++) v[i] = mix(seed + i);
    qsort(v, 512, sizeof v[0], cmp);
    return v[7];
}

__attribute__((noinline)) uint64_t walk(int depth, uint64_t s) {
    if (depth == 0) {
        switch (s % 3) {
        case 0: return leaf_hash(2000 + s % 500, s);
        case 1: return leaf_mem(4096 + s % 8192);
        default: return leaf_sort(s);
        }
    }
    if (s & 1) return walk(depth - 1, mix(s)) + 1;
    return walk(depth - 1, mix(s) >> 1) + 2;
}

__attribute__((noinline)) uint64_t branch_a(uint64_t s) { return walk((int)(s % 7), s); }
__attribute__((noinline)) uint64_t branch_b(uint64_t s) { return walk((int)(s % 11), s ^ 0x55); }
__attribute__((noinline)) uint64_t branch_c(uint64_t s) { return leaf_hash(5000, s) + branch_a(s >> 3); }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg) {
    uint64_t s = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL, acc = 0;
    double end = now() + seconds;
    while (now() < end) {
        for (int i = 0; i < 200; i++) {
            s = mix(s + i);
            switch (s % 3) {
            case 0: acc += branch_a(s); break;
            case 1: acc += branch_b(s); break;
            default: acc += branch_c(s); break;
            }
        }
    }
    sink += acc;
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) seconds = atof(argv[2]);
    pthread_t t[64];
    if (threads > 64) threads = 64;
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    printf("%llu\n", (unsigned long long)sink);
    return 0;
}

/* N threads write into one SQLite database through one shared connection
 * (SQLITE_OPEN_FULLMUTEX: SQLite's own pthread mutex serialises them), taking the
 * connection's mutex around each batch with sqlite3_mutex_enter(sqlite3_db_mutex()),
 * as SQLite's docs advise for a batch whose errors must stay its own. Each thread
 * hashes its rows outside the lock first. Prints the threads' time in
 * sqlite3_mutex_enter over their lifetime: the truth for `mutex`.
 * usage: sqlwriters BATCHES THREADS */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static sqlite3 *db;
static int batches;
static uint64_t waited_total, lived_total;
static pthread_mutex_t totals = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static __attribute__((noinline)) uint64_t hash_rows(uint64_t seed, uint64_t *rows, int n) {
    uint64_t h = seed;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 2000; k++) h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull + k;
        rows[i] = h;
    }
    return h;
}

static __attribute__((noinline)) void insert_batch(sqlite3_stmt *ins, const uint64_t *rows, int n) {
    sqlite3_exec(db, "BEGIN", 0, 0, 0);
    for (int i = 0; i < n; i++) {
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)rows[i]);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)(rows[i] >> 3));
        sqlite3_step(ins);
        sqlite3_reset(ins);
    }
    sqlite3_exec(db, "COMMIT", 0, 0, 0);
}

static void *writer(void *arg) {
    uint64_t born = now_ns(), waited = 0, rows[32];
    sqlite3_stmt *ins;
    sqlite3_prepare_v2(db, "INSERT INTO t(k, v) VALUES (?, ?)", -1, &ins, 0);
    sqlite3_mutex *m = sqlite3_db_mutex(db);
    uint64_t h = (uintptr_t)arg;
    for (int b = 0; b < batches; b++) {
        h = hash_rows(h, rows, 32);
        uint64_t t0 = now_ns();
        sqlite3_mutex_enter(m);
        waited += now_ns() - t0;
        insert_batch(ins, rows, 32);
        sqlite3_mutex_leave(m);
    }
    sqlite3_finalize(ins);
    uint64_t lived = now_ns() - born;
    pthread_mutex_lock(&totals);
    waited_total += waited;
    lived_total += lived;
    pthread_mutex_unlock(&totals);
    return 0;
}

int main(int argc, char **argv) {
    batches = argc > 1 ? atoi(argv[1]) : 2000;
    int n = argc > 2 ? atoi(argv[2]) : 4;
    char path[64];
    snprintf(path, sizeof path, "/tmp/sqlwriters.%d.db", (int)getpid());
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, 0))
        return 1;
    sqlite3_exec(db, "PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF;"
                     "CREATE TABLE t(k INTEGER, v INTEGER); CREATE INDEX tk ON t(k);", 0, 0, 0);
    pthread_t t[64];
    for (int i = 0; i < n; i++) pthread_create(&t[i], 0, writer, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < n; i++) pthread_join(t[i], 0);
    sqlite3_close(db);
    remove(path);
    fprintf(stderr, "threads waited %llu ns of %llu ns\n", (unsigned long long)waited_total,
            (unsigned long long)lived_total);
    return 0;
}

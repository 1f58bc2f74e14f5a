/* Two locks taken through one wrapper (locks.c, in the manner of pigz's yarn.c).
 * Planted problem: two pairs of threads contend, each pair on its own lock, both
 * through possess_(): `tally` threads on the counts lock, held while they add up a
 * block and wait for a device (a 0.2 ms sleep stands for it); `journal` threads on
 * the journal lock, held while they format lines and wait for the device too. The
 * main thread waits for them through wait_for_(). Each lock is a problem of its own,
 * to be named by the call in the program (tally(), journal()), not by possess_().
 * The threads need little CPU, so the waits are the program's critical path on a
 * 2-core machine.
 * usage: wrapped_locks [SECONDS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "locks.h"

static lock *counts_lock, *journal_lock, *done;
static volatile int stop;
static unsigned long counts[64];
static char journal_text[4096];

static void spin(unsigned long *into, int n) {
    for (int i = 0; i < n; i++) into[i & 63] += (unsigned long)i * 2654435761u;
}

static void *tally(void *arg) {
    unsigned long own[64] = {0};
    (void)arg;
    while (!stop) {
        spin(own, 5000);
        possess(counts_lock);
        spin(counts, 5000);
        usleep(200);
        release(counts_lock);
    }
    possess(done);
    twist(done, BY, 1);
    return NULL;
}

static void *journal(void *arg) {
    unsigned long own[64] = {0};
    long n = (long)arg;
    while (!stop) {
        spin(own, 5000);
        possess(journal_lock);
        for (int i = 0; i < 50; i++)
            snprintf(journal_text, sizeof journal_text, "%ld %d %lu", n++, i, own[i & 63]);
        usleep(200);
        release(journal_lock);
    }
    possess(done);
    twist(done, BY, 1);
    return NULL;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    pthread_t threads[4];
    counts_lock = new_lock(0);
    journal_lock = new_lock(0);
    done = new_lock(0);
    for (long i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, i % 2 ? journal : tally, (void *)i);
    struct timespec pause = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    nanosleep(&pause, NULL);
    stop = 1;
    possess(done);
    wait_for(done, TO_BE, 4);
    release(done);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    printf("%lu %s\n", counts[0], journal_text);
    return 0;
}

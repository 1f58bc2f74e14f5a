/* The wrappers of locks.h: each one call of pthreads, and a report if it fails. */
#include "locks.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct lock_s {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    long value;
};

static void fail(int err, char const *file, long line, char const *what) {
    fprintf(stderr, "%s failed: error %d (%s:%ld)\n", what, err, file, line);
    exit(err);
}

lock *new_lock_(long initial, char const *file, long line) {
    lock *bolt = malloc(sizeof *bolt);
    if (bolt == NULL) fail(ENOMEM, file, line, "malloc");
    pthread_mutex_init(&bolt->mutex, NULL);
    pthread_cond_init(&bolt->cond, NULL);
    bolt->value = initial;
    return bolt;
}

void possess_(lock *bolt, char const *file, long line) {
    int ret = pthread_mutex_lock(&bolt->mutex);
    if (ret) fail(ret, file, line, "mutex_lock");
}

void release_(lock *bolt, char const *file, long line) {
    int ret = pthread_mutex_unlock(&bolt->mutex);
    if (ret) fail(ret, file, line, "mutex_unlock");
}

void twist_(lock *bolt, enum twist_op op, long val, char const *file, long line) {
    if (op == TO)
        bolt->value = val;
    else
        bolt->value += val;
    int ret = pthread_cond_broadcast(&bolt->cond);
    if (ret) fail(ret, file, line, "cond_broadcast");
    ret = pthread_mutex_unlock(&bolt->mutex);
    if (ret) fail(ret, file, line, "mutex_unlock");
}

static int reached(long value, enum wait_op op, long val) {
    switch (op) {
        case TO_BE: return value == val;
        case NOT_TO_BE: return value != val;
        case TO_BE_MORE_THAN: return value > val;
        default: return value < val;
    }
}

void wait_for_(lock *bolt, enum wait_op op, long val, char const *file, long line) {
    while (!reached(bolt->value, op, val)) {
        int ret = pthread_cond_wait(&bolt->cond, &bolt->mutex);
        if (ret) fail(ret, file, line, "cond_wait");
    }
}

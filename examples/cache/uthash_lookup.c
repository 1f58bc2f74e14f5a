/* Lookups in a uthash table (a third-party hash table: Debian's uthash-dev) of
 * 112-byte entries, the size of the key, value and name below plus uthash's
 * 56-byte handle.
 *
 * What it is for: the cache cliffs of a table nobody on the team wrote. A lookup,
 * find_entry(), reads the table's head pointer, its `hh.tbl`, one bucket and the
 * handles of the chain (hh.hh_next, hh.hashv, hh.key, hh.keylen on the entry's
 * second cache line) and the key on the first line of the entry it stops at.
 *
 * usage: uthash_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        uthash_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uthash.h>

struct entry {
    int key;
    char value[20];
    char name[32];
    UT_hash_handle hh;
};

_Static_assert(sizeof(struct entry) == 112, "112-byte entries");

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

__attribute__((noinline)) struct entry *find_entry(struct entry *table, int key) {
    struct entry *found;
    HASH_FIND_INT(table, &key, found);
    return found;
}

/* The entries are one allocation, `*entries`, for the caller to free. */
static struct entry *fill(size_t n, struct entry **entries_out) {
    struct entry *table = NULL;
    struct entry *entries = calloc(n, sizeof *entries);
    if (!entries) {
        perror("calloc");
        exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        entries[i].key = (int)i;
        snprintf(entries[i].name, sizeof entries[i].name, "entry-%zu", i);
        HASH_ADD_INT(table, key, &entries[i]);
    }
    *entries_out = entries;
    return table;
}

/* Each key depends on the previous lookup's result: the loads cannot overlap, and
 * the time per lookup is a latency. */
static uint64_t lookups(struct entry *table, size_t n, size_t ops) {
    uint64_t check = 0, previous = 0;
    for (size_t i = 0; i < ops; i++) {
        struct entry *e = find_entry(table, (int)((next_random() ^ previous) % n));
        previous = (uint64_t)(e ? e->key & 1 : 0);
        check += previous;
    }
    return check;
}

#include "latency_sweep.h"

static uint64_t lookups_round(void *table, size_t ops) {
    return lookups(table, sweep_n, ops);
}

/* The entries a lookup of a random key passes, on average: the k-th of a chain is
 * found after passing k of them. */
static double chain_steps(struct entry *table, size_t n) {
    UT_hash_table *tbl = table->hh.tbl;
    double passed = 0;
    for (unsigned b = 0; b < tbl->num_buckets; b++) {
        double count = tbl->buckets[b].count;
        passed += count * (count + 1) / 2;
    }
    return passed / (double)n;
}

static double latency_ns(size_t n) {
    struct entry *entries;
    struct entry *table = fill(n, &entries);
    lookups(table, n, n < 1000000 ? 2 * n : n);
    sweep_n = n;
    sweep_work = chain_steps(table, n);
    double best = fastest_round(lookups_round, table);
    HASH_CLEAR(hh, table);
    free(entries);
    return best;
}

int main(int argc, char **argv) {
    if (latency_sweep(argc, argv, "struct entry", sizeof(struct entry), "lookup", latency_ns))
        return 0;
    size_t ops;
    size_t n = plain_run(argc, argv, "entries", &ops);
    struct entry *entries;
    struct entry *table = fill(n, &entries);
    uint64_t check = lookups(table, n, ops);
    printf("%zu entries, %zu lookups, checksum %llu\n", n, ops, (unsigned long long)check);
    HASH_CLEAR(hh, table);
    free(entries);
    return 0;
}

/* Lookups in a GLib GHashTable (Debian's libglib2.0-dev) of string keys, as an
 * interpreter looks a string up in its table: the key an operation looks up is an
 * interned string the caller holds in an array of its own (Lua's `t[keys[i]]`).
 *
 * What it is for: the cache cliffs of a second third-party table, whose lookup,
 * find_value(), hashes the key string, then reads the table's hashes[], keys[] and
 * values[] arrays (open addressing, their sizes powers of two) and compares the
 * stored key (the same string). The caller's array of keys (8 bytes per key) is read
 * outside find_value(): a working set the traced function does not see.
 *
 * usage: ghash_lookup N [OPS]          N keys, OPS random lookups (default 4*N)
 *        ghash_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

__attribute__((noinline)) gpointer find_value(GHashTable *table, const char *key) {
    return g_hash_table_lookup(table, key);
}

struct keyed {
    GHashTable *table;
    char **keys;
};

static struct keyed fill(size_t n) {
    struct keyed k = {g_hash_table_new(g_str_hash, g_str_equal), g_new(char *, n)};
    for (size_t i = 0; i < n; i++) {
        k.keys[i] = g_strdup_printf("key-%zu", i);
        g_hash_table_insert(k.table, k.keys[i], GSIZE_TO_POINTER(i + 1));
    }
    return k;
}

/* Each key depends on the previous lookup's result: the loads cannot overlap. */
static uint64_t lookups(struct keyed *k, size_t n, size_t ops) {
    uint64_t check = 0, previous = 0;
    for (size_t i = 0; i < ops; i++) {
        gsize value = GPOINTER_TO_SIZE(find_value(k->table, k->keys[(next_random() ^ previous) % n]));
        previous = value & 1;
        check += previous;
    }
    return check;
}

static void release(struct keyed *k, size_t n) {
    g_hash_table_destroy(k->table);
    for (size_t i = 0; i < n; i++)
        g_free(k->keys[i]);
    g_free(k->keys);
}

#include "latency_sweep.h"

static uint64_t lookups_round(void *k, size_t ops) {
    return lookups(k, sweep_n, ops);
}

static double latency_ns(size_t n) {
    struct keyed k = fill(n);
    lookups(&k, n, n < 1000000 ? 2 * n : n);
    sweep_n = n;
    double best = fastest_round(lookups_round, &k);
    release(&k, n);
    return best;
}

int main(int argc, char **argv) {
    if (latency_sweep(argc, argv, "char *", sizeof(char *), "lookup", latency_ns))
        return 0;
    size_t ops;
    size_t n = plain_run(argc, argv, "keys", &ops);
    struct keyed k = fill(n);
    uint64_t check = lookups(&k, n, ops);
    printf("%zu keys, %zu lookups, checksum %llu\n", n, ops, (unsigned long long)check);
    release(&k, n);
    return 0;
}

/* Lookups in an stb_ds hash map (Debian's libstb-dev, stb_ds.h) of uint64 keys to
 * 64-byte records: a third-party table whose lookup hands the map to a callee.
 *
 * What it is for: find_item(map, key) passes `map` to stbds_hmget_key_ts, which
 * reads its hash index's header (at displacements 8 to 104 from it) and a bucket,
 * and compares the key of the item it finds; find_item then counts a hit in that
 * item (`found`) through a local pointer. No access goes through `map` itself, so
 * `map` has no layout of its own; the 72-byte items of the map's array start at
 * every eighth byte of a line, so the bytes a lookup touches, all on the struct's
 * line 0, cross a line boundary in 7 of 8 items.
 *
 * usage: stbds_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        stbds_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define STB_DS_IMPLEMENTATION
#include <stb_ds.h>

struct record {
    uint64_t hits;
    uint64_t created_ns;
    char name[32];
    uint64_t last_seen;
    uint64_t flags;
};

typedef struct {
    uint64_t key;
    struct record value;
} item;

_Static_assert(sizeof(item) == 72, "72-byte items");

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

__attribute__((noinline)) struct record *find_item(item *map, uint64_t key) {
    item *found = hmgetp_null(map, key);
    if (!found)
        return NULL;
    found->value.hits++;
    found->value.last_seen = key;
    return &found->value;
}

static uint64_t key_of(size_t i) { return (uint64_t)i * 2654435761u; }

static item *fill(size_t n) {
    item *map = NULL;
    for (size_t i = 0; i < n; i++) {
        struct record r = {0};
        snprintf(r.name, sizeof r.name, "rec-%zu", i);
        hmput(map, key_of(i), r);
    }
    return map;
}

/* Each key depends on the previous lookup's result: the loads cannot overlap, and
 * the time per lookup is a latency. */
static uint64_t lookups(item *map, size_t n, size_t ops) {
    uint64_t check = 0, previous = 0;
    for (size_t i = 0; i < ops; i++) {
        struct record *r = find_item(map, key_of((next_random() ^ previous) % n));
        previous = r ? r->hits & 1 : 0;
        check += previous;
    }
    return check;
}

#include "latency_sweep.h"

static uint64_t lookups_round(void *map, size_t ops) { return lookups(map, sweep_n, ops); }

/* The hash slots a lookup of a random key compares, on average, as
 * stbds_hm_find_slot walks them (quadratic probing over buckets of 8): fewer right
 * after the index doubles, more as it fills. */
static double probe_slots(item *map, size_t n) {
    stbds_hash_index *table = stbds_hash_table(STBDS_HASH_TO_ARR(map, sizeof *map));
    double compared = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t key = key_of(k);
        size_t hash = stbds_hash_bytes(&key, sizeof key, table->seed);
        hash += hash < 2 ? 2 : 0;
        size_t pos = stbds_probe_position(hash, table->slot_count, table->slot_count_log2);
        for (size_t step = STBDS_BUCKET_LENGTH;; pos = (pos + step) & (table->slot_count - 1),
                    step += STBDS_BUCKET_LENGTH) {
            stbds_hash_bucket *bucket = &table->storage[pos >> STBDS_BUCKET_SHIFT];
            size_t slot = 0, first = pos & STBDS_BUCKET_MASK;
            for (; slot < STBDS_BUCKET_LENGTH; slot++) {
                size_t i = (first + slot) & STBDS_BUCKET_MASK;
                if (bucket->hash[i] == hash && map[bucket->index[i]].key == key)
                    break;
            }
            compared += (double)(slot < STBDS_BUCKET_LENGTH ? slot + 1 : slot);
            if (slot < STBDS_BUCKET_LENGTH)
                break;
        }
    }
    return compared / (double)n;
}

static double latency_ns(size_t n) {
    item *map = fill(n);
    lookups(map, n, n < 1000000 ? 2 * n : n);
    sweep_n = n;
    sweep_work = probe_slots(map, n);
    double best = fastest_round(lookups_round, map);
    hmfree(map);
    return best;
}

int main(int argc, char **argv) {
    if (latency_sweep(argc, argv, "item", sizeof(item), "lookup", latency_ns))
        return 0;
    size_t ops;
    size_t n = plain_run(argc, argv, "entries", &ops);
    item *map = fill(n);
    uint64_t check = lookups(map, n, ops);
    printf("%zu entries, %zu lookups, checksum %llu\n", n, ops, (unsigned long long)check);
    hmfree(map);
    return 0;
}

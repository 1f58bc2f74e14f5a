/* Lookups in a Verstable hash table (JacksonAllan/Verstable, verstable.h; in no Debian
 * package: bench/cache_cliff.py builds this when given `--verstable DIR`, the
 * checkout holding verstable.h) of uint64 keys to 64-byte records: a third-party
 * open-addressing table whose buckets array doubles at its 0.9 maximum load.
 *
 * usage: verstable_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        verstable_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct record {
    uint64_t hits;
    uint64_t created_ns;
    char name[32];
    uint64_t last_seen;
    uint64_t flags;
};

#define NAME rec_map
#define KEY_TY uint64_t
#define VAL_TY struct record
#include "verstable.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

__attribute__((noinline)) struct record *find_record(rec_map *map, uint64_t key) {
    rec_map_itr itr = rec_map_get(map, key);
    if (rec_map_is_end(itr))
        return NULL;
    itr.data->val.hits++;
    itr.data->val.last_seen = key;
    return &itr.data->val;
}

static uint64_t key_of(size_t i) { return (uint64_t)i * 2654435761u; }

static rec_map *fill(size_t n) {
    rec_map *map = malloc(sizeof *map);
    rec_map_init(map);
    for (size_t i = 0; i < n; i++) {
        struct record r = {0};
        snprintf(r.name, sizeof r.name, "rec-%zu", i);
        if (rec_map_is_end(rec_map_insert(map, key_of(i), r))) {
            fprintf(stderr, "out of memory at %zu entries\n", i);
            exit(1);
        }
    }
    return map;
}

/* Each key depends on the previous lookup's result: the loads cannot overlap, and
 * the time per lookup is a latency. */
static uint64_t lookups(rec_map *map, size_t n, size_t ops) {
    uint64_t check = 0, previous = 0;
    for (size_t i = 0; i < ops; i++) {
        struct record *r = find_record(map, key_of((next_random() ^ previous) % n));
        previous = r ? r->hits & 1 : 0;
        check += previous;
    }
    return check;
}

static void drop(rec_map *map) {
    rec_map_cleanup(map);
    free(map);
}

#include "latency_sweep.h"

static uint64_t lookups_round(void *map, size_t ops) { return lookups(map, sweep_n, ops); }

static double latency_ns(size_t n) {
    rec_map *map = fill(n);
    lookups(map, n, n < 1000000 ? 2 * n : n);
    sweep_n = n;
    double best = fastest_round(lookups_round, map);
    drop(map);
    return best;
}

int main(int argc, char **argv) {
    if (latency_sweep(argc, argv, "bucket", sizeof(rec_map_bucket), "lookup", latency_ns))
        return 0;
    size_t ops;
    size_t n = plain_run(argc, argv, "entries", &ops);
    rec_map *map = fill(n);
    uint64_t check = lookups(map, n, ops);
    printf("%zu entries, %zu lookups, checksum %llu\n", n, ops, (unsigned long long)check);
    drop(map);
    return 0;
}

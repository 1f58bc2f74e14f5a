/* The harness the C++ map examples share (sparsehash_lookup.cc, abseil_lookup.cc):
 * FILL(n) builds a map of n entries keyed key_of(0..n-1) (fill_sessions: of sessions
 * with a peer's address), FIND(map, key) is the
 * traced lookup, returning the entry or null. A chain of lookups, each key picked
 * with the result of the last (so the loads cannot overlap), timed by
 * latency_sweep.h's rounds for `--sweep`, or run once for `N [OPS]`. */
#ifndef MAP_HARNESS_HH
#define MAP_HARNESS_HH

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "page_sizes.hh"

extern "C" {
#include "latency_sweep.h"
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t next_random(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t key_of(size_t i) { return (uint64_t)i * 2654435761u; }

/* A found entry's VALUE, counted and stamped with its KEY: a lookup's two writes. */
template <class Value>
static inline Value *counted(Value &value, uint64_t key) {
    value.hits++;
    value.last_seen = key;
    return &value;
}

/* A map of n sessions keyed key_of(0..n-1), each with its peer's address written out. */
template <class Map>
static Map *fill_sessions(size_t n) {
    Map *map = new Map;
    for (size_t i = 0; i < n; i++) {
        typename Map::mapped_type s{};
        snprintf(s.peer, sizeof s.peer, "10.%zu.%zu.%zu", i >> 16 & 255, i >> 8 & 255, i & 255);
        (*map)[key_of(i)] = s;
    }
    return map;
}

template <class Map, auto Find>
static uint64_t lookups(Map *map, size_t n, size_t ops) {
    uint64_t check = 0, previous = 0;
    for (size_t i = 0; i < ops; i++) {
        auto *entry = Find(map, key_of((next_random() ^ previous) % n));
        previous = entry ? entry->hits & 1 : 0;
        check += previous;
    }
    return check;
}

template <class Map, auto Find>
static uint64_t lookups_round(void *map, size_t ops) {
    return lookups<Map, Find>((Map *)map, sweep_n, ops);
}

template <class Map, auto Find, auto Fill, auto Work>
static double latency_ns(size_t n) {
    Map *map = Fill(n);
    lookups<Map, Find>(map, n, n < 1000000 ? 2 * n : n);
    sweep_n = n;
    if constexpr (Work != nullptr)
        sweep_work = Work(map);
    double best = fastest_round(lookups_round<Map, Find>, map);
    delete map;
    return best;
}

/* ns per lookup of the map on 2 MiB and on 4 KiB pages at n entries (page_sizes.hh): the
 * fastest of TLB_ROUNDS rounds of each, the two taking turns, each round after lookups that
 * refill the TLB (the other map's round emptied it); and the median of the rounds'
 * differences, each pair a few ms apart. Prints the kB of each map's arena resident and on
 * huge pages.
 *
 * The refill is TLB_REFILL_PER_PAGE lookups per page of the map's arena (at least
 * TLB_REFILL): a page a lookup reaches with chance 1/P is then left out with chance
 * e^-4, 2%. With a fixed 3,000 a map of 2,000 pages (unordered_dense at ~90,000 entries)
 * had 15% of its pages left out, each a walk in the timed round: the difference could
 * rise there, ~1,000 pages before the TLB's reach, where the knees came (not confirmed
 * on the maps: four sweeps at load 8-12 after the change gave no repeatable knee). On the
 * AMD EPYC KVM guest the other map's round evicts the 4 KiB map's translations though its
 * own memory is on 2 MiB pages (why is not established): a bare chase of P pages on 4 KiB
 * pages cost 1.4 and 2.5 ns a load more than on 2 MiB pages at 1,448 and 2,048 pages in
 * turns of 4,000 loads after 2,000 of refill, 0.0 and 0.0 in turns of 40,000 after
 * 20,000, and alone in rounds of 4,000 the same as in turns of 40,000. */
#define TLB_ROUNDS 40
#define TLB_ROUND_OPS 5000
#define TLB_REFILL 3000
#define TLB_REFILL_PER_PAGE 4
template <class Map, auto Find, auto Fill>
static void tlb_latency(size_t n) {
    open_arena = &huge_arena;
    Map *huge = Fill(n);
    open_arena = &small_arena;
    Map *small = Fill(n);
    open_arena = nullptr;
    Map *maps[2] = {huge, small};
    size_t pages = (size_t)(small_arena.next - small_arena.base) / 4096;
    size_t refill = std::max((size_t)TLB_REFILL, TLB_REFILL_PER_PAGE * pages);
    double best[2] = {1e30, 1e30};
    std::vector<double> differences;
    for (Map *map : maps)
        lookups<Map, Find>(map, n, n < 1000000 ? 2 * n : n);
    for (int round = 0; round < TLB_ROUNDS; round++) {
        double took[2];
        for (int i = 0; i < 2; i++) {
            lookups<Map, Find>(maps[i], n, refill);
            double start = now_ns();
            if (lookups<Map, Find>(maps[i], n, TLB_ROUND_OPS) == 42)
                puts("");
            took[i] = (now_ns() - start) / TLB_ROUND_OPS;
            best[i] = std::min(best[i], took[i]);
        }
        differences.push_back(took[1] - took[0]);
    }
    std::sort(differences.begin(), differences.end());
    long resident[2], on_huge[2];
    arena_pages(huge_arena, &resident[0], &on_huge[0]);
    arena_pages(small_arena, &resident[1], &on_huge[1]);
    printf("%zu %.2f %.2f %.2f %ld %ld %ld %ld\n", n, best[0], best[1],
           differences[differences.size() / 2], resident[0], on_huge[0], resident[1], on_huge[1]);
    fflush(stdout);
    arena_empty(huge_arena);
    arena_empty(small_arena);
}

/* With `--tlb-sweep N1,N2,...`: tlb_latency's line for each N, and 1; else 0. */
template <class Map, auto Find, auto Fill>
static int tlb_sweep(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[1], "--tlb-sweep") != 0)
        return 0;
    arena_reserve(huge_arena, true);
    arena_reserve(small_arena, false);
    printf("# n ns_2mib ns_4kib median_difference kb_2mib huge_kb_2mib kb_4kib huge_kb_4kib\n");
    for (char *item = strtok(argv[2], ","); item; item = strtok(NULL, ","))
        tlb_latency<Map, Find, Fill>((size_t)atol(item));
    return 1;
}

/* main(): the sweep, or N [OPS] entries and lookups, said with the map's buckets. WORK,
 * when given, is the buckets a lookup reads on average (the sweep's third column). */
template <class Map, auto Find, auto Fill, auto Work = nullptr>
static int map_main(int argc, char **argv) {
    if (latency_sweep(argc, argv, "pair", sizeof(typename Map::value_type), "lookup",
                      latency_ns<Map, Find, Fill, Work>) ||
        tlb_sweep<Map, Find, Fill>(argc, argv))
        return 0;
    size_t ops;
    size_t n = plain_run(argc, argv, "entries", &ops);
    Map *map = Fill(n);
    uint64_t check = lookups<Map, Find>(map, n, ops);
    printf("%zu entries, %zu buckets, %zu lookups, checksum %llu\n", n, map->bucket_count(), ops,
           (unsigned long long)check);
    delete map;
    return 0;
}

#endif

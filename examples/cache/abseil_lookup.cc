/* Lookups in an abseil flat_hash_map<uint64_t, Session> (Debian's libabsl-dev
 * 20220623, a SwissTable): open addressing over groups of 16 one-byte control
 * words, the 72-byte pair<const uint64_t, Session> in a slot array of its own
 * (2^k - 1 slots, at most 7/8 full: the table doubles as it fills), the control
 * bytes in an array before it.
 *
 * What it is for: cache mode on a third-party C++ table the team had not traced
 * (issue 29's fourth replay). find_session() has find() inlined into it and reads,
 * through `map`, only ctrl_, slots_ and capacity_ (size_ and growth_left are not
 * read by a lookup); then 16 control bytes at the probe's start (an unaligned SSE2
 * load, which crosses a cache line for 15 of 64 starts), the key of each slot whose
 * control byte matches the hash's low 7 bits, and the found slot's hits and
 * last_seen. The hash of a uint64_t is absl's MixingHashState (a 128-bit multiply
 * by a seed, the address of absl's kSeed, read from the GOT).
 *
 * usage: abseil_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        abseil_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <absl/container/flat_hash_map.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct Session {
    uint32_t hits;
    uint32_t flags;
    uint64_t last_seen;
    uint64_t bytes_in;
    uint64_t bytes_out;
    char peer[32];
};
static_assert(sizeof(Session) == 64, "64-byte sessions, 72-byte slots");
using Map = absl::flat_hash_map<uint64_t, Session>;

#include "map_harness.hh"

__attribute__((noinline)) Session *find_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it->second, key);
}

int main(int argc, char **argv) { return map_main<Map, find_session, fill_sessions<Map>>(argc, argv); }

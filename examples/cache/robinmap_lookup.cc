/* Lookups in a tsl::robin_map<uint64_t, Session> (Debian's robin-map-dev 1.2.1,
 * header-only): open addressing with Robin Hood hashing, each bucket an 80-byte
 * bucket_entry (int16 distance from its ideal bucket, a last-bucket flag, then the
 * 72-byte pair<const uint64_t, Session> at offset 8) in one array of 2^k buckets at
 * most half full (the array doubles as it fills).
 *
 * What it is for: cache mode on a third-party C++ table the team had not traced
 * (issue 29's ninth replay). find_session() has find() inlined into it and reads,
 * through `map`, the mask, the bucket array's pointer and (to compare with end())
 * the bucket count; then the bucket's distance and key, and of the value last_seen
 * and hits (bytes 0 to 28 of the bucket; flags, peer, bytes_in and bytes_out are
 * cold). std::hash<uint64_t> is the identity, and the keys i * 2654435761 (an odd multiplier) fall in distinct buckets of any
 * power-of-two table: one probe a lookup at every size.
 *
 * usage: robinmap_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        robinmap_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <tsl/robin_map.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

struct Session {
    uint64_t last_seen;
    uint32_t hits;
    uint32_t flags;
    char peer[32];
    uint64_t bytes_in;
    uint64_t bytes_out;
};
static_assert(sizeof(Session) == 64, "64-byte sessions, 80-byte buckets");
using Map = tsl::robin_map<uint64_t, Session>;

#include "map_harness.hh"

__attribute__((noinline)) Session *find_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it.value(), key);
}

int main(int argc, char **argv) { return map_main<Map, find_session, fill_sessions<Map>>(argc, argv); }

/* Lookups in a tsl::hopscotch_map<uint64_t, Session> (Debian's libtsl-hopscotch-map-dev
 * 2.3, header-only): open addressing with hopscotch hashing, each bucket an 80-byte
 * hopscotch_bucket (a 64-bit neighbourhood bitmap: two flag bits, then which of the
 * 62 buckets from this one hold keys hashed here, then the 72-byte
 * pair<const uint64_t, Session> at offset 8) in one array of 2^k buckets at most 0.9
 * full (the array doubles as it fills), a std::list for what overflows a neighbourhood.
 *
 * What it is for: cache mode on a third-party C++ table the team had not traced
 * (issue 29's eleventh replay). find_session() has find() inlined into it and reads,
 * through `map`, the mask and the bucket array's pointer; then the home bucket's
 * bitmap, the key of each bucket its bits name, and of the found pair last_seen and
 * hits (bytes 0 to 28 of the bucket; flags, bytes_in, bytes_out and peer are cold).
 * std::hash<uint64_t> is the identity, and the keys i * 2654435761 (an odd multiplier)
 * fall in distinct buckets of any power-of-two table: one bucket a lookup.
 *
 * usage: hopscotch_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        hopscotch_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <tsl/hopscotch_map.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "session64.hh"
using Map = tsl::hopscotch_map<uint64_t, Session>;

#include "map_harness.hh"

__attribute__((noinline)) Session *find_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it.value(), key);
}

int main(int argc, char **argv) { return map_main<Map, find_session, fill_sessions<Map>>(argc, argv); }

/* Lookups in a boost::unordered_flat_map<uint64_t, Session> (Boost 1.81, Debian's
 * libboost1.81-dev, header-only): open addressing over groups of 15 slots, each
 * group's 16-byte metadata (15 reduced hashes and an overflow byte) in one array
 * and the 72-byte pair<const uint64_t, Session> in a slot array of its own (15 per
 * group, at most 7/8 full: the table doubles as it fills).
 *
 * What it is for: cache mode on a third-party C++ table the team had not traced
 * (issue 29's tenth replay). find_session() has find() inlined into it and reads,
 * through `map`, the groups' size index, the group array's and the slot array's
 * pointers (size and the load limit are not read by a lookup); then the probed
 * group's 16 metadata bytes (an aligned SSE2 load), the key of each slot whose
 * reduced hash matches, and of the found pair last_seen and hits (bytes 0 to 20 of
 * the pair; flags, bytes_in, bytes_out and peer are cold). boost::hash<uint64_t> is
 * the identity, not avalanching, so the table mixes it (a 128-bit multiply).
 *
 * usage: boostflat_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        boostflat_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "session64.hh"
using Map = boost::unordered_flat_map<uint64_t, Session>;

#include "map_harness.hh"

__attribute__((noinline)) Session *find_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it->second, key);
}

int main(int argc, char **argv) { return map_main<Map, find_session, fill_sessions<Map>>(argc, argv); }

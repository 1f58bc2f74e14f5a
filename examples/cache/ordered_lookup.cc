/* Lookups in a tsl::ordered_map<uint64_t, Session> (Debian's libtsl-ordered-map-dev 1.0,
 * header-only) whose pairs are kept in a std::vector: Robin Hood open addressing over an
 * array of 8-byte bucket_entry (a 32-bit index, a 32-bit truncated hash) whose index
 * names a pair in a second array, the dense std::vector<std::pair<uint64_t, Session>> of
 * 72-byte pairs in insertion order (the map's values container, a std::deque unless one
 * is given), the shape of ankerl::unordered_dense, which no Debian package ships. At
 * most 0.75 full, the buckets doubling as it fills.
 *
 * What it is for: the pairs a bucket indexes in a vector member, laid out by cache mode
 * on a table CI can install (issue 29's thirteenth replay). find_session() has find()
 * inlined into it and reads, through `map`, the buckets' pointer and the mask, and the
 * values' data pointer five members and base classes down the map (m_ht, m_values,
 * _Vector_base, _M_impl, _Vector_impl_data); then the home bucket's 8 bytes, and of the
 * pair its index names the key, last_seen and hits (bytes 0 to 20; flags, bytes_in,
 * bytes_out and peer are cold). std::hash<uint64_t> is the identity, and the keys
 * i * 2654435761 (an odd multiplier) fall in distinct buckets of any power-of-two table:
 * one bucket a lookup.
 *
 * usage: ordered_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        ordered_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <tsl/ordered_map.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "session64.hh"
using Pair = std::pair<uint64_t, Session>;
using Map = tsl::ordered_map<uint64_t, Session, std::hash<uint64_t>, std::equal_to<uint64_t>,
                             std::allocator<Pair>, std::vector<Pair>>;

#include "map_harness.hh"

__attribute__((noinline)) Session *find_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it.value(), key);
}

int main(int argc, char **argv) { return map_main<Map, find_session, fill_sessions<Map>>(argc, argv); }

/* Lookups in an ankerl::unordered_dense::map<uint64_t, Session> (martinus/unordered_dense
 * 4.9.2, one MIT-licensed header, in no Debian package: built where the header is, see
 * examples/Makefile): Robin Hood open addressing over an array of 8-byte buckets (a
 * 32-bit distance-and-fingerprint, a 32-bit index) whose index points into a second,
 * dense std::vector of the 72-byte pair<uint64_t, Session>, in insertion order, no
 * holes. At most 0.8 full, the buckets doubling as it fills; the key's hash is wyhash's
 * mix, so the keys fall at random buckets (no lattice, unlike an identity hash).
 *
 * What it is for: cache mode on a third-party C++ table the team had not traced
 * (issue 29's twelfth replay). find_session() has find() inlined into it and reads,
 * through `map`, the buckets' and the values' pointers and the shift; then the home
 * bucket's 8 bytes (and its neighbours' while the distance says so), of the pair the
 * index names its key, and writes last_seen and hits (bytes 0 to 20 of the pair;
 * flags, bytes_in, bytes_out and peer are cold).
 *
 * usage: dense_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        dense_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <ankerl/unordered_dense.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "session64.hh"
using Map = ankerl::unordered_dense::map<uint64_t, Session>;

#include "map_harness.hh"

__attribute__((noinline)) Session *find_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it->second, key);
}

int main(int argc, char **argv) { return map_main<Map, find_session, fill_sessions<Map>>(argc, argv); }

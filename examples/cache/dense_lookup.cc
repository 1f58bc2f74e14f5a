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

/* The buckets a lookup of a random key reads, on average: 1 + the mean distance of a key
 * from its home bucket (its hash, wyhash's mix of a uint64_t, >> shifts). With linear
 * probing the buckets taken are the same whatever the order of insertion, so the
 * distances' sum follows from the homes alone: walk the buckets, carrying the keys still
 * to place, round again with the keys that wrapped past the last bucket until they are
 * the same. They lengthen as the table fills and drop when the buckets double (0.4 to
 * 0.8 full), a saw in the latency: the keys key_of(i), mixed, leave a table of 1,024
 * buckets without a collision up to about 620 entries, then 1.08 to 1.26 buckets a
 * lookup up to 802, where the L1d overflows from 401 on. */
static double probes(Map *map) {
    size_t buckets = map->bucket_count(), shifts = 64 - __builtin_ctzll(buckets);
    std::vector<uint32_t> homes(buckets);
    for (auto const &pair : map->values())
        homes[map->hash_function()(pair.first) >> shifts]++;
    size_t wrapped = 0, waiting = 0, distances = 0;
    do {
        wrapped = waiting, waiting = wrapped, distances = 0;
        for (size_t i = 0; i < buckets; i++) {
            waiting += homes[i];
            waiting -= waiting > 0;
            distances += waiting;
        }
    } while (waiting != wrapped);
    return 1.0 + (double)distances / (double)map->size();
}

int main(int argc, char **argv) {
    return map_main<Map, find_session, fill_sessions<Map>, probes>(argc, argv);
}

/* Lookups in a C++ std::unordered_map<uint64_t, Session> (libstdc++: a node per
 * entry, the 8-byte _M_nxt then the pair<const uint64_t, Session> in raw storage,
 * 96-byte nodes (a 112-byte malloc chunk each); an 8-byte bucket pointer per bucket,
 * a prime number of buckets, at most one entry a bucket on average).
 *
 * What it is for: cache mode on a node-based C++ table (issue 29's ninth replay, as
 * a bench program). lookup_session() (the table's find inlined into it) reads the
 * bucket's pointer, which points to the node *before* the bucket's first (libstdc++'s
 * singly linked list), that node's _M_nxt, then the node's key (pair.first), and of
 * its value hits and last_seen: a pointer chase of two nodes a lookup. peer,
 * bytes_in, bytes_out and flags are cold; last_seen lies 72 bytes past hits, so a
 * lookup's hot bytes span two lines of most nodes. std::hash<uint64_t> is the
 * identity; the bucket is key % bucket_count (a division).
 *
 * usage: unordered_map_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        unordered_map_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

struct Session {
    uint32_t hits;
    uint32_t flags;
    char peer[48];
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint64_t last_seen;
};
static_assert(sizeof(Session) == 80, "80-byte sessions, 96-byte nodes");
using Map = std::unordered_map<uint64_t, Session>;

#include "map_harness.hh"

__attribute__((noinline)) Session *lookup_session(Map *map, uint64_t key) {
    auto it = map->find(key);
    return it == map->end() ? nullptr : counted(it->second, key);
}

int main(int argc, char **argv) { return map_main<Map, lookup_session, fill_sessions<Map>>(argc, argv); }

/* Lookups in a Google sparsehash dense_hash_map<uint64_t, Record> (Debian's
 * libsparsehash-dev): open addressing with quadratic probing, the 48-byte
 * pair<const uint64_t, Record> in one array of 2^k buckets, at most half full (the
 * buckets double as it fills: 2 to 4 buckets an entry).
 *
 * What it is for: cache mode on a third-party C++ table the team had not traced
 * (issue 29's replay). find_record() has find() inlined into it and reads, through
 * `map`, rep.num_deleted, rep.num_elements, rep.num_buckets, rep.table,
 * rep.val_info.emptyval.first (the empty key) and the flags settings.use_empty_ and
 * settings.use_deleted_ that `settings` inherits from its base class (the asserts
 * of a build without NDEBUG read use_empty_); then the bucket's key, hits and
 * last_seen. libstdc++'s std::hash<uint64_t> is the identity, and the keys
 * i * 2654435761 (an odd multiplier) fall in distinct buckets of any power-of-two
 * table: one probe a lookup at every size, so the sweep needs no work column.
 *
 * usage: sparsehash_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        sparsehash_lookup --sweep N1,N2,.. ns per lookup for each N, one line each
 */
#include <sparsehash/dense_hash_map>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct Record {
    uint32_t hits;
    uint32_t flags;
    uint64_t last_seen;
    char name[24];
};
static_assert(sizeof(Record) == 40, "40-byte records");
using Map = google::dense_hash_map<uint64_t, Record>;

#include "map_harness.hh"

__attribute__((noinline)) Record *find_record(Map *map, uint64_t key) {
    Map::iterator it = map->find(key);
    return it == map->end() ? nullptr : counted(it->second, key);
}

static Map *fill(size_t n) {
    Map *map = new Map;
    map->set_empty_key(~0ull);
    for (size_t i = 0; i < n; i++) {
        Record r{};
        snprintf(r.name, sizeof r.name, "rec-%zu", i);
        (*map)[key_of(i)] = r;
    }
    return map;
}

int main(int argc, char **argv) { return map_main<Map, find_record, fill>(argc, argv); }

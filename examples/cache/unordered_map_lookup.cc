/* Lookups in a C++ std::unordered_map<uint64_t, Session> (libstdc++: a node per
 * entry, 8-byte _M_nxt then the pair<const uint64_t, Session> in raw storage; 120-byte
 * nodes, an 8-byte bucket pointer each).
 *
 * What it is for: cache mode on a node-based C++ table. lookup_session() (the table's
 * find inlined into it) reads the bucket, the node's key (pair.first) and two of the
 * value's fields, flags and bytes; id, name, created, last_seen and pad are cold.
 *
 * usage: unordered_map_lookup N [OPS]          N entries, OPS random lookups (default 4*N)
 *        unordered_map_lookup --sweep N1,N2,.. best ns per lookup for each N, one line each
 */
#include <string>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <chrono>
struct Session {
    uint32_t id;
    uint32_t flags;
    char name[64];
    uint64_t bytes;
    uint64_t created;
    uint64_t last_seen;
    uint32_t pad;
};
static_assert(sizeof(Session) >= 96, "~100 bytes");
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t nxt() { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
using Map = std::unordered_map<uint64_t, Session>;
__attribute__((noinline)) uint64_t lookup_session(const Map &m, uint64_t key) {
    auto it = m.find(key);
    if (it == m.end()) return 0;
    return it->second.bytes + it->second.flags;
}
int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: unordered_map_lookup N [OPS] | --sweep N1,..\n"); return 2; }
    if (std::string(argv[1]) == "--sweep") {
        char *s = argv[2];
        for (char *t = strtok(s, ","); t; t = strtok(nullptr, ",")) {
            size_t n = atol(t); Map m; m.reserve(n);
            for (size_t i = 0; i < n; i++) { Session v{}; v.id = i; v.bytes = i; m.emplace(i * 2654435761u, v); }
            double best = 1e30; uint64_t prev = 0, chk = 0;
            for (int r = 0; r < 10; r++) {
                auto a = std::chrono::steady_clock::now();
                for (int k = 0; k < 20000; k++) { prev = lookup_session(m, ((nxt() ^ (prev & 1)) % n) * 2654435761u); chk += prev; }
                double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - a).count() / 20000;
                if (ns < best) best = ns;
            }
            printf("%zu %.2f\n", n, best); if (chk == 42) puts("");
        }
        return 0;
    }
    size_t n = atol(argv[1]); size_t ops = argc > 2 ? atol(argv[2]) : 4 * n;
    Map m;
    for (size_t i = 0; i < n; i++) { Session v{}; v.id = i; v.bytes = i; m.emplace(i * 2654435761u, v); }
    uint64_t chk = 0, prev = 0;
    for (size_t i = 0; i < ops; i++) { prev = lookup_session(m, ((nxt() ^ (prev & 1)) % n) * 2654435761u); chk += prev; }
    printf("%llu\n", (unsigned long long)chk);
}

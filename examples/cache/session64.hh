/* The 64-byte session the open-addressing map examples keep (boostflat_lookup.cc,
 * hopscotch_lookup.cc): a lookup reads and writes last_seen and hits (bytes 0 to 12),
 * the rest is cold. */
#ifndef SESSION64_HH
#define SESSION64_HH

#include <cstdint>

struct Session {
    uint64_t last_seen;
    uint32_t hits;
    uint32_t flags;
    uint64_t bytes_in;
    uint64_t bytes_out;
    char peer[32];
};
static_assert(sizeof(Session) == 64, "64-byte sessions, 72-byte pairs");

#endif

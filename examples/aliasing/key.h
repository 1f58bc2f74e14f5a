// The key type of keys.cc built with -DKEY_IN_HEADER: declared in a header, as Monero's rct::key
// is in rctTypes.h: making its bytes char8_t is a change to this file, not to the unit.
#pragma once
#include <vector>

inline int compare_keys(const unsigned char* a, const unsigned char* b) {
    int diff = 0;
    for (int i = 0; i < 32; ++i) diff |= a[i] ^ b[i];
    return diff;
}

struct key {
    unsigned char& operator[](int i) { return bytes[i]; }
    bool operator==(const key& other) const { return compare_keys(bytes, other.bytes) == 0; }
    unsigned char bytes[32];
};
using keys = std::vector<key>;
inline const key ZERO = {{0}};
inline key zero() { return ZERO; }

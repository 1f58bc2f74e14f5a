// Planted problem: byte stores into a struct of 32 unsigned chars. pack() sets each
// key to zero (an inline 32-byte struct copy) and then writes the 8 bytes of a
// 64-bit amount one by one: each unsigned char store may alias `v`'s data pointer,
// its size and the element just read, so they are loaded again after every byte
// (the shape of Monero's rct::bulletproof_PROVE). With char8_t bytes the eight stores
// can become one. Built with -DKEY_IN_HEADER the key type comes from key.h instead, as
// rct::key comes from rctTypes.h: char8_t is then a change to that header.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#ifdef KEY_IN_HEADER
#include "key.h"
#else
extern "C" int compare_keys(const unsigned char* a, const unsigned char* b) {
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
static const key ZERO = {{0}};
inline key zero() { return ZERO; }
#endif

__attribute__((noinline)) keys pack(const std::vector<uint64_t>& v) {
    keys sv(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        sv[i] = zero();
        sv[i].bytes[0] = v[i] & 255;
        sv[i].bytes[1] = (v[i] >> 8) & 255;
        sv[i].bytes[2] = (v[i] >> 16) & 255;
        sv[i].bytes[3] = (v[i] >> 24) & 255;
        sv[i].bytes[4] = (v[i] >> 32) & 255;
        sv[i].bytes[5] = (v[i] >> 40) & 255;
        sv[i].bytes[6] = (v[i] >> 48) & 255;
        sv[i].bytes[7] = (v[i] >> 56) & 255;
    }
    return sv;
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::stoi(argv[1]) : 4000;
    std::vector<uint64_t> amounts(4096);
    for (std::size_t i = 0; i < amounts.size(); ++i) amounts[i] = i * 0x9e3779b97f4a7c15ULL;
    unsigned h = 0;
    for (int r = 0; r < rounds; ++r) {
        amounts[r % amounts.size()] ^= r;
        const keys out = pack(amounts);
        h = h * 31 + out[r % out.size()].bytes[r % 8] + (out[0] == out[1]);
    }
    std::printf("%x\n", h);
    return 0;
}

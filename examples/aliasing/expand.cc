// Planted problem: an aliasing write in the hot loop. expand() writes bytes
// (uint8_t, a char type) into a std::vector, so after every byte the compiler
// must assume the input string's size and both data pointers may have changed:
// it reloads them on every iteration and cannot vectorise the loop (the shape of
// bitcoin's ExpandHRP). Declaring the vector as std::vector<char8_t>, or hoisting
// in.size() and the data pointers into locals, fixes it.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using Bytes = std::vector<uint8_t>;

__attribute__((noinline)) Bytes expand(const std::string& in) {
    Bytes out;
    out.resize(in.size() * 2 + 1);
    for (std::size_t i = 0; i < in.size(); ++i) {
        unsigned char c = in[i];
        out[i] = c >> 5;
        out[i + in.size() + 1] = c & 0x1f;
    }
    return out;
}

// Some honest work next to it, so the profile is not a single function.
__attribute__((noinline)) uint64_t mix(const Bytes& bytes, uint64_t seed) {
    uint64_t h = seed;
    for (std::size_t i = 0; i < bytes.size(); i += 64) h = (h ^ bytes[i]) * 0x100000001b3ULL;
    return h;
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::stoi(argv[1]) : 40000;
    std::string text(16384, 'a');
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
    uint64_t h = 1469598103934665603ULL;
    for (int r = 0; r < rounds; ++r) {
        text[r % text.size()] = static_cast<char>('a' + r % 26);
        h = mix(expand(text), h);
    }
    std::printf("%llx\n", static_cast<unsigned long long>(h));
    return 0;
}

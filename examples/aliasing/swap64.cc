// Planted problem: a char-typed write in a branchy loop. swap_alphabet() maps I2P's
// base64 alphabet ('-', '~') onto the standard one ('+', '/') and back, writing a
// std::string through char: after every store the compiler must assume `from`'s size
// and both data pointers may have changed, and reloads them each iteration (the shape
// of bitcoin's SwapBase64 in src/i2p.cpp). The switch keeps the loop scalar whatever
// the types, so hoisting the size and the data pointers, or char8_t, only saves the
// reloads (GCC 12 -O2 1.03x, clang 16 0.90x); the fix that pays computes the map
// without branches, 16 bytes at a time into a local block (docs/aliasing.md).
#include <cstdio>
#include <string>

__attribute__((noinline)) std::string swap_alphabet(const std::string& from) {
    std::string to;
    to.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) {
        switch (from[i]) {
            case '-': to[i] = '+'; break;
            case '~': to[i] = '/'; break;
            case '+': to[i] = '-'; break;
            case '/': to[i] = '~'; break;
            default: to[i] = from[i]; break;
        }
    }
    return to;
}

int main(int argc, char** argv) {
    const int rounds = argc > 1 ? std::stoi(argv[1]) : 20000;
    const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-~+/";
    std::string text(8192, 'a');
    for (std::size_t i = 0; i < text.size(); ++i) text[i] = alphabet[(i * 7) % 66];
    unsigned long h = 0;
    for (int r = 0; r < rounds; ++r) {
        text[r % text.size()] = alphabet[r % 66];
        const std::string out = swap_alphabet(text);
        h = h * 31 + static_cast<unsigned char>(out[r % out.size()]);
    }
    std::printf("%lx\n", h);
    return 0;
}

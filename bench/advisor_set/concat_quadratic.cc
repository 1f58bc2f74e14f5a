// Planted: a string built by s = s + piece (a copy of the whole string each time).
// Fix (-DFIXED): s += piece into a reserved string.
#include <cstdio>
#include <string>

int main() {
    long total = 0;
    for (int round = 0; round < 10; round++) {
        std::string s;
#ifdef FIXED
        s.reserve(20000 * 12);
#endif
        for (int i = 0; i < 20000; i++) {
            std::string piece = "item" + std::to_string(i % 1000) + ";";
#ifdef FIXED
            s += piece;
#else
            s = s + piece;
#endif
        }
        total += (long)s.size();
    }
    std::printf("%ld\n", total);
}

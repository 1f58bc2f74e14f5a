// Planted problem: ASCII text upper-cased through ICU (icu::UnicodeString::toUpper)
// in the hot loop; the full Unicode case mapping runs for every plain letter.
#include <unicode/unistr.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 500000;
    const std::string line = "the quick brown fox jumps over the lazy dog 0123456789 again";
    std::size_t total = 0;
    for (int i = 0; i < rounds; ++i) {
        icu::UnicodeString text = icu::UnicodeString::fromUTF8(line);
        text.toUpper();
        std::string out;
        text.toUTF8String(out);
        total += out.size() + static_cast<unsigned char>(out[i % out.size()]);
    }
    std::printf("%zu\n", total);
    return 0;
}

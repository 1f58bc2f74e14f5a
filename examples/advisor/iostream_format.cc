// Planted problem: numbers formatted through std::ostringstream in the hot loop;
// stream, locale and num_put machinery (and vsnprintf under it) dominate.
#include <cstdio>
#include <cstdlib>
#include <sstream>

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 400000;
    std::size_t total = 0;
    for (int i = 0; i < rounds; ++i) {
        std::ostringstream line;
        line << "id=" << i << " value=" << i * 0.37 << " ratio=" << i / 7.0;
        total += line.str().size();
    }
    std::printf("%zu\n", total);
    return 0;
}

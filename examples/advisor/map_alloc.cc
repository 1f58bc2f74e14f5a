// Planted problem: allocation-heavy std::map. Every iteration builds a fresh
// map of small nodes and tears it down, so glibc malloc/free dominate.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

static long build_index(int round) {
    std::map<int, std::string> index;
    for (int i = 0; i < 2000; ++i) {
        index.emplace((i * 7919 + round) % 4093, std::string(24, static_cast<char>('a' + i % 26)));
    }
    long sum = 0;
    for (const auto& [key, value] : index) sum += key + value.size();
    return sum;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 3000;
    long total = 0;
    for (int r = 0; r < rounds; ++r) total += build_index(r);
    std::printf("%ld\n", total);
    return 0;
}

// Planted problem: a std::unordered_map<std::string, int> rebuilt and probed in
// the hot loop; node allocation, hashing into buckets and pointer chasing dominate.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_map>

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 25;
    long hits = 0;
    for (int r = 0; r < rounds; ++r) {
        std::unordered_map<std::string, int> index;
        for (int i = 0; i < 50000; ++i) index[std::to_string(i * 7)] += i;
        for (int i = 0; i < 50000; ++i) hits += static_cast<long>(index.count(std::to_string(i)));
    }
    std::printf("%ld\n", hits);
    return 0;
}

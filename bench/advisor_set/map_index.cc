// Planted: a std::map<int,int> index rebuilt and probed. Fix (-DFIXED): a sorted vector
// with binary search.
#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

int main() {
    long total = 0;
    for (int round = 0; round < 5; round++) {
#ifdef FIXED
        std::vector<std::pair<int, int>> index;
        index.reserve(200000);
        for (int i = 0; i < 200000; i++) index.emplace_back((i * 7919) % 1000003, i);
        std::sort(index.begin(), index.end());
        for (int i = 0; i < 400000; i++) {
            auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(i * 13 % 1000003, 0));
            if (it != index.end() && it->first == i * 13 % 1000003) total += it->second;
        }
#else
        std::map<int, int> index;
        for (int i = 0; i < 200000; i++) index[(i * 7919) % 1000003] = i;
        for (int i = 0; i < 400000; i++) {
            auto it = index.find(i * 13 % 1000003);
            if (it != index.end()) total += it->second;
        }
#endif
    }
    std::printf("%ld\n", total);
}

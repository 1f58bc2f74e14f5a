// Planted problem: allocation-bound. Builds and tears down many small std::map
// nodes keyed by heap-allocated std::string (longer than the small-string buffer),
// so most of the time goes to glibc malloc/free; mimalloc or jemalloc, preloaded
// with LD_PRELOAD, speeds it up with no code change.
//
// Usage: alloc_heavy [ROUNDS]   (default 40; each round ~20k inserts and erases)
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

static std::string key_for(unsigned n) {
  // 24+ characters: never fits libstdc++'s 15-character in-place buffer.
  return "customer-record-key-" + std::to_string(n * 2654435761u);
}

static unsigned long one_round(unsigned seed) {
  std::map<std::string, std::vector<int>> index;
  for (unsigned i = 0; i < 20000; ++i) {
    auto& slot = index[key_for(seed + i)];
    slot.assign(1 + i % 7, static_cast<int>(i));
  }
  unsigned long checksum = 0;
  for (auto it = index.begin(); it != index.end();) {
    checksum += it->first.size() + it->second.size();
    it = index.erase(it);
  }
  return checksum;
}

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  unsigned long total = 0;
  for (int r = 0; r < rounds; ++r) total += one_round(static_cast<unsigned>(r) * 7919u);
  std::printf("%lu\n", total);
  return 0;
}

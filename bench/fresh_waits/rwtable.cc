// Readers and writers on one std::shared_mutex, plus one std::mutex for results.
// Each thread times its own lock calls (steady_clock): the truth.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

static std::shared_mutex table_lock;
static std::mutex results_lock;
static std::vector<unsigned long> table(4096);
static unsigned long results;

using Clock = std::chrono::steady_clock;
static long ns(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

__attribute__((noinline)) unsigned long prepare(unsigned long x, int rounds) {
  for (int i = 0; i < rounds; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}
__attribute__((noinline)) void rewrite_table(unsigned long x) {
  for (int i = 0; i < 4096; i++) table[i] ^= prepare(x + i, 8);
}
__attribute__((noinline)) unsigned long scan_table(unsigned long x) {
  unsigned long s = 0;
  for (int i = 0; i < 4096; i += 2) s += table[i] * x;
  return s;
}
__attribute__((noinline)) void tally(unsigned long v) {
  results += prepare(v, 3000);
}

int main(int argc, char** argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  int nthreads = argc > 2 ? atoi(argv[2]) : 4;
  std::atomic<long> waited{0}, lived{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; t++) {
    threads.emplace_back([&, t] {
      auto born = Clock::now();
      long w = 0;
      unsigned long x = t + 1;
      for (long i = 0; i < iters; i++) {
        x = prepare(x, 4000);
        auto t0 = Clock::now();
        if (i % 8 == 0) {
          std::unique_lock<std::shared_mutex> g(table_lock);
          w += ns(Clock::now() - t0);
          rewrite_table(x);
        } else {
          std::shared_lock<std::shared_mutex> g(table_lock);
          w += ns(Clock::now() - t0);
          x += scan_table(x);
        }
        auto t1 = Clock::now();
        std::lock_guard<std::mutex> g(results_lock);
        w += ns(Clock::now() - t1);
        tally(x);
      }
      waited += w;
      lived += ns(Clock::now() - born);
    });
  }
  for (auto& th : threads) th.join();
  fprintf(stderr, "rwtable: threads waited %ld ns of %ld ns (%.2f%%)\n", waited.load(), lived.load(),
          100.0 * waited.load() / lived.load());
  printf("%lu\n", results);
}

// Planted: two threads incrementing one counter under a std::mutex. Fix (-DFIXED):
// per-thread counters added at the end.
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

int main() {
    std::mutex m;
    long counter = 0;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; t++)
        threads.emplace_back([&] {
#ifdef FIXED
            long mine = 0;
            for (long i = 0; i < 30000000; i++) mine += i & 1;
            std::lock_guard<std::mutex> g(m);
            counter += mine;
#else
            for (long i = 0; i < 30000000; i++) {
                std::lock_guard<std::mutex> g(m);
                counter += i & 1;
            }
#endif
        });
    for (auto& th : threads) th.join();
    std::printf("%ld\n", counter);
}

// Planted problem: four threads increment one counter under one std::mutex, so
// the CPU time goes to locking and futex calls instead of work.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

static std::mutex counter_lock;
static long counter = 0;

static void add_many(int n) {
    for (int i = 0; i < n; ++i) {
        std::lock_guard<std::mutex> guard(counter_lock);
        ++counter;
    }
}

int main(int argc, char** argv) {
    int per_thread = argc > 1 ? std::atoi(argv[1]) : 8000000;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) threads.emplace_back(add_many, per_thread);
    for (auto& thread : threads) thread.join();
    std::printf("%ld\n", counter);
    return 0;
}

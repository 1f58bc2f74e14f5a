// C++20's own waits (libstdc++ 12: futexes through std::__atomic_wait, not pthread):
// 4 workers run rounds; each round a worker digests a share of its own (uneven, so
// the faster ones wait), takes one of 2 slots of a std::counting_semaphore for a
// piece of work that needs one, then meets the others at a std::barrier. Each worker
// times its acquire() and its arrive_and_wait(); prints their sum over the workers'
// lifetime (`condvar`: a wait for another thread's signal) and each part.
// usage: semphase ROUNDS THREADS
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <semaphore>
#include <thread>
#include <vector>

namespace {
using Clock = std::chrono::steady_clock;
std::counting_semaphore<2> slots(2);
std::mutex totals;
uint64_t sem_total, barrier_total, lived_total;
volatile uint64_t sink;

uint64_t ns_since(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

__attribute__((noinline)) uint64_t digest(uint64_t x, int rounds) {
    for (int k = 0; k < rounds; k++) x = (x ^ (x >> 31)) * 0x9e3779b97f4a7c15ull + k;
    return x;
}

void worker(int id, int rounds, std::barrier<> &meet) {
    auto born = Clock::now();
    uint64_t in_sem = 0, in_barrier = 0, h = id + 1;
    for (int r = 0; r < rounds; r++) {
        h = digest(h, 10000 + 10000 * ((id + r) % 4));
        auto t0 = Clock::now();
        slots.acquire();
        in_sem += ns_since(t0);
        h = digest(h, 40000);  // needs one of the 2 slots
        slots.release();
        auto t1 = Clock::now();
        meet.arrive_and_wait();
        in_barrier += ns_since(t1);
    }
    sink = h;
    uint64_t lived = ns_since(born);
    std::lock_guard<std::mutex> g(totals);
    sem_total += in_sem;
    barrier_total += in_barrier;
    lived_total += lived;
}
}  // namespace

int main(int argc, char **argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
    int n = argc > 2 ? std::atoi(argv[2]) : 4;
    std::barrier<> meet(n);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; i++) threads.emplace_back(worker, i, rounds, std::ref(meet));
    for (auto &t : threads) t.join();
    std::fprintf(stderr, "threads waited %llu ns of %llu ns (semaphore %llu, barrier %llu)\n",
                 (unsigned long long)(sem_total + barrier_total), (unsigned long long)lived_total,
                 (unsigned long long)sem_total, (unsigned long long)barrier_total);
    return 0;
}

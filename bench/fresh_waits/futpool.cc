// A C++ pipeline on std::async and std::shared_future: each of 3 workers waits on the
// shared_future of its input (set by the main thread's std::promise after some work),
// then computes. Prints the workers' time in shared_future::wait() (`condvar`) over
// their lifetime.  usage: futpool ROUNDS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

using Clock = std::chrono::steady_clock;

__attribute__((noinline)) unsigned long crunch(unsigned long h, int n) {
    for (int k = 0; k < n; k++) h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ul + k;
    return h;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    long waited = 0, lived = 0;
    for (int r = 0; r < rounds; r++) {
        std::promise<unsigned long> input;
        std::shared_future<unsigned long> ready = input.get_future().share();
        std::vector<std::future<std::pair<long, long>>> workers;
        for (int w = 0; w < 3; w++)
            workers.push_back(std::async(std::launch::async, [ready, w] {
                auto born = Clock::now();
                unsigned long seed = ready.get();  // waits for main's value
                auto got = Clock::now();
                volatile unsigned long out = crunch(seed + w, 300000);
                (void)out;
                auto end = Clock::now();
                return std::make_pair(
                    (long)std::chrono::duration_cast<std::chrono::nanoseconds>(got - born).count(),
                    (long)std::chrono::duration_cast<std::chrono::nanoseconds>(end - born).count());
            }));
        input.set_value(crunch(r, 400000));
        for (auto &f : workers) {
            auto [w, l] = f.get();
            waited += w;
            lived += l;
        }
    }
    fprintf(stderr, "threads waited %ld ns of %ld ns\n", waited, lived);
}

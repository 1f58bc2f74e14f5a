// Planted: a shared_ptr passed by value in a hot loop on two threads (an atomic
// increment and decrement per call, on one contended counter). Fix (-DFIXED): const&.
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

struct Config { long scale = 3; };

#ifdef FIXED
__attribute__((noinline)) long scaled(const std::shared_ptr<Config>& c, long x) { return x * c->scale; }
#else
__attribute__((noinline)) long scaled(std::shared_ptr<Config> c, long x) { return x * c->scale; }
#endif

int main() {
    auto config = std::make_shared<Config>();
    std::vector<long> out(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; t++)
        threads.emplace_back([&, t] {
            long sum = 0;
            for (long i = 0; i < 30000000; i++) sum += scaled(config, i);
            out[t] = sum;
        });
    for (auto& th : threads) th.join();
    std::printf("%ld\n", out[0] + out[1]);
}

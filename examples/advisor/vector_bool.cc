// Planted problem: std::vector<bool> copied and indexed bit by bit in the hot
// loop (operator=, _Bit_reference), which the compiler cannot vectorise.
#include <cstdio>
#include <cstdlib>
#include <vector>

struct State {
    std::vector<bool> live;
    std::vector<bool> checked;
};

__attribute__((noinline)) static long step(State& next, const State& prev, int round) {
    next.live = prev.live;
    next.checked = prev.checked;
    long count = 0;
    for (std::size_t i = 0; i < next.live.size(); ++i) {
        if (next.live[i] != next.checked[(i + round) % next.checked.size()]) ++count;
    }
    next.live[round % next.live.size()] = !next.live[round % next.live.size()];
    return count;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 40000;
    State a{std::vector<bool>(4096), std::vector<bool>(4096)};
    for (std::size_t i = 0; i < a.live.size(); i += 3) a.live[i] = true;
    State b = a;
    long total = 0;
    for (int r = 0; r < rounds; ++r) total += (r % 2) ? step(a, b, r) : step(b, a, r);
    std::printf("%ld\n", total);
    return 0;
}

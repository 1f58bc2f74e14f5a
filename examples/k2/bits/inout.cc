// Planted problem (the K2 case in miniature): candidate states hold std::vector<bool>
// flags copied element by element for every input: with vector<bool> each copy is a
// loop of bit operations. char8.diff makes them std::vector<char8_t>, whose copy loop
// the compiler vectorises.
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr int REGS = 11;
constexpr int STACK = 512;

struct inout {
    std::vector<bool> reg_readable = std::vector<bool>(REGS);
    std::vector<bool> stack_readable = std::vector<bool>(STACK);
};

// Element by element, as K2's init_safety_chk and inout_t::operator= copy them.
__attribute__((noinline)) void assign(inout& to, const inout& from) {
    for (int i = 0; i < REGS; i++) to.reg_readable[i] = from.reg_readable[i];
    for (int i = 0; i < STACK; i++) to.stack_readable[i] = from.stack_readable[i];
}

int main(int argc, char** argv) {
    long n = argc > 1 ? std::atol(argv[1]) : 400000;
    inout start, state;
    for (int i = 0; i < STACK; i += 3) start.stack_readable[i] = true;
    long readable = 0;
    for (long i = 0; i < n; i++) {
        start.reg_readable[i % REGS] = i & 1;
        assign(state, start);
        readable += state.stack_readable[i % STACK] + state.reg_readable[i % REGS];
    }
    std::printf("%ld\n", readable);
    return 0;
}

// Planted problem: exceptions used for control flow. Parsing a number that is
// often not a number throws, and the unwinder (_Unwind_Find_FDE, personality
// routines) dominates the profile.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

struct NotANumber : std::runtime_error {
    NotANumber() : std::runtime_error("not a number") {}
};

__attribute__((noinline)) static int parse_digit_run(const std::string& text, int depth) {
    if (depth > 0) return parse_digit_run(text, depth - 1) + 1;
    int value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') throw NotANumber();
        value = value * 10 + (c - '0');
    }
    return value;
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 400000;
    const std::string inputs[] = {"123", "x12", "77", "abc", "9z"};
    long sum = 0, failures = 0;
    for (int i = 0; i < rounds; ++i) {
        try {
            sum += parse_digit_run(inputs[i % 5], 8);
        } catch (const NotANumber&) {
            ++failures;
        }
    }
    std::printf("%ld %ld\n", sum, failures);
    return 0;
}

// Planted: std::regex built for every line. Fix (-DFIXED): built once (still std::regex).
#include <cstdio>
#include <regex>
#include <string>

int main() {
    long hits = 0;
    const std::regex once(R"(^id=(\d+);name=\w+$)");
    for (int i = 0; i < 15000; i++) {
        std::string line = "id=" + std::to_string(i) + ";name=n" + std::to_string(i % 97);
#ifdef FIXED
        hits += std::regex_match(line, once);
#else
        std::regex re(R"(^id=(\d+);name=\w+$)");
        hits += std::regex_match(line, re);
#endif
    }
    std::printf("%ld\n", hits);
}

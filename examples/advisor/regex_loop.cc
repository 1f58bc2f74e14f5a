// Planted problem: std::regex matched in a hot loop; libstdc++'s backtracking
// executor (std::__detail::_Executor) dominates the profile.
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>

int main(int argc, char** argv) {
    int rounds = argc > 1 ? std::atoi(argv[1]) : 400000;
    const std::regex pattern(R"(([a-z]+)@([a-z]+)\.(com|org|net))");
    const std::string lines[] = {
        "contact: alice@example.com for details",
        "no address on this line at all, just words",
        "bob@test.org and carol@site.net both wrote",
    };
    long matches = 0;
    for (int i = 0; i < rounds; ++i) {
        std::smatch m;
        if (std::regex_search(lines[i % 3], m, pattern)) matches += m[1].length();
    }
    std::printf("%ld\n", matches);
    return 0;
}

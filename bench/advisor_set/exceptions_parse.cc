// Planted: std::stoi's exception as the "not a number" answer for most fields.
// Fix (-DFIXED): std::from_chars's error code.
#include <charconv>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

static long parse(const std::string& s) {
#ifdef FIXED
    long v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    return r.ec == std::errc() ? v : 0;
#else
    try {
        return std::stol(s);
    } catch (const std::invalid_argument&) {
        return 0;
    }
#endif
}

int main() {
    std::vector<std::string> fields;
    for (int i = 0; i < 100; i++) fields.push_back(i % 4 ? "n/a" : std::to_string(i));
    long total = 0;
    for (int round = 0; round < 12000; round++)
        for (const auto& f : fields) total += parse(f);
    std::printf("%ld\n", total);
}

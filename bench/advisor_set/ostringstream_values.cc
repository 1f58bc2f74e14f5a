// Planted: a std::ostringstream per value to format integers. Fix (-DFIXED): std::to_chars.
#include <charconv>
#include <cstdio>
#include <sstream>
#include <string>

int main() {
    long total = 0;
    char buf[32];
    for (long i = 0; i < 3000000; i++) {
#ifdef FIXED
        auto r = std::to_chars(buf, buf + sizeof buf, i * 37);
        total += r.ptr - buf;
#else
        std::ostringstream os;
        os << i * 37;
        total += (long)os.str().size();
        (void)buf;
#endif
    }
    std::printf("%ld\n", total);
}

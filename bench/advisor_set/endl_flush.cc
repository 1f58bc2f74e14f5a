// Planted: std::endl after every line of a file (a flush, so one write(2) per line).
// Fix (-DFIXED): '\n'.
#include <fstream>

int main() {
    std::ofstream out("/dev/null");
    for (int i = 0; i < 3000000; i++) {
#ifdef FIXED
        out << "line " << i << '\n';
#else
        out << "line " << i << std::endl;
#endif
    }
}

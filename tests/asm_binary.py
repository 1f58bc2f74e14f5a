"""A small program built with the C compiler for the disassembly tests, and a
profile of it as a recorder would give it: an inlined helper whose hot lines sit in
the function it was inlined into."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from perfsleuth.binaries import build_id_of
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder

SOURCE = "\n".join(
    [
        "static inline __attribute__((always_inline)) unsigned long mix(unsigned long x) {",
        "    x ^= x >> 13;",  # line 2
        "    x *= 0x9E3779B97F4A7C15ul;",
        "    return x ^ (x >> 29);",  # line 4
        "}",
        "__attribute__((noinline)) unsigned long work(unsigned long s, int n) {",
        "    for (int i = 0; i < n; i++) s = mix(s + (unsigned long)i);",  # line 7
        "    return s;",
        "}",
        "int main(int argc, char **argv) { (void)argv; return (int)work(argc, 1000); }",
        "",
    ]
)
HOT_LINE = 4
WARM_LINE = 2


def build(folder: Path) -> Path:
    """mix.c built with -O2 -g into FOLDER/mix; returns the binary."""
    source = folder / "mix.c"
    source.write_text(SOURCE)
    cc = shutil.which("cc") or shutil.which("gcc") or "clang-16"
    binary = folder / "mix"
    subprocess.run([cc, "-O2", "-g", "-o", str(binary), str(source)], check=True)
    return binary


def profile(binary: Path, build_id: str | None = None) -> Profile:
    """Samples of mix at its lines 4 (300) and 2 (100), inlined into work, in main."""
    source = str(binary.with_suffix(".c"))
    name = binary.name
    builder = ProfileBuilder(unit="samples")
    work = Frame("work", name, source, 7)
    main = Frame("main", name, source, 10)
    builder.add([Frame("mix", name, source, HOT_LINE, inlined=True), work, main], 300, count=300)
    builder.add([Frame("mix", name, source, WARM_LINE, inlined=True), work, main], 100, count=100)
    builder.add([work, main], 50, count=50)
    built = builder.build()
    recorded = build_id_of(str(binary)) if build_id is None else build_id
    built.dsos = [{"path": str(binary), "build_id": recorded}]
    return built

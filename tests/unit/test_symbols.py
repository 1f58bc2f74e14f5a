"""perfsleuth.symbols: ELF facts, build-id lookup, kallsyms, batch symbolization."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from perfsleuth.symbols import (
    KERNEL_DSO,
    UNKNOWN,
    Kallsyms,
    Symbolizer,
    binaries,
    build_id_of,
    dso_name,
    elf_info,
    find_dso,
    find_llvm_symbolizer,
    kernel_symbols,
)
from perfsleuth.symbols.symbolizer import Aliases, ElfSymbols, clean_function, strip_params

SRC = r"""
#include <stdio.h>
static inline __attribute__((always_inline)) unsigned helper(unsigned x) {
    return (x * 2654435761u) >> (x & 7);
}
__attribute__((noinline)) int outer(int x) {
    unsigned s = 0;
    for (int i = 0; i < x; i++) s ^= helper(s + i);
    return s;
}
int main(int argc, char **argv) { printf("%d\n", outer(argc * 1000)); return 0; }
"""


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang-16")
    if cc is None:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("sym")
    (d / "t.c").write_text(SRC)
    exe = d / "t"
    subprocess.run([cc, "-O2", "-g", "-Wl,--build-id", "-o", str(exe), str(d / "t.c")], check=True)
    return exe


def nm_address(exe: Path, name: str) -> int:
    out = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return int(parts[0], 16)
    raise AssertionError(f"{name} not in nm output")


def test_elf_info_segments_and_build_id(binary: Path) -> None:
    info = elf_info(str(binary))
    assert info is not None
    assert len(info.build_id) == 40
    assert info.has_symbols and info.has_debug_info
    readelf = subprocess.run(
        ["readelf", "-n", str(binary)], capture_output=True, text=True, check=True
    ).stdout
    assert info.build_id in readelf
    assert build_id_of(str(binary)) == info.build_id
    # a file offset inside the executable segment maps to its virtual address
    off, filesz, vaddr, _ = next(s for s in info.segments if s[2] != 0 or s[0] != 0)
    assert info.offset_to_vaddr(off) == vaddr
    assert info.offset_to_vaddr(off + filesz - 1) == vaddr + filesz - 1
    assert info.offset_to_vaddr(10**12) is None


def test_elf_info_rejects_non_elf(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("hello")
    assert elf_info(str(f)) is None
    assert elf_info(str(tmp_path / "missing")) is None
    assert build_id_of(str(f)) == ""


def test_find_dso_by_path_and_by_build_id(
    binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bid = build_id_of(str(binary))
    assert find_dso(str(binary), bid) == str(binary)
    assert find_dso(str(binary), "") == str(binary)
    # path gone: found in perf's ~/.debug build-id cache
    monkeypatch.setenv("HOME", str(tmp_path))
    cache = tmp_path / ".debug" / ".build-id" / bid[:2] / bid[2:]
    cache.mkdir(parents=True)
    shutil.copy(binary, cache / "elf")
    assert find_dso("/gone/t", bid) == str(cache / "elf")
    assert find_dso("/gone/t", "") is None
    assert find_dso("[vdso]", "") is None


def test_kallsyms_parse_and_lookup() -> None:
    text = (
        "ffffffff81000000 T _stext\n"
        "ffffffff81000100 t helper_fn\n"
        "ffffffff81001000 D some_data\n"
        "ffffffffc0a00000 t mod_fn\t[nf_tables]\n"
        "0000000000000000 T hidden\n"
    )
    k = Kallsyms.parse(text)
    assert k.usable
    assert k.lookup(0xFFFFFFFF81000050) == ("_stext", "")
    assert k.lookup(0xFFFFFFFF81000180) == ("helper_fn", "")
    assert k.lookup(0xFFFFFFFFC0A00010) == ("mod_fn", "nf_tables")
    assert k.lookup(0x1000) is None
    sym = Symbolizer(kallsyms=k)
    f = sym.kernel_frame(0xFFFFFFFF81000180)
    assert (f.function, f.dso, f.kernel) == ("helper_fn", KERNEL_DSO, True)
    assert sym.kernel_frame(0xFFFFFFFFC0A00010).dso == "[nf_tables]"
    hidden = Symbolizer(kallsyms=Kallsyms.parse("0000000000000000 T x\n"))
    assert not hidden.kallsyms.usable
    assert hidden.kernel_frame(0xFFFFFFFF81000180).function == UNKNOWN


def test_kernel_symbols_prefers_perf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    d = tmp_path / ".debug" / "[kernel.kallsyms]" / "abcd"
    d.mkdir(parents=True)
    (d / "kallsyms").write_text("ffffffff81000000 T _text\nffffffff81000100 T cached_fn\n")
    k = kernel_symbols("abcd", "other-release", 0xFFFFFFFF81000000)
    assert k.lookup(0xFFFFFFFF81000110) == ("cached_fn", "")
    # another kernel and nothing cached: no symbols rather than wrong ones
    assert not kernel_symbols("ffff", "some-other-kernel-release").usable


def test_native_kallsyms_table_is_kept_until_the_file_changes(tmp_path: Path) -> None:
    """The native lookup keeps the last file's table (the agent asks every window)."""
    import perfsleuth_native as native  # built by `make test`

    path = tmp_path / "kallsyms"
    path.write_text("ffffffff81000000 T _text\nffffffff81000100 T first_fn [mod_a]\n")
    found = native.kallsyms_lookup(str(path), [0xFFFFFFFF81000110, 0xFFFFFFFF80000000])
    assert found["name"] == ["first_fn", None] and found["module"] == ["mod_a", None]
    assert found["text_addr"] == 0xFFFFFFFF81000000
    path.write_text("ffffffff81000000 T _text\nffffffff81000100 T second_function\n")
    again = native.kallsyms_lookup(str(path), [0xFFFFFFFF81000110])
    assert again["name"] == ["second_function"] and again["module"] == [""]


@pytest.mark.skipif(find_llvm_symbolizer() is None, reason="llvm-symbolizer not installed")
def test_symbolize_inline_chain_and_lines(binary: Path) -> None:
    info = elf_info(str(binary))
    assert info is not None
    outer = nm_address(binary, "outer")
    # every address of outer's body: find one inside the inlined helper
    sym = Symbolizer()
    vaddrs = [outer + i for i in range(0, 64)]
    res = sym.symbolize_vaddrs([(str(binary), v) for v in vaddrs])
    chains = [res[(str(binary), v)] for v in vaddrs]
    assert all(c[-1].function == "outer" for c in chains[:4])
    assert all(c[-1].file.endswith("t.c") and c[-1].line > 0 for c in chains[:4])
    assert all(not c[-1].inlined for c in chains)
    inl = [c for c in chains if len(c) > 1]
    assert inl, "no inlined helper frame found"
    assert inl[0][0].function == "helper" and inl[0][0].inlined
    assert inl[0][0].line == 4
    assert inl[0][0].dso == binary.name


@pytest.mark.skipif(find_llvm_symbolizer() is None, reason="llvm-symbolizer not installed")
def test_symbolize_offsets_converts_file_offsets(binary: Path) -> None:
    info = elf_info(str(binary))
    assert info is not None
    main = nm_address(binary, "main")
    off, _fs, vaddr, _ms = next(s for s in info.segments if s[2] <= main < s[2] + max(s[1], s[3]))
    file_off = main - vaddr + off
    sym = Symbolizer()
    res = sym.symbolize_offsets(
        [(str(binary), info.build_id, file_off), ("/gone/lib.so", "", 0x1234)]
    )
    assert res[(str(binary), file_off)][-1].function == "main"
    assert res[("/gone/lib.so", 0x1234)] == (
        res[("/gone/lib.so", 0x1234)][0].__class__(UNKNOWN, dso="lib.so"),
    )


def test_symbol_table_fallback_without_llvm(binary: Path) -> None:
    sym = Symbolizer(llvm_symbolizer="")
    sym.tool = None
    main = nm_address(binary, "main")
    res = sym.symbolize_vaddrs([(str(binary), main + 1)])
    (frame,) = res[(str(binary), main + 1)]
    assert frame.function == "main"
    tab = ElfSymbols(str(binary))
    assert tab.by_name["outer"] == nm_address(binary, "outer")
    assert tab.lookup(nm_address(binary, "outer")) == "outer"


def test_names() -> None:
    assert dso_name("/usr/lib/x86_64-linux-gnu/libc.so.6") == "libc.so.6"
    assert dso_name("[kernel.kallsyms]") == "[kernel.kallsyms]"
    assert clean_function("core::ptr::drop_in_place::h0123456789abcdef") == (
        "core::ptr::drop_in_place"
    )
    assert clean_function("std::vector<int>::size() const") == "std::vector<int>::size() const"
    assert clean_function(
        "std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::h0123456789abcdef"
    ) == ("std::rt::lang_start::{{closure}}")
    assert clean_function(
        "_$LT$core..ops..range..Range$LT$T$GT$$u20$as$u20$core..iter..RangeIteratorImpl$GT$::spec_next"
    ) == ("<core::ops::range::Range<T> as core::iter::RangeIteratorImpl>::spec_next")
    assert clean_function("price$total") == "price$total"
    assert strip_params("ns::C<int>::f(int) const") == "ns::C<int>::f"
    assert strip_params("Foo::operator()(std::function<void (int)>) &&") == "Foo::operator()"
    assert strip_params("main") == "main"


def test_binaries(binary: Path) -> None:
    rows = binaries(
        [{"path": str(binary), "build_id": ""}, {"path": "[vdso]", "build_id": "ab"}, "/gone/x"]
    )
    assert rows[0]["found"] == str(binary)
    assert rows[0]["build_id"] == build_id_of(str(binary))
    assert rows[0]["symbols"] and rows[0]["debug_info"]
    assert rows[1] == {
        "path": "[vdso]",
        "build_id": "ab",
        "found": "",
        "symbols": False,
        "debug_info": False,
    }
    assert rows[2]["found"] == ""


def test_cxx_names_demangled_and_found_by_name(tmp_path: Path) -> None:
    cxx = shutil.which("g++") or shutil.which("clang++-16")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src = tmp_path / "t.cc"
    src.write_text(
        "namespace ns { __attribute__((noinline)) int f(int x) { return x * 7; } }\n"
        "int main(int argc, char **) { return ns::f(argc); }\n"
    )
    exe = tmp_path / "tcc"
    subprocess.run([cxx, "-O2", "-g", "-o", str(exe), str(src)], check=True)
    tab = ElfSymbols(str(exe))
    addr = tab.address_of("ns::f(int)")
    assert addr == nm_address(exe, "_ZN2ns1fEi")
    assert tab.address_of("ns::f") == addr  # as perf script prints it
    if find_llvm_symbolizer():
        res = Symbolizer().symbolize_vaddrs([(str(exe), addr)])
        assert res[(str(exe), addr)][-1].function == "ns::f(int)"


def test_best_alias_prefers_plain_global_names() -> None:
    tab = ElfSymbols.__new__(ElfSymbols)
    tab.aliases = {
        0x100: [("__libc_malloc", 1), ("malloc", 1), ("__malloc", 1)],
        0x300: [("_ZN2ns1fEi", 1)],
        0x400: [("close", 1)],
    }
    aliases = Aliases(tab)
    assert aliases.best_alias(0x100, "__libc_malloc") == "malloc"
    assert aliases.best_alias(0x100, "__GI___libc_malloc") == "malloc"
    assert aliases.best_alias(0x100, "other") == "other"
    assert aliases.best_alias(0x200, "x") == "x"
    assert aliases.best_alias(0x400, "__GI_close") == "close"
    assert aliases.aliases.keys() == {0x100}  # starts with one name are not kept


def test_aliases_read_from_dynsym_alone_match_the_whole_tables() -> None:
    """The agent's fast reading decodes only the names at shared starts; it must find
    what parsing every name finds (libc's malloc / __libc_malloc, libstdc++'s C++ ones)."""
    names = ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6")
    libs = [os.path.realpath(p) for p in names if os.path.exists(p)]
    assert libs, "no libc found"
    for lib in libs:
        fast = Aliases.of_dynsym(lib).aliases
        assert fast == Aliases(ElfSymbols(lib, ".dynsym")).aliases
    libc = Aliases.of_dynsym(libs[0])
    malloc = ElfSymbols(libs[0], ".dynsym").by_name["malloc"]
    assert libc.best_alias(malloc, "__libc_malloc") == "malloc"


def test_kernel_frames_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    d = tmp_path / ".debug" / "[kernel.kallsyms]" / "beef"
    d.mkdir(parents=True)
    (d / "kallsyms").write_text(
        "ffffffff81000000 T _text\nffffffff81000100 t irq_fn\nffffffffc0a00000 t m_fn\t[kvm]\n"
    )
    frames = Symbolizer().kernel_frames(
        [0xFFFFFFFF81000104, 0xFFFFFFFFC0A00001, 0xFFFFFFFF81000104],
        build_id="beef",
        release="not-this-kernel",
    )
    assert frames[0xFFFFFFFF81000104].function == "irq_fn"
    assert frames[0xFFFFFFFF81000104].kernel
    assert frames[0xFFFFFFFFC0A00001].dso == "[kvm]"
    unknown = Symbolizer().kernel_frames([0xFFFFFFFF81000104], build_id="", release="other")
    assert unknown[0xFFFFFFFF81000104].function == UNKNOWN


LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
LIBLLVM = "/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1"


@pytest.mark.skipif(find_llvm_symbolizer() is None, reason="llvm-symbolizer not installed")
def test_small_objects_share_the_run_of_a_large_one(
    binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An llvm-symbolizer run of its own only for an object with a large DWARF: libc (with
    libc6-dbg) and a small program are one run, libc and libLLVM two (on 2+ CPUs), and the
    answers are those of each object symbolized alone."""
    from perfsleuth.symbols import symbolizer

    assert symbolizer._elf_and_dwarf_bytes(LIBC) >= symbolizer.LARGE_DWARF_BYTES
    assert symbolizer._elf_and_dwarf_bytes(str(binary)) < symbolizer.LARGE_DWARF_BYTES
    runs: list[list[str]] = []
    run = Symbolizer._llvm_run

    def counted(self: Symbolizer, args: list[str], queries: list[str]) -> list:
        runs.append(queries)
        return run(self, args, queries)

    monkeypatch.setattr(Symbolizer, "_llvm_run", counted)
    libc = ElfSymbols(LIBC)
    small = [(str(binary), nm_address(binary, name)) for name in ("main", "outer")]
    large = [(LIBC, libc.by_name[name] + 4) for name in ("malloc", "qsort")]
    together = Symbolizer().symbolize_vaddrs(small + large)
    assert len(runs) == 1
    alone = Symbolizer().symbolize_vaddrs(small) | Symbolizer().symbolize_vaddrs(large)
    assert together == alone and together[large[0]][-1].function == "malloc"
    runs.clear()
    llvm = [(LIBLLVM, ElfSymbols(LIBLLVM).entries[1000][0])]
    Symbolizer().symbolize_vaddrs(large + llvm)
    assert len(runs) == min(2, os.cpu_count() or 1)


def test_llvm_symbolizer_runs_with_huge_pages_asked_of_malloc() -> None:
    from perfsleuth.symbols.symbolizer import HUGE_PAGES_TUNABLE, llvm_environment

    env = llvm_environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "GLIBC_TUNABLES": HUGE_PAGES_TUNABLE}
    # the user's own tunables come after, so theirs win (glibc takes the last of a name)
    mine = "glibc.malloc.hugetlb=0:glibc.malloc.arena_max=2"
    assert llvm_environment({"GLIBC_TUNABLES": mine})["GLIBC_TUNABLES"] == (
        f"{HUGE_PAGES_TUNABLE}:{mine}"
    )

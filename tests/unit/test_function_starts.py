"""symbols.function_starts: function starts of a binary from its .eh_frame_hdr."""

from __future__ import annotations

from pathlib import Path

from elftools.elf.elffile import ELFFile

from perfsleuth.symbols.function_starts import function_start, function_starts


def _libc() -> str:
    """The C library this process runs on: a large binary with unwind tables."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return next(line.split()[-1] for line in maps if "/libc.so" in line or "/libc-" in line)


def _executable_range(path: str) -> tuple[int, int]:
    with open(path, "rb") as f:
        text = ELFFile(f).get_section_by_name(".text")
        return text["sh_addr"], text["sh_addr"] + text["sh_size"]


def test_starts_are_sorted_and_in_text() -> None:
    exe = _libc()
    starts = function_starts(exe)
    lo, hi = _executable_range(exe)
    assert len(starts) > 100
    assert list(starts) == sorted(starts)
    assert sum(lo <= s < hi for s in starts) / len(starts) > 0.9


def test_address_maps_to_the_enclosing_start() -> None:
    exe = _libc()
    starts = function_starts(exe)
    inner = next(i for i in range(1, len(starts)) if starts[i] - starts[i - 1] > 8)
    assert function_start(exe, starts[inner] + 3) == starts[inner]
    assert function_start(exe, starts[inner] - 1) == starts[inner - 1]
    assert function_start(exe, starts[0] - 1) is None


def test_non_elf_gives_nothing(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"not an elf file at all")
    assert function_starts(str(junk)) == ()
    assert function_starts(str(tmp_path / "missing")) == ()

"""Format detection by content, on real files of every supported format."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from perfsleuth.errors import UserError
from perfsleuth.formats import FORMATS, detect, module, read_any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

REAL_FILES = {
    "detect.perf.data": "perf_data",
    "detect.perf-script.txt": "perf_script",
    "go-cpu.pb.gz": "pprof",
    "callgrind.out.hot": "callgrind",
    "callgrind.out.cachesim": "callgrind",
    "cachegrind.out.hot": "callgrind",
    "hot.folded": "folded",
}


@pytest.mark.parametrize(("name", "fmt"), sorted(REAL_FILES.items()))
def test_detects_real_files_whatever_their_name(tmp_path: Path, name: str, fmt: str) -> None:
    renamed = tmp_path / "profile.dat"  # the name says nothing
    shutil.copy(FIXTURES / name, renamed)
    assert detect(renamed).__name__ == f"perfsleuth.formats.{fmt}"


def test_detects_gunzipped_pprof(tmp_path: Path) -> None:
    plain = tmp_path / "cpu"
    plain.write_bytes(gzip.decompress((FIXTURES / "go-cpu.pb.gz").read_bytes()))
    assert detect(plain).__name__ == "perfsleuth.formats.pprof"


def test_read_any_returns_profile_and_format_name() -> None:
    profile, name = read_any(FIXTURES / "callgrind.out.hot")
    assert name == "callgrind" and profile.unit == "instructions"
    profile, name = read_any(FIXTURES / "hot.folded", "folded")
    assert name == "folded" and profile.total == 850


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "x.folded"
    empty.touch()
    with pytest.raises(UserError, match="^x.folded: the file is empty; "):
        detect(empty)
    with pytest.raises(UserError, match="the file is empty"):
        read_any(empty, "folded")


def test_unknown_content_lists_supported_formats(tmp_path: Path) -> None:
    odd = tmp_path / "notes.txt"
    odd.write_text("just some words\nnothing to see\n")
    with pytest.raises(UserError, match="notes.txt: not a profile format .* supported: perf.data"):
        detect(odd)


def test_gzipped_text_format_asks_to_decompress(tmp_path: Path) -> None:
    packed = tmp_path / "stacks.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "hot.folded").read_bytes()))
    with pytest.raises(UserError, match="stacks.gz: gzip-compressed; decompress it"):
        detect(packed)


def test_broken_gzip(tmp_path: Path) -> None:
    broken = tmp_path / "p.pb.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    with pytest.raises(UserError, match="p.pb.gz: broken gzip data"):
        detect(broken)


def test_missing_file_and_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        detect(tmp_path / "missing")
    with pytest.raises(UserError, match="is a directory"):
        detect(tmp_path)


def test_unknown_format_name() -> None:
    with pytest.raises(UserError, match="unknown format 'json'; use one of: perf_data"):
        module("json")
    assert FORMATS == (
        "perf_data",
        "pprof",
        "callgrind",
        "speedscope",
        "perf_script",
        "py_spy",
        "folded",
    )

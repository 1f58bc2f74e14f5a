"""Late symbolization: unknown frames keep build-id and address in the fleet store, and
symbols uploaded later (an unstripped binary or its .debug file) name them in queries."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_fleet_store import T0, fleet, fleet_top, make_window

from perfsleuth.cli import main
from perfsleuth.model.profile import Frame
from perfsleuth.store.fleet import FleetStore
from perfsleuth.store.fleet.symbols import symbol_table

HOTSPOTS = Path(__file__).resolve().parents[2] / "examples" / "bin" / "hotspots"


@pytest.fixture
def binary() -> Path:
    if not HOTSPOTS.exists():
        pytest.skip("examples are not built (make -C examples)")
    return HOTSPOTS


def functions(path: Path) -> dict[str, int]:
    _, table = symbol_table(str(path))
    return {row["function"]: row["address"] for row in table.to_pylist()}


def unknown_window(binary: Path, i: int = 0) -> tuple[str, dict[str, Frame]]:
    """A window of frames a host could not name: the binary's, by build-id and address."""
    build_id, _ = symbol_table(str(binary))
    address = functions(binary)
    frames = {
        name: Frame(
            f"[unknown] hs+{address[name]:#x}", "hs", build_id=build_id, address=address[name]
        )
        for name in ("compute_a", "work")
    }
    pool = [[frames["work"], frames["compute_a"], Frame("main", "hs")], [frames["compute_a"]]]
    return build_id, make_window(i, T0 + 10 * i, "web-9", "api", pool)


@pytest.fixture
def unnamed(tmp_path: Path, binary: Path) -> tuple[FleetStore, str]:
    """A store holding a window of the binary's frames, unnamed; and its build-id."""
    store = FleetStore(str(tmp_path / "fleet"))
    build_id, window = unknown_window(binary)
    store.append(window)
    return store, build_id


def test_unknown_frames_keep_build_id_and_address_and_uploaded_symbols_name_them(
    tmp_path: Path, binary: Path, unnamed: tuple[FleetStore, str]
) -> None:
    store, build_id = unnamed
    stored = pq.read_table(next((tmp_path / "fleet" / "frames").glob("*/*.parquet")))
    kept = {r["function"]: r for r in stored.to_pylist()}
    assert kept["main"]["build_id"] is None and kept["main"]["address"] is None
    unknown = [r for r in kept.values() if r["build_id"]]
    assert {(r["build_id"], r["address"]) for r in unknown} == {
        (build_id, functions(binary)[name]) for name in ("compute_a", "work")
    }
    before = {r["function"] for r in fleet_top(store)["rows"]}
    assert before == {"main", *(r["function"] for r in unknown)}

    assert store.upload_symbols(str(binary))[0] == build_id
    assert {r["function"] for r in fleet_top(store)["rows"]} == {"main", "compute_a", "work"}
    assert {r["function"] for r in fleet_top(store)["rows"]} == {
        r["function"] for r in fleet_top(store, by="line")["rows"]
    }


def source_line(binary: Path, address: int) -> tuple[str, int]:
    """binutils' addr2line for one address: the reference file:line."""
    done = subprocess.run(
        ["addr2line", "-e", str(binary), hex(address)], capture_output=True, text=True
    )
    path, _, line = done.stdout.strip().rpartition(":")
    return path, int(line.split()[0])


def test_an_upload_with_dwarf_gives_file_and_line_as_addr2line_does(
    tmp_path: Path, binary: Path, unnamed: tuple[FleetStore, str]
) -> None:
    store, build_id = unnamed
    assert store.upload_symbols(str(binary)) == (build_id, len(functions(binary)), True)
    assert (tmp_path / "fleet" / "debuginfo" / f"{build_id}.debug").is_file()
    rows = {r["function"]: r for r in fleet_top(store, by="line")["rows"]}
    for name in ("compute_a", "work"):
        assert (rows[name]["file"], rows[name]["line"]) == source_line(
            binary, functions(binary)[name]
        )
    assert rows["main"]["file"] == ""  # named by its host, which had no line


def test_an_upload_without_dwarf_names_functions_without_file_and_line(
    tmp_path: Path, binary: Path, unnamed: tuple[FleetStore, str]
) -> None:
    symtab_only = tmp_path / "hotspots-symtab"
    subprocess.run(["strip", "--strip-debug", "-o", str(symtab_only), str(binary)], check=True)
    store, build_id = unnamed
    assert store.upload_symbols(str(symtab_only))[::2] == (build_id, False)
    assert not (tmp_path / "fleet" / "debuginfo").exists()
    rows = {r["function"]: r for r in fleet_top(store, by="line")["rows"]}
    assert {"compute_a", "work"} <= set(rows)
    assert rows["work"]["file"] == "" and rows["work"]["line"] == 0


def test_dwarf_without_a_symbol_table_still_names_functions_and_lines(
    tmp_path: Path, binary: Path, unnamed: tuple[FleetStore, str]
) -> None:
    debug, dwarf_only = tmp_path / "hotspots.debug", tmp_path / "hotspots.dwarf"
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
    # GNU objcopy keeps a .symtab it is told to remove; LLVM's removes it
    subprocess.run(["llvm-objcopy-16", "-R", ".symtab", str(debug), str(dwarf_only)], check=True)
    store, build_id = unnamed
    assert store.upload_symbols(str(dwarf_only)) == (build_id, 0, True)
    rows = {r["function"]: r for r in fleet_top(store, by="line")["rows"]}
    for name in ("compute_a", "work"):
        assert (rows[name]["file"], rows[name]["line"]) == source_line(
            binary, functions(binary)[name]
        )


def test_a_debug_file_gives_the_same_symbols_as_the_unstripped_binary(
    tmp_path: Path, binary: Path
) -> None:
    debug = tmp_path / "hotspots.debug"
    subprocess.run(["objcopy", "--only-keep-debug", str(binary), str(debug)], check=True)
    assert symbol_table(str(debug))[0] == symbol_table(str(binary))[0]
    assert functions(debug) == functions(binary)
    assert {"main", "compute_a", "compute_b", "compute_c", "work"} <= set(functions(binary))


def test_a_store_written_before_these_columns_still_reads_and_compacts(
    tmp_path: Path, binary: Path
) -> None:
    root = tmp_path / "fleet"
    store = FleetStore(str(root))
    old = fleet(2, 1)
    for w in old:
        store.append(w)
    for path in (root / "frames").glob("*/*.parquet"):  # as the store wrote them before
        pq.write_table(pq.read_table(path).drop_columns(["build_id", "address"]), path)
    expected = fleet_top(store)["rows"]
    store.append(unknown_window(binary, i=5)[1])
    store.upload_symbols(str(binary))
    got = fleet_top(store)
    assert {"compute_a", "work"} <= {r["function"] for r in got["rows"]}
    store.compact()
    assert fleet_top(store)["rows"] == got["rows"]
    assert fleet_top(store, end=T0 + 50)["rows"] == expected


def test_symbols_upload_refuses_what_cannot_name_a_frame_in_one_line(
    tmp_path: Path, binary: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PERFSLEUTH_MAX_INPUT_MB", raising=False)
    stripped, text = tmp_path / "stripped", tmp_path / "notes.txt"
    subprocess.run(["strip", "-o", str(stripped), str(binary)], check=True)
    text.write_text("not a binary\n")
    no_id = tmp_path / "no-build-id"
    subprocess.run(["objcopy", "--remove-section=.note.gnu.build-id", str(binary), str(no_id)])
    long_id, source = tmp_path / "long-build-id", tmp_path / "main.c"
    source.write_text("int main(void) { return 0; }\n")
    build_id = "-Wl,--build-id=0x" + "ab" * 400
    subprocess.run(["gcc", "-g", build_id, "-o", str(long_id), str(source)], check=True)
    sparse = tmp_path / "sparse"  # a 1.1 GiB ELF with DWARF, nearly all of it a hole
    sparse.write_bytes(binary.read_bytes())
    os.truncate(sparse, 1100 << 20)
    store = ["--store", str(tmp_path / "fleet")]
    for path, message in (
        (stripped, "no symbol table (stripped): upload the unstripped binary or its .debug"),
        (text, "not an ELF file"),
        (no_id, "no GNU build-id"),
        (long_id, "its build-id is 400 bytes long; a GNU build-id is 4 to 64 bytes"),
        (sparse, "1,100 MB, larger than the 1,024 MB a kept debug file may be"),
    ):
        assert main(["symbols", "upload", *store, str(path)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "fleet" / "symbols").exists()
    assert main(["symbols", "upload", *store, str(binary)]) == 0
    assert "functions kept in" in capsys.readouterr().out

"""Cache mode under real valgrind (lackey): exact per-call counts against callgrind,
struct layouts against pahole, the cache-layout finding of `run --mode cache`,
scaling, constant time, and the bad inputs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cache_show import cache_doc, layout_members, pahole_members, record_cache
from cli_runner import perfsleuth

from perfsleuth.cpu_cache_projections import calibrate, model

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def conntable_run(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """handle_packet of `conntable 500 300`, every call kept."""
    store = tmp_path_factory.mktemp("cache") / "store"
    binary = examples_built / "conntable"
    return record_cache(store, binary, "handle_packet", "500", "300", calls=1000)


def callgrind_totals(binary: Path, function: str, *args: str, workdir: Path) -> dict[str, int]:
    out = workdir / "callgrind.out"
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--toggle-collect={function}",
         f"--callgrind-out-file={out}", str(binary), *args],
        check=True, capture_output=True,
    )  # fmt: skip
    text = out.read_text()
    events = re.search(r"^events: (.*)$", text, re.M)[1].split()  # type: ignore[index]
    totals = re.search(r"^summary: (.*)$", text, re.M)[1].split()  # type: ignore[index]
    return dict(zip(events, map(int, totals), strict=False))


def test_counts_equal_callgrinds_for_the_same_calls(conntable_run, examples_built, tmp_path):
    whole = cache_doc(conntable_run)["footprint"]["whole_run"]
    per_call = cache_doc(conntable_run)["footprint"]["per_call"]
    truth = callgrind_totals(examples_built / "conntable", "handle_packet", "500", "300",
                             workdir=tmp_path)  # fmt: skip
    assert whole["instructions"] == truth["Ir"] == 300 * 16
    # handle_packet has no read-modify-write instruction (lackey's M would count as
    # both a load and a store, callgrind's as a write only): the counts compare 1:1
    assert whole["loads"] == truth["Dr"]
    assert whole["stores"] == truth["Dw"]
    assert per_call["instructions"]["min"] == per_call["instructions"]["max"] == 16


def test_layout_names_the_lone_hot_field(conntable_run):
    layout = cache_doc(conntable_run)["layout"]
    hot = {f["name"] for f in layout["fields"] if f["hot"]}
    assert hot == {"state", "seq", "window", "last_ack"}
    assert layout["lines_touched_per_call"] == 2
    assert layout["reorder"]["move"] == ["last_ack"]
    assert (layout["reorder"]["from_line"], layout["reorder"]["to_line"]) == (4, 0)


@pytest.mark.skipif(shutil.which("pahole") is None, reason="pahole (Debian dwarves) not installed")
def test_layout_matches_pahole(conntable_run, examples_built):
    theirs = pahole_members(examples_built / "conntable", "conn")
    layout = cache_doc(conntable_run)["layout"]
    assert len(theirs) == 21
    assert layout_members(layout) == theirs
    assert re.search(r"size: 320, cachelines: 5, members: 21", layout["pahole"])
    assert "/* --- cacheline 4 boundary (256 bytes) --- */" in layout["pahole"]


def test_run_without_a_function_finds_the_layout_problem(examples_built, tmp_path):
    """200,000 packets: ~130 samples at 20 kHz, 30-45% of them in handle_packet; with
    20,000 the run took 58 samples, mostly page faults, and missed the finding at load 25."""
    store, report = tmp_path / "store", tmp_path / "findings.json"
    perfsleuth(
        store, "run", "--mode", "cache", "--freq", "20000", "--format", "json", "-o", str(report),
        "--", str(examples_built / "conntable"), "2000", "200000",
    )  # fmt: skip
    findings = json.loads(report.read_text())["findings"][:5]
    layout = [f for f in findings if f["kind"] == "cache-layout"]
    assert layout, [f["title"] for f in findings]
    assert layout[0]["details"]["field"] == "last_ack"
    assert "last_ack" in layout[0]["title"]


def test_run_without_a_function_traces_the_per_packet_function_not_main(examples_built, tmp_path):
    """The issue's run at a tenth of its size: 100,000 connections (a table far larger
    than the caches), a million packets; main holds the loop, handle_packet the misses."""
    store, report = tmp_path / "store", tmp_path / "findings.json"
    perfsleuth(
        store, "run", "--mode", "cache", "--format", "json", "-o", str(report),
        "--", str(examples_built / "conntable"), "100000", "1000000",
    )  # fmt: skip
    shown = json.loads(perfsleuth(store, "cache", "show", "--format", "json").stdout)
    assert [f["function"] for f in shown["functions"]] == ["handle_packet"]
    findings = json.loads(report.read_text())["findings"][:5]
    layout = [f for f in findings if f["kind"] == "cache-layout"]
    assert layout, [f["title"] for f in findings]
    assert layout[0]["details"]["field"] == "last_ack"


def test_run_without_a_function_finds_a_cxx_function_the_profile_spells_otherwise(
    examples_built, tmp_path
):
    """The profile names lookup_session with llvm-symbolizer's `>>`, the ELF's names
    are c++filt's `> >`: it was "no function ... has 5% of the CPU time"."""
    store = tmp_path / "store"
    perfsleuth(store, "run", "--mode", "cache",
               "--", str(examples_built / "unordered_map_lookup"), "50000", "500000")  # fmt: skip
    shown = json.loads(perfsleuth(store, "cache", "show", "--format", "json").stdout)
    assert [f["function"] for f in shown["functions"]] == ["lookup_session"]


def test_reordered_struct_has_no_layout_finding(examples_built, tmp_path):
    store = tmp_path / "store"
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "handle_packet", "--max-calls", "50",
        "--", str(examples_built / "conntable-reordered"), "200", "100",
    )  # fmt: skip
    layout = cache_doc(store)["layout"]
    assert layout["lines_touched_per_call"] == 1
    assert layout["reorder"] is None


def scaled_small_cache(store: Path, binary: Path) -> dict:
    """The scaling projection of handle_packet over n = 200, 400, 1600 under a small
    model (16 KiB L1d, 128 KiB L2), so that the L2 cliff falls inside the range."""
    perfsleuth(
        store, "record", "--mode", "cache", "--function", "handle_packet",
        "--scale", "n=200,400,1600", "--cache-model", "line=64,L1d=16K:4,L2=128K:8",
        "--", str(binary), "{n}",
    )  # fmt: skip
    return cache_doc(store)["scaling"]


def test_a_scaled_runs_model_simulates_the_llc_its_cliffs_use(
    examples_built, tmp_path, monkeypatch
):
    # this machine's geometry, with an LLC calibrated at 4 MiB (written for the test)
    if len(model.machine_geometry().levels) < 2:
        pytest.skip("sysfs lists fewer than two cache levels: no LLC to calibrate")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    calibrate.save(
        calibrate.Calibration(
            fingerprint=calibrate.fingerprint(), measured_at="the test", tlb_reach_pages=3000,
            page_size=4096, sweep_pages=16384, curve_ns={}, evidence="the test",
            llc_effective_bytes=4 << 20, llc_evidence="the test",
        )
    )  # fmt: skip
    perfsleuth(
        tmp_path / "store", "record", "--mode", "cache", "--function", "handle_packet",
        "--scale", "n=100,400", "--", str(examples_built / "conntable"), "{n}",
    )  # fmt: skip
    doc = cache_doc(tmp_path / "store")
    assert doc["scaling"]["geometry"]["levels"][-1]["size"] <= 4 << 20  # whole sets of it
    assert doc["model"]["geometry"] == doc["scaling"]["geometry"]


def test_scaling_predicts_the_cliff_of_a_small_cache(examples_built, tmp_path):
    store = tmp_path / "store"
    scaling = scaled_small_cache(store, examples_built / "conntable")
    fit = scaling["fit"]
    # 4n random packets reach 1 - e^-4 = 98% of the n connections, two lines each;
    # the next-line prefetcher adds the cold line after line 0 (line 4's is the next
    # connection's line 0): three lines each brought in, the prefetched one at half a
    # line's room in the L2, which it enters low in the LRU order: 2.5 lines to hold
    assert fit["touched_lines_per_n"] == pytest.approx(2.0, rel=0.05)
    assert fit["lines_per_n"] == pytest.approx(3.0, rel=0.05)
    cliffs = {c["level"]: c for c in scaling["cliffs"]}
    assert not cliffs["L1d"]["in_range"]
    assert cliffs["L2"]["prefetched_room"] == 0.5
    assert cliffs["L2"]["in_range"] and cliffs["L2"]["n"] == pytest.approx(2048 / 2.5, rel=0.05)
    # the table's 320-byte connections: 4096 / 320 = 12.8 to a page
    for run in scaling["runs"]:
        assert run["data_pages"] == pytest.approx(run["n"] * 320 / 4096, abs=8)
    tlb = scaling["tlb"]
    if tlb["available"]:
        assert tlb["n"] == round((tlb["reach_pages"] - tlb["intercept_pages"]) / tlb["pages_per_n"])
    else:
        assert tlb["reason"]
    advice = json.loads(perfsleuth(store, "advise", "--format", "json").stdout)
    assert any(f["kind"] == "cache-footprint" for f in advice["findings"])


def test_a_power_of_two_struct_fills_half_the_sets_and_overflows_them_early(
    examples_built, tmp_path
):
    store = tmp_path / "store"
    scaling = scaled_small_cache(store, examples_built / "conntable-compact")
    # 256-byte connections: line 0 sits at 16 of the 64 places in a page and the
    # prefetched line 1 at 16 others, so the 2,048 lines of the L2 hold 512 line 0s:
    # 512 connections, with the line 1s at half a line's room each 38% of the L2
    assert scaling["fit"]["lines_per_n"] == pytest.approx(2.0, rel=0.05)
    offsets = scaling["runs"][-1]["line_offsets"]
    by_residue = sorted(sum(offsets[r::4]) for r in range(4))
    assert sum(by_residue[2:]) > 0.99 * sum(offsets)  # two places of every four
    l2 = {c["level"]: c for c in scaling["cliffs"]}["L2"]
    assert l2["usable_share"] == pytest.approx(0.375, rel=0.05)
    assert l2["n"] == pytest.approx(512, rel=0.05) and l2["in_range"]
    shown = " ".join(perfsleuth(store, "cache", "show").stdout.split())  # as one line
    assert "a prefetched line nobody touched at 50% of a line's room" in shown
    assert f"{l2['usable_lines']:,} usable: the lines fill 38% of its sets' room" in shown


def test_constant_time_names_the_early_exit(examples_built, tmp_path):
    store = tmp_path / "store"
    variants = tmp_path / "secrets.txt"
    # a longer guess moves argv's strings on the stack: the constant-time check is
    # cleared only if every run's stack starts at the same address
    variants.write_text("s3cr3t-k3y-2025\nxxxxxxxxxxxxxxx\n" + "y" * 63 + "\n")
    program = str(examples_built / "secret_check")
    for function, extra in (("check_token", []), ("check_token_ct", ["--ct"])):
        perfsleuth(
            store, "record", "--mode", "cache", "--function", function, "--variants",
            str(variants), "--", program, *extra, "{secret}",
        )  # fmt: skip
    leaky = json.loads(perfsleuth(store, "cache", "show", "1", "--format", "json").stdout)
    verdict = leaky["functions"][0]["constant_time"]
    assert not verdict["constant_time"]
    assert verdict["differences"][0]["first_source"].endswith("secret_check.c:19")
    assert verdict["differences"][1]["first_source"].endswith("secret_check.c:16")
    assert cache_doc(store)["constant_time"]["constant_time"]


SKIPS_ZEROS = """
#include <stdio.h>
#include <string.h>
__attribute__((noinline)) int step(const char *s, size_t i) { return s[i] ^ 0x5a; }
int main(int argc, char **argv) {
    int acc = 0;
    for (size_t i = 0; argc > 1 && i < strlen(argv[1]); i++)
        if (argv[1][i] != '0') acc += step(argv[1], i);
    printf("%d\\n", acc);
    return 0;
}
"""


def test_a_secret_that_skips_the_function_is_a_difference_not_an_error(tmp_path):
    source, program = tmp_path / "skips.c", tmp_path / "skips"
    source.write_text(SKIPS_ZEROS)
    subprocess.run(["gcc", "-O2", "-g", "-o", str(program), str(source)], check=True)
    secrets, zeros = tmp_path / "secrets.txt", tmp_path / "zeros.txt"
    secrets.write_text("zz\n0000\n")
    zeros.write_text("0\n00\n")
    store = tmp_path / "store"
    record = ("record", "--mode", "cache", "--function", "step", "--variants")
    perfsleuth(store, *record, str(secrets), "--", str(program), "{secret}")
    [difference] = cache_doc(store)["constant_time"]["differences"]
    assert difference["what"] == "number of calls (2 with #1, 0 with #2)"
    shown = " ".join(perfsleuth(store, "cache", "show").stdout.split())
    assert "0 with #2): its callers' branches decide it; trace the caller" in shown
    never = perfsleuth(store, *record, str(zeros), "--", str(program), "{secret}", check=False)
    assert never.returncode == 2 and "never called it" in never.stderr


def test_unknown_function_lists_close_matches(examples_built, tmp_path):
    done = perfsleuth(
        tmp_path / "store", "record", "--mode", "cache", "--function", "handle_pkt",
        "--", str(examples_built / "conntable"), "10", check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "no such function" in done.stderr and "handle_packet" in done.stderr
    assert "Traceback" not in done.stderr
    assert (
        not (tmp_path / "store").exists()
        or "runs" not in perfsleuth(tmp_path / "store", "runs").stdout
    )


def test_inlined_and_uncalled_functions_say_so(examples_built, tmp_path):
    program = str(examples_built / "conntable")
    inlined = perfsleuth(tmp_path / "s", "record", "--mode", "cache", "--function", "next_random",
                         "--", program, "10", check=False)  # fmt: skip
    assert inlined.returncode == 2 and "inlined" in inlined.stderr
    uncalled = perfsleuth(tmp_path / "s", "record", "--mode", "cache", "--function", "latency_ns",
                          "--", program, "10", check=False)  # fmt: skip
    assert uncalled.returncode == 2 and "never called" in uncalled.stderr
    stripped = tmp_path / "conntable-stripped"
    subprocess.run(["strip", "-o", str(stripped), program], check=True)
    done = perfsleuth(tmp_path / "s", "record", "--mode", "cache", "--function", "handle_packet",
                      "--", str(stripped), "10", check=False)  # fmt: skip
    assert done.returncode == 2 and "is stripped" in done.stderr
    assert "Traceback" not in done.stderr
    profiled = perfsleuth(tmp_path / "s", "run", "--mode", "cache", "--", str(stripped),
                          "2000", "200000", check=False)  # fmt: skip
    assert profiled.returncode == 2 and "is stripped" in profiled.stderr


def test_without_debug_info_the_footprint_works_and_layout_says_why(tmp_path):
    source = Path(__file__).resolve().parents[2] / "examples" / "cache" / "conntable.c"
    binary = tmp_path / "conntable-nodebug"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(source)], check=True)
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "cache", "--function", "handle_packet",
               "--max-calls", "20", "--", str(binary), "50", "40")  # fmt: skip
    doc = cache_doc(store)
    assert doc["footprint"]["per_call"]["data_lines"]["median"] == 3
    assert not doc["layout"]["available"]
    assert "has no DWARF debug info" in doc["layout"]["reason"]

"""Library matching on hand-built profiles: inclusive share without double counting."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, library_match
from perfsleuth.formats import callgrind, pprof
from perfsleuth.model.counts import merged_name
from perfsleuth.model.profile import Frame, Profile, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo
from perfsleuth.model.states import RUNNABLE_IN_FUTEX
from perfsleuth.rules import load_rules
from perfsleuth.symbols import names

MAIN = Frame("main", "app", "/src/app.c", 10)
LOOP = Frame("build_index", "app", "/src/app.c", 42)
MALLOC = Frame("malloc", "libc.so.6", "./malloc/malloc.c", 3281)
INT_MALLOC = Frame("_int_malloc", "libc.so.6", "./malloc/malloc.c", 3766)
PAGE_FAULT = Frame("asm_exc_page_fault", "[kernel.kallsyms]", kernel=True)
WORK = Frame("compute", "app", "/src/app.c", 7)


def run_on(samples: list[tuple[list[Frame], float]], command: str = "./app") -> dict:
    builder = ProfileBuilder()
    for frames, weight in samples:
        builder.add(frames, weight, count=int(weight))
    ctx = Context(profile=builder.build(), run=RunInfo(command=command))
    return {f.rule: f for f in library_match.analyze(ctx)}


def test_allocator_share_counts_each_sample_once() -> None:
    found = run_on(
        [
            ([INT_MALLOC, MALLOC, LOOP, MAIN], 30),  # two matching frames: counted once
            ([PAGE_FAULT, MALLOC, LOOP, MAIN], 10),  # kernel work under malloc is inclusive
            ([WORK, MAIN], 60),
        ]
    )
    alloc = found["allocator.glibc"]
    assert alloc.share == 0.4
    assert alloc.details["self_share"] == 0.3
    assert alloc.estimated_gain <= alloc.share
    assert (alloc.function, alloc.file, alloc.line) == ("build_index", "/src/app.c", 42)


def test_allocator_fix_is_an_ld_preload_line_of_the_run() -> None:
    alloc = run_on([([MALLOC, LOOP, MAIN], 50), ([WORK, MAIN], 50)], "./app --big")[
        "allocator.glibc"
    ]
    command = alloc.fix["command"]
    assert command.startswith("LD_PRELOAD=") and command.endswith(" ./app --big")
    installed = library_match.installed_libraries(load_rules()[0].preload)
    assert alloc.details["installed"] == installed


def test_below_min_share_nothing_is_reported() -> None:
    assert run_on([([MALLOC, LOOP, MAIN], 1), ([WORK, MAIN], 99)]) == {}


def test_a_replacement_allocator_is_not_flagged() -> None:
    mi_malloc = Frame("malloc", "libmimalloc.so.2")
    assert "allocator.glibc" not in run_on([([mi_malloc, LOOP, MAIN], 50), ([WORK, MAIN], 50)])


def test_unknown_frames_match_by_dso() -> None:
    unknown_zlib = Frame("[unknown]", "libz.so.1.2.13")
    zlib = run_on([([unknown_zlib, LOOP, MAIN], 80), ([WORK, MAIN], 20)])["compression.zlib"]
    assert zlib.share == 0.8
    assert "[unknown] in libz.so.1.2.13" in zlib.evidence[0]


def test_a_programs_own_compress_is_not_zlib() -> None:
    """bzip2's own `compress` (and `uncompress`) ran 100% of its run: advise said
    "100.0% of the instructions are in zlib". Such names are zlib's only above zlib."""
    own = Frame("compress", "bzip2", "/src/bzip2.c", 1125)
    sort = Frame("mainSort", "bzip2", "/src/blocksort.c", 758)
    assert "compression.zlib" not in run_on([([sort, own, MAIN], 90), ([WORK, MAIN], 10)])
    static = Frame("deflate_slow", "app", "/src/zlib/deflate.c", 1900)
    zlib = run_on([([static, own, LOOP, MAIN], 70), ([WORK, MAIN], 30)])["compression.zlib"]
    assert zlib.share == 0.7
    assert (zlib.function, zlib.line) == ("build_index", 42)  # the call into compress
    in_libz = Frame("compress2", "libz.so.1")
    libz = run_on([([in_libz, LOOP, MAIN], 60), ([WORK, MAIN], 40)])["compression.zlib"]
    assert libz.share == 0.6


def test_template_arguments_are_elided_for_reading() -> None:
    name = "std::_Rb_tree<int, std::pair<int const, int>>::_M_insert(std::pair<int, int>&&)"
    assert names.elide_templates(name) == "std::_Rb_tree<…>::_M_insert(…)"


def test_small_shares_get_low_confidence() -> None:
    small = run_on([([MALLOC, LOOP, MAIN], 40), ([WORK, MAIN], 960)])["allocator.glibc"]
    large = run_on([([MALLOC, LOOP, MAIN], 400), ([WORK, MAIN], 600)])["allocator.glibc"]
    assert small.confidence < 0.7 <= large.confidence


def test_return_types_of_templates_do_not_hide_the_name() -> None:
    insert = Frame(
        "std::pair<std::_Rb_tree_iterator<int>, bool> std::_Rb_tree<int, int>::_M_insert(int&&)",
        "app",
    )
    assert "container.node-map" in run_on([([insert, LOOP, MAIN], 60), ([WORK, MAIN], 40)])


def test_overlapping_rules_say_so() -> None:
    vfprintf = Frame("__vfprintf_internal", "libc.so.6")
    insert = Frame("std::ostream& std::ostream::_M_insert<double>(double)", "libstdc++.so.6")
    found = run_on([([vfprintf, insert, LOOP, MAIN], 50), ([insert, LOOP, MAIN], 30), ([WORK], 20)])
    assert "50.0% is also counted by formatting.printf" in found["formatting.iostream"].evidence


def test_compiler_clone_suffixes_are_dropped_for_reading() -> None:
    assert names.elide_templates("parse(std::string const&) (.constprop.0.cold)") == ("parse(…)")


def test_off_cpu_waits_are_not_library_time() -> None:
    builder = ProfileBuilder(unit="ns")
    builder.add([MALLOC, LOOP, MAIN], 30, state="running")
    builder.add([MALLOC, LOOP, MAIN], 50, state="io")  # e.g. a page-in while in malloc
    builder.add([WORK, MAIN], 20, state="running")
    ctx = Context(profile=builder.build(), run=RunInfo(command="./app"))
    alloc = {f.rule: f for f in library_match.analyze(ctx)}["allocator.glibc"]
    assert alloc.share == 0.3
    assert "of the recorded time (on CPU)" in alloc.title


def test_cpython_c_frames_with_debug_info_are_not_the_call_site() -> None:
    """perf's stacks of pyenv's python3.11 (C files outside /usr): the json finding
    does not name the interpreter's _PyObject_MakeTpCall as the user's code."""
    encoder = Frame("encoder_listencode_dict", "_json.cpython-311-x86_64-linux-gnu.so")
    call = Frame("_PyObject_MakeTpCall", "libpython3.11.so.1.0", "/tmp/b/Objects/call.c", 214)
    evaluate = Frame("_PyEval_EvalFrameDefault", "python3.11", "/tmp/b/Python/ceval.c", 4336)
    found = run_on([([encoder, call, evaluate], 40)], command="python3 app.py")
    assert found["python.json"].function != "_PyObject_MakeTpCall"
    assert not library_match.is_user_code(call)
    assert library_match.is_user_code(WORK)


def test_equal_call_sites_are_named_the_same_whatever_the_sample_order() -> None:
    """Two call sites with the same weight: the finding names one by name, not by
    which came first (fleet advise over the same data gave either)."""
    parse = Frame("parse_rows", "app", "/src/app.c", 20)
    samples = [([MALLOC, LOOP, MAIN], 20), ([MALLOC, parse, MAIN], 20), ([WORK, MAIN], 60)]
    named = {run_on(order)["allocator.glibc"].function for order in (samples, samples[::-1])}
    assert named == {"build_index"}


def test_an_off_cpu_recording_s_preempted_time_is_no_cpu_time() -> None:
    """offcpu mode's 'running' is a thread preempted, waiting for a CPU."""
    samples = [([INT_MALLOC, MALLOC, LOOP, MAIN], 40.0), ([WORK, MAIN], 60.0)]
    for recorder, expected in (("perf+bpftrace", {"allocator.glibc"}), ("bpftrace", set())):
        builder = ProfileBuilder(unit="ns", meta={"recorder": recorder})
        for frames, weight in samples:
            builder.add(frames, weight, state="running")
        ctx = Context(profile=builder.build(), run=RunInfo(command="./app"))
        assert {f.rule for f in library_match.analyze(ctx)} & {"allocator.glibc"} == expected


def test_a_library_already_run_on_threads_is_not_told_to_go_parallel() -> None:
    """xz -T2's liblzma on two threads was told "xz -T0 / lzma_stream_encoder_mt"; it
    is told what is left, the format. On one thread the parallel fix stays."""
    lzma = Frame("lzma_code", "liblzma.so.5")
    serial, parallel = ProfileBuilder(), ProfileBuilder()
    serial.add([lzma, MAIN], 90, thread=Thread(10, name="xz"))
    serial.add([lzma, MAIN], 2, thread=Thread(11, name="xz"))  # a thread that touched it
    serial.add([MAIN], 10, thread=Thread(10, name="xz"))
    for tid in (11, 12):
        parallel.add([lzma, MAIN], 45, thread=Thread(tid, name="xz"))
    parallel.add([MAIN], 10, thread=Thread(10, name="xz"))
    said = {}
    for name, builder in (("serial", serial), ("parallel", parallel)):
        ctx = Context(profile=builder.build(), run=RunInfo(command="xz -T2 big.txt"))
        said[name] = {f.rule: f for f in library_match.analyze(ctx)}["compression.xz"]
    assert "xz -T0" in said["serial"].suggestion
    assert "xz -T0" not in said["parallel"].suggestion
    assert "already runs on 2 threads" in said["parallel"].suggestion
    assert "zstd" in said["parallel"].suggestion


def test_a_call_from_c_code_is_told_a_fix_c_has() -> None:
    """xmllint's XPath parser, C, was told to parse its numbers with std::from_chars;
    a C call site gets the rule's C fix, a C++ one its own."""
    strtod = Frame("____strtod_l_internal", "libc.so.6", "./stdlib/strtod_l.c", 1200)
    qsort = Frame("qsort_r", "libc.so.6", "./stdlib/msort.c", 300)
    parse_c = Frame("xmlXPathStringEvalNumber", "libxml2.so.2", "/src/xpath.c", 9801)
    parse_cc = Frame("Reader::number", "app", "/src/reader.cc", 77)
    for site, c_code in ((parse_c, True), (parse_cc, False)):
        found = run_on([([strtod, site, MAIN], 40), ([qsort, site, MAIN], 40), ([WORK, MAIN], 20)])
        parsing, sorting = (found[r].suggestion for r in ("parsing.strtod", "sort.qsort"))
        assert ("std::from_chars" in parsing) is not c_code, (site, parsing)
        assert ("Use std::sort" in sorting) is not c_code, (site, sorting)
        assert ("C has no" in parsing and "C has no" in sorting) is c_code, site


# bench/fresh_waits/sqlwriters.c (built without -g) recorded with `record --mode all`
# at load ~5 and exported with `perfsleuth export --pprof`: 4 writers on 2 CPUs, 30.5%
# of the run "running" while switched out (preempted, 14.8% inside the unlock's wake)
SQLWRITERS_ALL = Path(__file__).parent.parent / "fixtures" / "offcpu" / "sqlwriters-all.pb.gz"


def test_a_thread_preempted_in_an_unlock_is_not_on_the_cpu() -> None:
    """Each unlock's futex wake let the woken writer preempt the waker, which then
    waited for a CPU inside __lll_lock_wake: "15.1% of the recorded time (on CPU) is
    spent acquiring and releasing mutexes", ranked first (gain 13.6%), 14.8 points of it
    off the CPU."""
    profile = pprof.read(SQLWRITERS_ALL)
    profile.meta["recorder"] = "perf+bpftrace"  # the run's, which its export does not keep
    ctx = Context(profile=profile, run=RunInfo(command="./sqlwriters", mode="all"))
    assert "locking.mutex-on-cpu" not in {f.rule for f in library_match.analyze(ctx)}


CJSON_COUNT = Path(__file__).resolve().parents[1] / "fixtures" / "cachegrind.out.cjson"


def test_a_statically_linked_librarys_static_helpers_count_by_source_file() -> None:
    """cJSON 1.7.15's cJSON.c built into a driver (gcc -O2 -g), counted by cachegrind
    (`valgrind --tool=cachegrind ./cj data.json 3`: self counts only): parse_value,
    print_value, ensure... carry no cJSON_ prefix, yet are most of the library's time."""
    profile = callgrind.read(CJSON_COUNT)
    in_cjson = sum(
        w for s, w, *_ in profile.rows() if profile.frames[s[0]].file.endswith("cJSON.c")
    )
    prefixed = sum(
        w for s, w, *_ in profile.rows() if profile.frames[s[0]].function.startswith("cJSON_")
    )
    assert prefixed / profile.total < 0.02 < 0.15 < in_cjson / profile.total
    ctx = Context(profile=profile, run=RunInfo(command="./cj data.json 3"))
    json = {f.rule: f for f in library_match.analyze(ctx)}["json.parser"]
    assert json.share == pytest.approx(in_cjson / profile.total)
    assert json.details["self_share"] == json.share  # a cachegrind file records no calls
    assert json.estimated_gain == pytest.approx(json.share * 0.6)
    assert any(line.startswith("parse_value ") for line in json.evidence)


def test_a_programs_own_file_named_like_a_librarys_is_not_the_library() -> None:
    own = Frame("parse_value", "app", "/src/app/cJSON.c", 12)  # no cJSON_ function anywhere
    assert "json.parser" not in run_on([([own, MAIN], 50), ([WORK, MAIN], 50)])
    entry = Frame("cJSON_Parse", "app", "/src/app/cJSON.c", 1100)
    json = run_on([([own, entry, MAIN], 5), ([own, MAIN], 45), ([WORK, MAIN], 50)])["json.parser"]
    assert json.share == 0.5 and json.details["self_share"] == 0.5


def test_a_shared_librarys_static_helpers_count_by_dso() -> None:
    helper = Frame("parse_string", "/usr/lib/x86_64-linux-gnu/libcjson.so.1.7.15")
    assert run_on([([helper, MAIN], 30), ([WORK, MAIN], 70)])["json.parser"].share == 0.3


# `perfsleuth export --pprof` of a wall run of bench/fresh_waits/lotpipe (Rust: workers
# pop jobs from a parking_lot::Mutex + Condvar queue and notify_one the producer, which
# preempts them): wallsnap stopped them runnable in the futex wake's syscall
LOTPIPE_WALL = Path(__file__).resolve().parents[1] / "fixtures" / "offcpu" / "lotpipe-wall.pb.gz"


def test_a_wall_thread_runnable_in_a_futex_call_is_not_on_the_cpu() -> None:
    """Wall mode read "24.5% of CPU time is in locking", ranked first (gain 12.2%):
    parking_lot::Condvar::notify_one's futex wake, where all mode saw the same threads
    switched out in __schedule."""
    profile = pprof.read(LOTPIPE_WALL)
    profile.meta["recorder"] = "wallsnap"  # the run's, which its export does not keep
    marked = {i for i, f in enumerate(profile.frames) if f.function == RUNNABLE_IN_FUTEX}
    assert marked

    def running_in_futex(p: Profile) -> float:
        rows = p.rows()
        return sum(w for stack, w, _c, _t, s in rows if s == "running" and stack[0] in marked)

    assert running_in_futex(profile) > 0.1 * profile.total
    assert running_in_futex(library_match.on_cpu_part(profile)) == 0
    profile.meta["recorder"] = "perf"
    assert running_in_futex(library_match.on_cpu_part(profile)) == running_in_futex(profile)


def test_go_garbage_collection_is_a_runtime_setting_with_its_environment() -> None:
    """gofmt: 13% of the samples under the collector's workers and allocation assists;
    GOGC=400 cut its CPU time by 25% with no code change."""
    worker = Frame("runtime.gcBgMarkWorker", "gofmt")
    drain = Frame("runtime.gcDrain", "gofmt")
    scan = Frame("runtime.scanobject", "gofmt")
    assist = Frame("runtime.gcAssistAlloc", "gofmt")
    alloc = Frame("runtime.mallocgc", "gofmt")
    printer = Frame("go/printer.(*printer).print", "gofmt")
    found = run_on(
        [([scan, drain, worker], 10), ([scan, assist, alloc, printer], 5), ([printer], 85)],
        "gofmt -l src",
    )
    gc = found["runtime.go-gc"]
    assert gc.kind == "runtime-tuning" and gc.share == pytest.approx(0.15)
    assert gc.fix == {"env": {"GOGC": "400"}, "command": "GOGC=400 gofmt -l src"}
    # mallocgc's own time is the allocation's, not the collector's
    assert "runtime.go-gc" not in run_on([([alloc, printer], 20), ([printer], 80)])


def test_locale_collation_is_a_runtime_setting_of_the_c_locale() -> None:
    """GNU sort in en_US.UTF-8: 78.5% of its samples under strcoll_l (its static helpers
    get_next_seq and findidx below it) and no finding; LC_ALL=C cut its CPU time by 75%."""
    strcoll = Frame("strcoll_l", "libc.so.6", file="./string/strcoll_l.c")
    next_seq = Frame("get_next_seq", "libc.so.6", file="./string/strcoll_l.c")
    compare = Frame("[unknown] sort+0x9ad0", "sort")
    strcmp = Frame("__strcmp_evex", "libc.so.6")
    found = run_on(
        [([next_seq, strcoll, compare], 50), ([strcoll, compare], 30), ([compare], 20)],
        "sort -o out in",
    )
    collation = found["locale.collation"]
    assert collation.kind == "runtime-tuning" and collation.share == pytest.approx(0.8)
    assert collation.fix == {"env": {"LC_ALL": "C"}, "command": "LC_ALL=C sort -o out in"}
    assert "order of non-ASCII text may change" in collation.suggestion
    # a byte comparison of the program's own (strcmp, memcmp) is not the locale's
    assert "locale.collation" not in run_on([([strcmp, compare], 80), ([compare], 20)])


def test_the_jvms_jit_compilers_are_a_runtime_setting_counted_in_libjvm_only() -> None:
    """javac of a 3,000-method class: 56% of its samples in the C1 and C2 compiler
    threads; -XX:TieredStopAtLevel=1 cut its CPU time by half. HotSpot's class names
    (`Node::`, `Compile::`) are anyone's: in a program's own code they are not the JIT."""
    loop = Frame("CompileBroker::compiler_thread_loop()", "libjvm.so")
    split = Frame("PhaseChaitin::Split(unsigned int, ResourceArea*)", "libjvm.so")
    own_node = Frame("Node::clone() const", "app", "/src/graph.cc", 40)
    interpreted = Frame("[unknown]", "anon")
    found = run_on([([split, loop], 60), ([interpreted], 40)], "javac -d out Big.java")
    jit = found["runtime.jvm-jit"]
    assert jit.kind == "runtime-tuning" and jit.share == pytest.approx(0.6)
    assert jit.fix["env"] == {"JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1"}
    assert "runtime.jvm-jit" not in run_on([([own_node, MAIN], 60), ([MAIN], 40)])


# An interpreter's sort builtin over libc's qsort with a comparator calling back into the
# interpreter (MuJS's Ap_sort, jsR_run): a cycle of the call graph, which the stacks
# rebuilt from it walk as one unit, entered from main.
INTERPRETER_SORT = """events: Ir
ob=./app
fl=/src/main.c
fn=main
5 10
cob=./app
cfi=/src/run.c
cfn=run
calls=1 1
6 380
fl=/src/run.c
fn=run
10 300
cob=./app
cfi=/src/array.c
cfn=sort_builtin
calls=1 1
20 280
fl=/src/array.c
fn=sort_builtin
30 10
cob=/usr/lib/x86_64-linux-gnu/libc.so.6
cfi=./stdlib/msort.c
cfn=qsort
calls=1 1
31 270
fn=cmp
40 40
cob=./app
cfi=/src/run.c
cfn=run
calls=8 1
41 200
ob=/usr/lib/x86_64-linux-gnu/libc.so.6
fl=./stdlib/msort.c
fn=qsort
300 5
cob=/usr/lib/x86_64-linux-gnu/libc.so.6
cfi=./stdlib/msort.c
cfn=msort_with_tmp
calls=1 1
301 265
fn=msort_with_tmp
200 20
cob=/usr/lib/x86_64-linux-gnu/libc.so.6
cfi=./string/memmove.S
cfn=memcpy
calls=2 1
201 5
cob=./app
cfi=/src/array.c
cfn=cmp
calls=8 1
202 240
fl=./string/memmove.S
fn=memcpy
1 5
"""


def test_a_count_runs_qsort_is_its_own_code_called_from_its_direct_caller() -> None:
    """MuJS 1.3.2's qsort was "5.1% of the instructions" called from jsR_run, the cycle's
    entry, where callgrind counts 24.4% under it from Ap_sort, 23.0% of it the
    JavaScript comparator: the share is qsort's code and the library code it calls, the
    comparator said apart, the call site its caller's call."""
    data = callgrind.parse_bytes(INTERPRETER_SORT.encode(), "callgrind.out.sort")
    ctx = Context(
        profile=callgrind.profile_of(data),
        run=RunInfo(command="./app"),
        counts=callgrind.exact_counts(data).merged_recursion(),
    )
    found = {f.rule: f for f in library_match.analyze(ctx)}["sort.qsort"]
    assert found.share == pytest.approx((5 + 20 + 5) / 390)
    assert (found.function, found.file, found.line) == ("sort_builtin", "/src/array.c", 31)
    assert "69.2% of the instructions run under it" in " ".join(found.evidence)
    assert "calls back, which its replacement does not make faster: cmp (61.5%)" in " ".join(
        found.evidence
    )


SORTNATIVE_COUNT = Path(__file__).resolve().parents[1] / "fixtures" / "callgrind.out.sortnative"


def test_a_captured_interpreters_qsort_is_told_apart_from_its_comparator() -> None:
    """sortnative.c (tests/fixtures/src), counted by callgrind: its sort builtin runs
    through call'2 and its comparator calls back into the interpreter, as MuJS's does.
    The stacks gave qsort 47.7% of the run called from run(), the cycle's entry; it is
    qsort's own code called from sort_builtin(), the comparator said apart."""
    data = callgrind.parse(SORTNATIVE_COUNT)
    calls: dict[tuple[str, str], int] = {}
    for (caller, callee, _file, _line), (_count, cost, *_rest) in data.call_sites.items():
        key = (merged_name(caller[1]), merged_name(callee[1]))
        calls[key] = calls.get(key, 0) + cost
    entered = calls["sort_builtin", "qsort"]
    called_back = calls["msort_with_tmp.part.0", "cmp"]
    ctx = Context(
        profile=callgrind.profile_of(data),
        run=RunInfo(command="./sortnative"),
        counts=callgrind.exact_counts(data).merged_recursion(),
    )
    total = ctx.profile.total
    found = {f.rule: f for f in library_match.analyze(ctx)}["sort.qsort"]
    assert found.function == "sort_builtin" and found.file.endswith("sortnative.c")
    assert found.share == pytest.approx((entered - called_back) / total)
    said = " ".join(found.evidence)
    assert f"{100 * entered / total:.1f}% of the instructions run under it" in said
    assert f"cmp ({100 * called_back / total:.1f}%)" in said


def test_cpythons_compiler_is_a_cost_but_for_compileall_whose_job_it_is() -> None:
    """eval() of text compiles it on every call: 94% of eval_text.py, -97% with code
    objects compiled once. Under compileall the same frames are the job: its stacks
    py-spy could not read (native frames only, 23% of a run) are not a finding either."""
    compile_ = Frame("PyRun_StringFlags", "python3.11")
    render = Frame("render", "[python:render]", "/tmp/render.py", 11)
    found = run_on([([compile_, render], 90), ([render], 10)], "python3 render.py")
    assert found["python.compile"].share == pytest.approx(0.9)
    assert (found["python.compile"].function, found["python.compile"].line) == ("render", 11)
    assert "python.interpreter" not in found  # the compiler is not the interpreter's own
    builtin = Frame("builtin_compile", "libpython3.11.so.1.0")
    job = Frame("compile_file", "[python:compileall]", "/usr/lib/python3.11/compileall.py", 240)
    stalled = Frame("[unknown]", "python3.11")
    compileall = run_on(
        [([builtin, job], 60), ([compile_, stalled], 20), ([job], 20)],
        "python3 -m compileall lib",
    )
    assert "python.compile" not in compileall
    # ast.parse is a parse the caller wants (pydoc's signatures, a linter's, a formatter's)
    parse = Frame("parse", "[python:ast]", "/usr/lib/python3.11/ast.py", 50)
    assert "python.compile" not in run_on([([compile_, parse, render], 60), ([render], 40)])


def test_compiled_patterns_matching_is_not_told_to_precompile() -> None:
    """pygments highlighting Python: 66.7% under its lexer's compiled pattern.match, and
    python.re said "precompile", gain 60%. Through re.match (the module's function) the
    pattern is looked up or compiled on each call: that is python.re's."""
    match = Frame("_sre_SRE_Pattern_match", "libpython3.11.so.1.0")
    engine = Frame("sre_ucs1_match", "libpython3.11.so.1.0")
    package = "/venv/lib/python3.11/site-packages/pygments/lexer.py"
    lexer = Frame("RegexLexer.get_tokens_unprocessed", "[python:pygments.lexer]", package, 713)
    runpy = Frame("_run_code", "[python:runpy]", "<frozen runpy>", 88)
    found = run_on([([engine, match, lexer, runpy], 65), ([lexer, runpy], 35)], "python3 -m pg")
    assert "python.re" not in found
    matching = found["python.re-matching"]
    assert matching.share == pytest.approx(0.65) and matching.confidence < 0.5
    assert matching.file != "<frozen runpy>"  # the stdlib's frozen modules are no user's
    module_match = Frame("match", "[python:re]", "/usr/lib/python3.11/re/__init__.py", 166)
    found = run_on([([engine, match, module_match, MAIN], 60), ([MAIN], 40)], "python3 app.py")
    assert found["python.re"].share == pytest.approx(0.6)


def test_cpythons_collector_is_its_own_finding_not_the_interpreter_running_code() -> None:
    """gc_churn.py: 80% of its samples under gc_collect_main (python mode keeps the `gc`
    frames above the line), and "the interpreter itself running Python code" was said of
    them; the collector off around the build and gc.freeze() after saved 90%."""
    collect = Frame("gc_collect_main", "libpython3.11.so.1.0")
    reset = Frame("gc_reset_refs", "libpython3.11.so.1.0")
    load = Frame("load.<locals>.<listcomp>", "[python:gc_churn]", "/tmp/gc_churn.py", 13)
    found = run_on([([reset, collect, load], 60), ([collect, load], 20), ([load], 20)])
    collector = found["python.gc"]
    assert collector.share == pytest.approx(0.8) and collector.line == 13
    assert "gc.freeze()" in collector.suggestion
    assert "python.interpreter" not in found


@pytest.mark.parametrize(
    ("rule", "frame", "fix"),
    [
        # 20,000 documents through jsonschema's Draft202012Validator: jsonschema-rs
        # validated them in 3% of the CPU time
        (
            "python.jsonschema",
            Frame("properties", "[python:jsonschema._keywords]", "/venv/jsonschema/k.py", 291),
            "jsonschema_rs.validator_for",
        ),
        # 150,000 log timestamps through datetime.strptime: fromisoformat cut the
        # script's CPU by 80%
        (
            "python.strptime",
            Frame("_strptime", "[python:_strptime]", "/usr/lib/python3.11/_strptime.py", 314),
            "datetime.fromisoformat",
        ),
        # 120,000 debug records to a file: the level at INFO cut the CPU time by 97%
        (
            "python.logging",
            Frame(
                "Logger.debug", "[python:logging]", "/usr/lib/python3.11/logging/__init__.py", 1477
            ),
            "logger.setLevel(logging.INFO)",
        ),
    ],
)
def test_pure_python_libraries_are_told_of_their_compiled_replacements(
    rule: str, frame: Frame, fix: str
) -> None:
    """Each had been told only "the interpreter running Python code" (82%, 74%, 85%)."""
    loop = Frame("<module>", "[python:app]", "/tmp/app.py", 6)
    found = run_on([([frame, loop], 70), ([loop], 30)], "python3 app.py")
    assert found[rule].share == pytest.approx(0.7) and found[rule].line == 6
    assert fix in found[rule].suggestion

"""Cost classes on hand-built profiles: the API boundary, classes inside others, the
user's line, classes covered by library rules, threads, and waits inferred."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.analyzers import Context, cost_classes
from perfsleuth.formats import callgrind
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo
from perfsleuth.rules import load_classes


def libc(function: str, source: str = "", line: int = 1) -> Frame:
    return Frame(function, "libc.so.6", source, line if source else 0)


MAIN = Frame("main", "app", "/src/app.c", 10)
LOG = Frame("log_event", "app", "/src/logger.cc", 41)
WORK = Frame("compute", "app", "/src/app.c", 7)
CMP = Frame("by_key", "app", "/src/app.c", 20)
WRITE = libc("write", "./io/../sysdeps/unix/sysv/linux/write.c", 26)
SYSCALL = Frame("do_syscall_64", "[kernel.kallsyms]", kernel=True)
VFS_WRITE = Frame("vfs_write", "[kernel.kallsyms]", kernel=True)
SNPRINTF = libc("snprintf", "./stdio-common/snprintf.c", 31)
VFPRINTF = libc("__vfprintf_internal", "./stdio-common/vfprintf-internal.c")
ITOA = libc("_itoa_word", "./stdio-common/_itoa.h")
PRINTF = libc("printf", "./stdio-common/printf.c", 28)
FILE_WRITE = libc("_IO_new_file_write", "./libio/fileops.c")
MEMSET = libc("__memset_avx2_unaligned_erms")
FAULT = Frame("asm_exc_page_fault", "[kernel.kallsyms]", kernel=True)
CLEAR = Frame("clear_page_erms", "[kernel.kallsyms]", kernel=True)
MALLOC = libc("malloc", "./malloc/malloc.c", 3281)
QSORT = libc("qsort", "./stdlib/msort.c")
MSORT = libc("msort_with_tmp.part.0", "./stdlib/msort.c")
RELEASE = Frame(
    "std::_Sp_counted_base<(__gnu_cxx::_Lock_policy)2>::_M_release()",
    "app",
    "/usr/include/c++/12/bits/shared_ptr_base.h",
    346,
)
LOCK = libc("pthread_mutex_lock", "./nptl/pthread_mutex_lock.c")
FDATASYNC = libc("fdatasync", "./misc/../sysdeps/unix/sysv/linux/fdatasync.c", 28)
JIT = Frame("[unknown]", "//anon")
ONE = Thread(1, 1, "app")
TWO = Thread(2, 1, "app")


def findings(samples, *, run: RunInfo | None = None, threads=(ONE,), recorder="") -> dict:
    builder = ProfileBuilder(unit="ns", meta={"recorder": recorder})
    for i, (frames, weight) in enumerate(samples):
        builder.add(frames, weight, count=int(weight), thread=threads[i % len(threads)])
    ctx = Context(profile=builder.build(), run=run or RunInfo(command="./app"))
    return {f.rule: f for f in cost_classes.analyze(ctx)}


def test_write_per_record_names_the_callers_line_and_the_fix() -> None:
    found = findings(
        [
            ([SYSCALL, WRITE, LOG, MAIN], 50),
            ([VFS_WRITE, SYSCALL, WRITE, LOG, MAIN], 29),
            ([WORK, MAIN], 21),
        ]
    )
    write = found["class.syscall.write"]
    assert write.share == pytest.approx(0.79)
    assert (write.function, write.file, write.line) == ("log_event", "/src/logger.cc", 41)
    assert "logger.cc:41" in write.title and "write(2)" in write.title
    assert "buffer" in write.suggestion.lower()
    assert 0 < write.gain_low <= write.estimated_gain <= write.gain_high <= write.share
    assert write.gain_basis


def test_a_write_under_printf_is_the_writes_cost_and_printf_keeps_its_own() -> None:
    samples = [
        ([SYSCALL, WRITE, FILE_WRITE, VFPRINTF, PRINTF, LOG, MAIN], 60),
        ([ITOA, VFPRINTF, PRINTF, LOG, MAIN], 25),
        ([WORK, MAIN], 15),
    ]
    classes = load_classes()
    builder = ProfileBuilder(unit="ns")
    for frames, weight in samples:
        builder.add(frames, weight)
    profile = builder.build()
    attributed = cost_classes.attribute(profile, classes, [])
    assert attributed.costs["syscall.write"].weight == 60
    assert attributed.costs["format.printf"].weight == 25


def test_the_boundary_takes_the_time_under_the_users_call() -> None:
    """qsort's comparator runs under qsort: sorting's cost, from the user's caller."""
    found = findings(
        [([CMP, MSORT, QSORT, WORK, MAIN], 40), ([MSORT, QSORT, WORK, MAIN], 40), ([MAIN], 20)]
    )
    # the sort.qsort rule (its own finding: "std::sort") does not speak for the class,
    # which goes alongside it with "sort less"
    assert "class.sort.sorting" in found
    assert "sort once" in found["class.sort.sorting"].suggestion
    assert found["class.sort.sorting"].share == pytest.approx(0.8)
    classes = load_classes()
    builder = ProfileBuilder(unit="ns")
    builder.add([CMP, MSORT, QSORT, WORK, MAIN], 40)
    cost = cost_classes.attribute(builder.build(), classes, []).costs["sort.sorting"]
    assert cost.weight == 40 and dict(cost.boundary) == {"qsort": 40}
    assert next(iter(cost.sites)).function == "compute"


def test_page_faults_under_memset_are_the_faults_cost() -> None:
    found = findings(
        [
            ([CLEAR, FAULT, MEMSET, WORK, MAIN], 67),
            ([FAULT, WORK, MAIN], 10),
            ([WORK, MAIN], 23),
        ]
    )
    fault = found["class.kernel.page-fault"]
    assert fault.share == pytest.approx(0.77)
    assert fault.function == "compute"
    assert "mem.string" not in {f.details["class"] for f in found.values()}


def test_reference_counting_self_time_is_a_finding() -> None:
    found = findings([([RELEASE, WORK, MAIN], 82), ([WORK, MAIN], 18)])
    refcount = found["class.sync.refcount"]
    assert refcount.share == pytest.approx(0.82)
    assert "const reference" in refcount.suggestion


def test_a_class_a_library_rule_covers_gets_no_finding() -> None:
    """snprintf's time is the formatting.printf rule's finding, with its replacement."""
    found = findings([([ITOA, VFPRINTF, SNPRINTF, LOG, MAIN], 80), ([WORK, MAIN], 20)])
    assert "class.format.printf" not in found


def test_locks_need_two_threads() -> None:
    samples = [([LOCK, WORK, MAIN], 60), ([WORK, MAIN], 40)]
    assert "class.sync.locks" not in findings(samples)
    builder = ProfileBuilder(unit="ns")
    builder.add([LOCK, WORK, MAIN], 30, thread=ONE)
    builder.add([LOCK, WORK, MAIN], 30, thread=TWO)
    profile = builder.build()
    found = cost_classes.attribute(profile, load_classes(), [])
    assert found.threads == 2 and found.costs["sync.locks"].weight == 60


def test_jit_code_is_named_as_such_and_makes_no_finding() -> None:
    classes = load_classes()
    builder = ProfileBuilder(unit="ns")
    builder.add([JIT, WORK, MAIN], 90)
    cost = cost_classes.attribute(builder.build(), classes, []).costs
    assert set(cost) == {"jit.anonymous"}
    assert findings([([JIT, WORK, MAIN], 90), ([WORK, MAIN], 10)]) == {}


def test_a_process_mostly_off_the_cpu_gets_its_waits() -> None:
    """sqlite3 in autocommit: on the CPU 2% of the run, half of that in fdatasync."""
    run = RunInfo(command="sqlite3 db", mode="cpu", duration_s=10.0)
    found = findings([([FDATASYNC, WORK, MAIN], 1e8), ([WORK, MAIN], 1e8)], run=run)
    sync = found["class.syscall.fsync"]
    assert sync.share > 0.95
    assert "(inferred)" in sync.title and "transaction" in sync.suggestion
    assert "on the CPU only 2.0%" in " ".join(sync.evidence)


def test_a_busy_process_is_not_inferred_to_wait() -> None:
    run = RunInfo(command="./app", mode="cpu", duration_s=1.0)
    found = findings([([FDATASYNC, WORK, MAIN], 1e8), ([WORK, MAIN], 9e8)], run=run)
    assert found["class.syscall.fsync"].share == pytest.approx(0.1)


def test_every_class_has_advice_and_a_basis() -> None:
    classes = load_classes()
    assert len({c.id for c in classes}) == len(classes) >= 15
    ids = {c.id for c in classes}
    for cls in classes:
        assert cls.apply and cls.source and set(cls.inside) <= ids
        assert cls.saving_range[0] <= cls.saving <= cls.saving_range[1]


def test_class_patterns_are_anchored_so_one_alternation_keeps_their_order() -> None:
    for cls in load_classes():
        assert all(p.pattern.startswith("^") for p in cls.functions), cls.id
    frames = [libc("__strchrnul_evex"), libc("_IO_default_xsputn")]
    classes = load_classes()
    ids = [classes[i].id for i in cost_classes.frame_classes(frames, classes)]
    assert ids == ["format.printf", "format.printf"]  # not stdio's or string's


def test_a_rule_matching_below_the_boundary_does_not_cover_the_class() -> None:
    """regcomp per call allocates: the allocator rule matches, but the fix is the regex's."""
    regcomp = libc("regcomp", "./posix/regcomp.c")
    found = findings([([MALLOC, regcomp, LOG, MAIN], 70), ([regcomp, LOG, MAIN], 10), ([MAIN], 20)])
    assert found["class.regex.compile"].share == pytest.approx(0.8)


def test_rusts_regex_matching_is_no_finding_its_compiling_is() -> None:
    """ripgrep's time in Rust's regex (a DFA) is its job; a Regex built per line is not."""
    search = Frame(
        "regex_automata::hybrid::search::find_fwd", "rg", "/root/.cargo/registry/x.rs", 1
    )
    build = Frame("regex_syntax::ast::parse::ParserI<P>::parse_with_comments", "app")
    grep = Frame("app::grep", "app", "/src/main.rs", 9)
    assert findings([([search, grep, MAIN], 90), ([MAIN], 10)]) == {}
    found = findings([([build, grep, MAIN], 90), ([MAIN], 10)])
    assert set(found) == {"class.regex.compile"}


def test_a_write_under_iostream_is_not_covered_by_the_iostream_rule() -> None:
    """std::endl per line: a flush, so one write(2) per line; the fix is the write's."""
    flush = Frame("std::ostream::flush()", "libstdc++.so.6")
    endl = Frame("std::basic_ostream<char>& std::endl<char>(std::basic_ostream<char>&)", "app")
    found = findings([([SYSCALL, WRITE, flush, endl, LOG, MAIN], 70), ([WORK, MAIN], 30)])
    assert found["class.syscall.write"].share == pytest.approx(0.7)


def test_a_python_programs_writes_are_not_covered_by_the_interpreter_rule() -> None:
    """The interpreter rule claims leaf samples only: a write(2) under Python code is
    the write's."""
    py = Frame("<module>", "[python:app]", "/src/app.py", 10)
    write_impl = Frame("_Py_write_impl", "libpython3.11.so.1.0")
    found = findings([([SYSCALL, WRITE, write_impl, py], 60), ([py], 40)])
    assert found["class.syscall.write"].share == pytest.approx(0.6)
    assert found["class.syscall.write"].function == "<module>"


def test_a_fresh_patterns_dfa_and_its_regfree_are_the_compiles_cost() -> None:
    """glibc builds a new pattern's DFA states while regexec runs and frees them in
    regfree: compiled once, both go; the matching itself stays the engine's."""
    regexec = libc("regexec", "./posix/regexec.c")
    search = libc("re_search_internal", "./posix/regexec.c")
    trtable = libc("build_trtable", "./posix/regexec.c")
    regfree = libc("regfree", "./posix/regcomp.c")
    dfa = libc("free_dfa_content", "./posix/regcomp.c")
    check = libc("check_matching", "./posix/regexec.c")
    found = findings(
        [
            ([trtable, search, regexec, WORK, MAIN], 40),
            ([MALLOC, dfa, regfree, WORK, MAIN], 30),
            ([check, search, regexec, WORK, MAIN], 15),
            ([WORK, MAIN], 15),
        ]
    )
    assert found["class.regex.compile"].share == pytest.approx(0.7)
    assert found["class.regex.engines"].share == pytest.approx(0.15)


def test_a_clone_is_its_allocation_and_its_copy() -> None:
    clone = Frame(
        "<alloc::vec::Vec<T,A> as core::clone::Clone>::clone", "app", "/rustc/x/vec.rs", 1
    )
    memcpy = libc("__memmove_avx_unaligned_erms")
    rust_alloc = Frame("alloc::alloc::alloc", "app", "/rustc/x/alloc.rs", 1)
    found = findings([([memcpy, clone, WORK, MAIN], 50), ([rust_alloc, clone, WORK, MAIN], 30),
                      ([WORK, MAIN], 20)])  # fmt: skip
    assert found["class.alloc.malloc"].share == pytest.approx(0.8)
    assert "class.mem.string" not in found


def test_a_stripped_programs_caller_is_not_the_c_runtime() -> None:
    """sed -E: nameless frames of the stripped program, then libc's start-up."""
    re_search = libc("re_search", "./posix/regexec.c")
    transit = libc("transit_state_mb", "./posix/regexec.c")
    nameless = Frame("[unknown]", "sed")
    start = libc("__libc_start_call_main", "./csu/libc_start_call_main.h", 58)
    found = findings([([transit, re_search, nameless, start], 90), ([nameless, start], 10)])
    engines = found["class.regex.engines"]
    assert "__libc_start_call_main" not in engines.title
    assert engines.function == "re_search"


def test_a_preempted_thread_s_time_in_a_class_is_not_cpu_time() -> None:
    """An all-mode run keeps a preempted thread's switch-outs as "running" (eBPF's stack
    through __schedule): it waits for a CPU there, it spends none in the class."""
    switched_out = [Frame(f, "[kernel.kallsyms]", kernel=True) for f in ("__schedule", "schedule")]
    on_cpu = findings([([MSORT, QSORT, MAIN], 60), ([WORK, MAIN], 40)])
    assert any(rule.startswith("class.") for rule in on_cpu)
    samples = [([*switched_out, MSORT, QSORT, MAIN], 60), ([WORK, MAIN], 40)]
    assert findings(samples, recorder="perf+bpftrace") == {}
    assert findings(samples).keys() == on_cpu.keys()  # perf's samples in the scheduler ran


def test_a_rust_programs_caller_is_its_function_not_valgrinds_below_main() -> None:
    """A Rust program's format! counted by callgrind (rustc 1.95): every frame up to
    main is in Rust's std (its call into format_inner inlined from alloc/src/fmt.rs),
    and valgrind's `(below main)` has the file `???`: that was taken for user code."""
    std = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/"
    stack = [
        Frame("alloc::fmt::format::format_inner", "rsx", std + "core/src/fmt/mod.rs", 786),
        Frame("rsx::main", "rsx", std + "alloc/src/fmt.rs", 659),
        Frame("std::sys::backtrace::__rust_begin_short_backtrace", "rsx", std + "core/x.rs", 250),
        Frame("std::rt::lang_start::{{closure}}", "rsx", std + "std/src/rt.rs", 206),
        Frame("main", "rsx", "???", 0),
        libc("(below main)", "./csu/../sysdeps/nptl/libc_start_call_main.h", 58),
        libc("__libc_start_main@@GLIBC_2.34", "./csu/../csu/libc-start.c", 360),
        Frame("(below main)", "rsx", "???", 0),
    ]  # fmt: skip
    found = findings([(stack, 80), ([stack[1], *stack[4:]], 20)])
    assert found["class.format.printf"].function == "rsx::main"


def test_rusts_allocator_shims_are_allocation_not_its_callers() -> None:
    """Rust 1.95 calls malloc and free through __rustc::__rust_alloc / __rdl_alloc (std's
    sys/alloc/unix.rs): a free was 'called from __rustc::__rdl_dealloc at unix.rs:48'."""
    std = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/"
    rdl = Frame("__rustc::__rdl_dealloc", "rsx", std + "std/src/sys/alloc/unix.rs", 48)
    shim = Frame("__rustc::__rust_dealloc", "rsx", "???", 0)
    free = libc("free", "./malloc/malloc.c", 3352)
    main = Frame("rsx::main", "rsx", std + "alloc/src/alloc.rs", 115)  # a drop, inlined
    found = findings([([free, rdl, shim, main], 60), ([main], 40)])
    alloc = found["class.alloc.malloc"]
    assert alloc.function == "rsx::main" and "from rsx::main at alloc.rs:115" in alloc.title


def test_a_class_beside_a_library_rule_says_the_time_they_both_count() -> None:
    """Allocate less and a faster allocator are two fixes for the same time: the class's
    finding says how much of it the allocator rule's counts too, so the gains do not
    read as adding up."""
    free = libc("free", "./malloc/malloc.c", 3352)
    found = findings([([MALLOC, WORK, MAIN], 30), ([free, WORK, MAIN], 10), ([WORK, MAIN], 60)])
    alloc = found["class.alloc.malloc"]
    assert alloc.details["also_counted_by"] == {"allocator.glibc": pytest.approx(0.4)}
    assert any("40.0% is also counted by allocator.glibc" in e for e in alloc.evidence)
    rust_alloc = Frame("alloc::alloc::alloc", "app", "/rustc/x/alloc.rs", 1)
    alone = findings([([rust_alloc, WORK, MAIN], 40), ([WORK, MAIN], 60)])["class.alloc.malloc"]
    assert "also_counted_by" not in alone.details
    assert not any("also counted" in e for e in alone.evidence)


READ = libc("read", "./io/../sysdeps/unix/sysv/linux/read.c", 26)
COPY = Frame("_copy_to_iter", "[kernel.kallsyms]", kernel=True)
ENTRY = Frame("entry_SYSCALL_64", "[kernel.kallsyms]", kernel=True)
UNDER_READ = [SYSCALL, READ, WORK, MAIN]
REST = ([WORK, MAIN], 20)


def test_reads_that_spend_their_time_copying_the_bytes_are_not_told_to_read_more() -> None:
    """GNU grep's read(2) time was all the page cache's bytes copied, and it was told to
    read in bigger blocks (it reads 96 KiB); one-byte reads spend theirs per call, and
    bigger blocks save it all (read_per_byte.c: 1.01x its share, 21% of it copying)."""
    batch = Frame("filemap_get_read_batch", "[kernel.kallsyms]", kernel=True)
    copying = findings([([COPY, *UNDER_READ], 60), ([batch, *UNDER_READ], 20), REST])[
        "class.syscall.read"
    ]
    per_call = findings([([ENTRY, READ, WORK, MAIN], 60), ([COPY, *UNDER_READ], 20), REST])[
        "class.syscall.read"
    ]
    assert copying.share == per_call.share == pytest.approx(0.8)
    assert copying.estimated_gain == pytest.approx(0.0)
    assert copying.details["unsaved_share"] == pytest.approx(0.8)
    assert any("moving the bytes" in e for e in copying.evidence)
    # a quarter of the class in the copy: small calls, the whole share to save
    assert per_call.details["unsaved_share"] == 0.0
    assert per_call.estimated_gain == pytest.approx(0.8 * per_call.details["saving"])
    middling = findings([([ENTRY, READ, WORK, MAIN], 40), ([COPY, *UNDER_READ], 40), REST])
    # half of it copying: half of the share left out
    assert middling["class.syscall.read"].details["unsaved_share"] == pytest.approx(0.4)


def test_reads_waiting_for_the_disk_are_the_datas_time_not_the_calls() -> None:
    """sha256sum's 32 KiB reads of files not in the page cache: half the time copying,
    most of the rest readahead and the block layer (a leaf like iowrite16 or a switch),
    which bigger reads would pay as much; it was told to read in 64 KiB blocks for 6.7%
    of the run."""
    kick = Frame("iowrite16", "[kernel.kallsyms]", kernel=True)
    readahead = Frame("page_cache_ra_unbounded", "[kernel.kallsyms]", kernel=True)
    filemap = Frame("filemap_read", "[kernel.kallsyms]", kernel=True)
    found = findings(
        [([COPY, filemap, *UNDER_READ], 40), ([kick, readahead, filemap, *UNDER_READ], 40), REST]
    )
    read_class = found["class.syscall.read"]
    assert read_class.details["unsaved_share"] == pytest.approx(0.8)
    assert read_class.estimated_gain == pytest.approx(0.0)
    # the same leaf outside the disk's path is the call's: half of the share saved
    per_call = findings(
        [([COPY, filemap, *UNDER_READ], 40), ([kick, filemap, *UNDER_READ], 40), REST]
    )
    assert per_call["class.syscall.read"].details["unsaved_share"] == pytest.approx(0.4)


def test_a_reads_page_faults_are_the_buffers_not_the_calls() -> None:
    """GNU diff reads each file in one 10 MB call into fresh memory: a third of its read(2)
    time copying, the rest mostly page faults on the buffer's first touch, which calls of
    any size pay; it was told to read in 64 KiB blocks for 45% of the run."""
    clear = Frame("clear_page_erms", "[kernel.kallsyms]", kernel=True)
    fault = Frame("exc_page_fault", "[kernel.kallsyms]", kernel=True)
    found = findings([([COPY, *UNDER_READ], 30), ([clear, fault, COPY, *UNDER_READ], 50), REST])
    assert found["class.syscall.read"].details["unsaved_share"] == pytest.approx(0.8)
    assert found["class.syscall.read"].estimated_gain == pytest.approx(0.0)
    # without the faults, the same share in the call's own entry is saved
    per_call = findings([([COPY, *UNDER_READ], 30), ([ENTRY, READ, WORK, MAIN], 50), REST])
    assert per_call["class.syscall.read"].estimated_gain > 0.2


DL_START = Frame("_dl_start", "ld-linux-x86-64.so.2", "./elf/rtld.c", 517)
PY_INIT = Frame("pymain_init", "libpython3.11.so.1.0", "Modules/main.c", 60)
EXECVE = Frame("__x64_sys_execve", "[kernel.kallsyms]", kernel=True)


def test_many_short_processes_are_told_to_batch_and_their_faults_are_start_up() -> None:
    """A shell loop of `python3 -c pass`: its page faults under the interpreter's start
    were told to reuse buffers."""
    processes = [Thread(100 + i, 100 + i, "python3") for i in range(12)]
    samples = [([FAULT, PY_INIT], 40), ([DL_START], 30), ([EXECVE], 10), ([WORK, MAIN], 20)]
    found = findings(samples * 12, threads=processes)
    start = found["class.process.startup"]
    assert start.share == pytest.approx(0.8) and "(12 of them" in start.title
    assert "xargs" in start.suggestion
    assert "class.kernel.page-fault" not in found


def test_one_process_is_not_told_to_start_fewer() -> None:
    threads = [Thread(100 + i, 100, "app") for i in range(12)]  # 12 threads, one process
    found = findings([([DL_START], 80), ([WORK, MAIN], 20)] * 12, threads=threads)
    assert "class.process.startup" not in found


def test_c_code_gets_the_classes_c_advice_and_cpp_code_keeps_its_own() -> None:
    c_call = findings([([MALLOC, WORK, MAIN], 40), ([WORK, MAIN], 60)])["class.alloc.malloc"]
    assert "reserve()" not in c_call.suggestion and "doubling" in c_call.suggestion
    cpp_call = findings([([MALLOC, LOG, MAIN], 40), ([WORK, MAIN], 60)])["class.alloc.malloc"]
    assert "reserve()" in cpp_call.suggestion


def test_every_c_text_of_a_class_leaves_cpp_out() -> None:
    for cls in load_classes():
        assert not any(word in cls.c_apply for word in ("reserve()", "std::", "string_view"))


SORTNATIVE_COUNT = Path(__file__).resolve().parents[1] / "fixtures" / "callgrind.out.sortnative"


def test_a_count_runs_sorting_is_the_counted_cost_under_its_sort() -> None:
    """sortnative.c (tests/fixtures/src), counted by callgrind: an interpreter whose sort
    builtin's comparator calls back into it, as MuJS's Array.prototype.sort does. The
    stacks derived from the calls make the interpreter's cycle one unit and gave sorting
    a sliver of the run (MuJS: 5.1% where callgrind counts 24.4% under qsort); the class
    is the cost of the calls into qsort, the comparator's included, as a sampled run's
    stacks have it, called from the sort builtin."""
    data = callgrind.parse(SORTNATIVE_COUNT)
    entered = sum(
        costs[0]
        for (caller, _file, _line), costs in data.calls[
            ("/usr/lib/x86_64-linux-gnu/libc.so.6", "qsort")
        ].items()
        if caller[1] == "sort_builtin"
    )
    ctx = Context(
        profile=callgrind.profile_of(data),
        run=RunInfo(command="./sortnative"),
        counts=callgrind.exact_counts(data).merged_recursion(),
    )
    found = {f.rule: f for f in cost_classes.analyze(ctx)}["class.sort.sorting"]
    assert found.share == pytest.approx(entered / ctx.profile.total)
    assert found.function == "sort_builtin" and found.file.endswith("sortnative.c")
    assert f"calls into it: qsort {100 * found.share:.1f}%" in found.evidence

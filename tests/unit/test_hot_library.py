"""Hot shared libraries on hand-built profiles: named and sized, ranked by their time."""

from __future__ import annotations

from perfsleuth import rank
from perfsleuth.analyzers import Context, hot_library, missing_symbols
from perfsleuth.model.profile import Frame, ProfileBuilder, Thread
from perfsleuth.model.run import RunInfo

START = Frame("_start", "k2")
MAIN = Frame("main", "k2", "/src/main.cc", 3)
SOLVE = Frame("Z3_solver_check", "libz3.so.4")
NAMELESS_Z3 = Frame("[unknown]", "libz3.so.4")
BITS = Frame("std::vector<bool, std::allocator<bool> >::operator=", "k2", "/src/inout.cc", 9)


def context(samples: list[tuple[list[Frame], float]]) -> Context:
    builder = ProfileBuilder()
    for frames, weight in samples:
        builder.add(frames, weight)
    binaries = [{"path": "/usr/lib/x86_64-linux-gnu/libz3.so.4"}]
    return Context(builder.build(), RunInfo(command="./k2 -n 100"), binaries=binaries)


K2_LIKE = [
    ([NAMELESS_Z3, SOLVE, MAIN, START], 46),
    ([SOLVE, MAIN, START], 5),
    ([BITS, MAIN, START], 15),
    ([MAIN, START], 34),
]


def test_a_stripped_library_is_named_sized_and_given_its_levers() -> None:
    (found,) = hot_library.analyze(context(K2_LIKE))
    assert found.kind == "hot-library" and found.dso == "libz3.so.4"
    assert found.share == 0.51
    assert found.title.startswith("51.0% of CPU time is in libz3.so.4 (no symbols for 90%")
    assert "debuginfod" in found.suggestion.lower() and "PGO+LTO" in found.suggestion
    assert "try build --dependency libz3.so.4" in found.suggestion
    assert 0 <= found.gain_low < found.estimated_gain < found.gain_high < found.share


def test_it_is_ranked_by_its_time_and_the_missing_names_are_not_first() -> None:
    ctx = context(K2_LIKE)
    findings = hot_library.analyze(ctx) + missing_symbols.analyze(ctx)
    order = [f.kind for f in rank.rank(findings).shown]
    assert order[0] == "hot-library"
    assert order.index("missing-symbols") > order.index("hot-library")


def test_runtimes_the_program_and_small_libraries_are_not_hot_libraries() -> None:
    libc = Frame("[unknown]", "libc.so.6")
    small = Frame("[unknown]", "libtiny.so.1")
    samples = [([libc, MAIN, START], 60), ([small, MAIN, START], 5), ([MAIN, START], 35)]
    assert hot_library.analyze(context(samples)) == []


def test_a_count_runs_whole_paths_are_read_by_file_name() -> None:
    """A count run names DSOs by their whole path (callgrind's): libc was a hot library
    there ('97.0% ... in /usr/lib/x86_64-linux-gnu/libc.so.6', rebuild it with PGO)."""
    libc = Frame("__vfprintf_internal", "/usr/lib/x86_64-linux-gnu/libc.so.6")
    z3 = Frame("Z3_solver_check", "/usr/lib/x86_64-linux-gnu/libz3.so.4")
    samples = [([libc, MAIN, START], 60), ([z3, MAIN, START], 30), ([MAIN, START], 10)]
    (found,) = hot_library.analyze(context(samples))
    assert found.dso == z3.dso
    assert "try build --dependency libz3.so.4 --build 'BUILD libz3 FROM" in found.suggestion


def test_a_library_with_names_gets_only_the_build_lever() -> None:
    samples = [([SOLVE, MAIN, START], 30), ([MAIN, START], 70)]
    (found,) = hot_library.analyze(context(samples))
    assert "(its functions are named)" in found.title
    assert "DEBUGINFOD" not in found.suggestion and "PGO+LTO" in found.suggestion


def test_the_evidence_names_the_exported_function_the_time_came_through() -> None:
    (found,) = hot_library.analyze(context(K2_LIKE))
    assert "entered through Z3_solver_check: 51.0% of CPU time" in found.evidence


def test_a_library_partly_without_names_says_how_much_is_named() -> None:
    """Debian's libsqlite3: 28% of its time nameless, below the symbols fix's half, was
    said to have "its functions named"."""
    nameless = Frame("[unknown]", SOLVE.dso)
    samples = [([SOLVE, MAIN, START], 30), ([nameless, MAIN, START], 10), ([MAIN, START], 60)]
    (found,) = hot_library.analyze(context(samples))
    assert "(function names for 75% of it)" in found.title, found.title


def test_a_packaged_programs_own_libraries_are_not_its_users_dependencies() -> None:
    """clang++-16 compiling: 59% in libclang-cpp and 22% in libLLVM, both Debian's, were
    'the next lever: a PGO+LTO build of libclang-cpp' for someone compiling their code. The
    same library under the user's own program is a dependency they chose."""
    parse = Frame("[unknown]", "libclang-cpp.so.16")
    binaries = [
        {"path": "/usr/lib/llvm-16/bin/clang"},
        {"path": "/usr/lib/llvm-16/lib/libclang-cpp.so.16"},
        {"path": "/home/me/tool/indexer"},
    ]

    def analyzed(program: str) -> list:
        builder = ProfileBuilder()
        thread = Thread(tid=7, pid=7, name=program)
        builder.add([parse, Frame("main", program)], 60, thread=thread)
        builder.add([Frame("main", program)], 40, thread=thread)
        ctx = Context(builder.build(), RunInfo(command=program), binaries=binaries)
        return hot_library.analyze(ctx)

    assert analyzed("clang") == []
    (found,) = analyzed("indexer")
    assert found.dso == "libclang-cpp.so.16"


def test_the_jvm_is_a_runtime_not_a_dependency_to_rebuild() -> None:
    """javac: 63.5% in libjvm.so (its compilers, its collector) was "a PGO+LTO build of
    libjvm.so is the next lever"; the JVM's hot spots have rules of their own."""
    compile_ = Frame("PhaseChaitin::Split(unsigned int, ResourceArea*)", "libjvm.so")
    builder = ProfileBuilder()
    builder.add([compile_, Frame("[unknown]", "anon")], 64)
    builder.add([Frame("[unknown]", "anon")], 36)
    binaries = [{"path": "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"}]
    ctx = Context(builder.build(), RunInfo(command="javac Big.java"), binaries=binaries)
    assert hot_library.analyze(ctx) == []

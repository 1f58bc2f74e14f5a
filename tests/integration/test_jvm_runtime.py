"""A real Java program nobody here wrote: javac (OpenJDK 17, from the Makefile's packages)
compiling a generated class of many small methods. Half its CPU time is the JVM's JIT
compilers, a finding whose fix is a JVM option in the environment, timed by `advise
--verify` (`--all`: under load the timing can find no difference, and such a finding is
hidden by default). The JVM is a runtime, not a dependency to rebuild, and its JIT code is
said to be generated code, not code to rebuild with -g."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

METHODS = 1500
OPTION = "-XX:TieredStopAtLevel=1"


def _source(folder: Path) -> Path:
    methods = "".join(
        f"  static int f{i}(int x) {{ return x * {i} + (x >> 3) - {i % 7}; }}\n"
        for i in range(METHODS)
    )
    calls = "".join(f"    s += f{i}(s);\n" for i in range(0, METHODS, 10))
    main = f"  public static void main(String[] a) {{\n    int s = 0;\n{calls}"
    source = folder / "Big.java"
    source.write_text(f"public class Big {{\n{methods}{main}    System.out.println(s);\n  }}\n}}\n")
    return source


def test_javacs_jit_compilation_is_told_to_stop_at_c1_and_timed(tmp_path: Path) -> None:
    javac = shutil.which("javac")
    if javac is None:
        pytest.skip("no javac: the Makefile's packages install openjdk-17-jdk-headless")
    source = _source(tmp_path)
    out = tmp_path / "findings.json"
    command = ["run", "--verify", "--all", "--format", "json", "-o", str(out), "--"]
    perfsleuth(tmp_path / "store", *command, javac, "-d", str(tmp_path / "classes"), str(source))
    findings = json.loads(out.read_text())["findings"]
    jit = next(f for f in findings if f["rule"] == "runtime.jvm-jit")
    assert jit["kind"] == "runtime-tuning" and jit["share"] >= 0.15
    assert jit["fix"]["env"] == {"JAVA_TOOL_OPTIONS": OPTION}
    # what was run, not how fast: timings belong in bench/
    verified = jit["verified"]
    assert verified["candidate"]["env"] == {"JAVA_TOOL_OPTIONS": OPTION}
    assert "env" not in verified["baseline"]
    assert verified["candidate"]["failed"] == verified["baseline"]["failed"] == 0
    assert not [f for f in findings if f["rule"] == "library.hot" and f["dso"] == "libjvm.so"]
    missing = [f for f in findings if f["rule"] == "symbols.missing"]
    assert not [f for f in missing if "anon" in f["suggestion"]], missing

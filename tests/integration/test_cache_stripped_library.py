"""Library code without a symbol (a static function of a stripped shared library, as
Debian ships BearSSL's: its key schedule's S-box lookups are in one) is named by its
function's start from .eh_frame_hdr, as the profiles name such frames, not
"[unknown]": the constant-time finding on BearSSL's T-table AES pointed at
`libbearssl.so.0.6 [unknown]`."""

from __future__ import annotations

import re
import subprocess

import pytest
from cache_show import cache_doc
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration

LIBRARY = """
static const unsigned char table[256] = {1, 2, 3, 4, 5, 6, 7, 8};
__attribute__((noinline)) static unsigned substitute(unsigned x) {
    return table[x & 255] ^ table[(x >> 8) & 255];
}
unsigned mix(unsigned x) { return substitute(x) + 1; }
"""

PROGRAM = """
unsigned mix(unsigned x);
__attribute__((noinline)) unsigned run(unsigned key) { return mix(key); }
int main(void) {
    unsigned sum = 0;
    for (unsigned i = 0; i < 20; i++) sum += run(i * 2654435761u);
    return (int)(sum & 1);
}
"""


def test_a_static_function_of_a_stripped_library_is_named_by_its_start(tmp_path):
    (tmp_path / "mix.c").write_text(LIBRARY)
    (tmp_path / "main.c").write_text(PROGRAM)
    library, binary = tmp_path / "libmix.so", tmp_path / "main"
    shared = ["gcc", "-O2", "-shared", "-fPIC", "-o", library, tmp_path / "mix.c"]
    subprocess.run(shared, check=True)
    symbols = subprocess.run(["nm", library], capture_output=True, text=True, check=True).stdout
    start = int(next(line.split()[0] for line in symbols.splitlines() if "substitute" in line), 16)
    subprocess.run(["strip", library], check=True)
    subprocess.run(["gcc", "-O2", "-g", "-o", binary, tmp_path / "main.c", "-L", tmp_path,
                    "-lmix", f"-Wl,-rpath,{tmp_path}"], check=True)  # fmt: skip
    store = tmp_path / "store"
    perfsleuth(store, "record", "--mode", "cache", "--function", "run", "--sample-calls", "1",
               "--", str(binary))  # fmt: skip
    sources = [row["source"] for row in cache_doc(store)["footprint"]["by_source"]]
    assert f"[unknown] libmix.so+{start:#x}" in sources, sources
    assert not [s for s in sources if re.fullmatch(r"libmix\.so \[unknown\]", s)], sources

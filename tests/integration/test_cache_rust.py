"""Cache mode on a Rust program (std's HashMap, hashbrown's SwissTable) built by
rustc -O -g: the function found by its bare name, whatever its crate path and legacy
hash (`rmap::lookup_session::h0123...`), and the map's layout with rustc's pointers
(which DWARF gives no size) at their real 8 bytes; a bucket's fields, read at negative
displacements from its end pointer, are the element's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cache_show import cache_doc, record_cache

pytestmark = pytest.mark.integration

RUSTC = shutil.which("rustc") or shutil.which(os.path.expanduser("~/.cargo/bin/rustc"))

RUST_MAP = """
use std::collections::HashMap;
pub struct Session { pub id: u32, pub name: [u8; 64], pub bytes: u64, pub flags: u16 }
#[inline(never)]
pub fn lookup_session(m: &HashMap<u64, Session>, key: u64) -> u64 {
    match m.get(&key) { Some(s) => s.bytes + s.flags as u64, None => 0 }
}
fn main() {
    let mut m = HashMap::new();
    for i in 0..64u64 {
        m.insert(i * 2654435761, Session { id: 0, name: [0; 64], bytes: i, flags: 1 });
    }
    let mut sum = 0;
    for i in 0..40u64 { sum += lookup_session(&m, (i * 7 % 64) * 2654435761); }
    println!("{}", sum);
}
"""


def test_a_rust_function_is_found_by_its_bare_name_and_its_map_laid_out(tmp_path: Path):
    if RUSTC is None:
        pytest.skip("rustc not installed")
    source, binary = tmp_path / "rmap.rs", tmp_path / "rmap"
    source.write_text(RUST_MAP)
    subprocess.run([RUSTC, "-O", "-g", "-o", str(binary), str(source)], check=True)
    function = cache_doc(record_cache(tmp_path / "store", binary, "lookup_session"))
    assert function["sampling"]["calls_seen"] == 40
    layout = function["layout"]
    assert layout["struct"].startswith("HashMap<u64, rmap::Session")
    inside = {m["name"]: (m["size"], m["hot"]) for f in layout["fields"] for m in f["inside"]}
    assert inside["table.table.ctrl.pointer"] == (8, True)  # was 1: the u8 it points to
    assert inside["table.table.bucket_mask"] == (8, True)
    assert inside["table.table.growth_left"] == (8, False)
    element = next(lay for lay in function["layouts"] if lay["struct"] == "(u64, rmap::Session)")
    session = next(f for f in element["fields"] if f["name"] == "__1")
    hot = {m["name"] for m in session["inside"] if m["hot"]}
    assert {"bytes", "flags"} <= hot  # read at -0x20 and -0x4 from the bucket's end pointer
    assert "id" not in hot

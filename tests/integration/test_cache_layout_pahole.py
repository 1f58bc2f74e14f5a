"""Struct layouts against pahole on a struct with what real ones have: bitfields,
a union, a nested anonymous struct, an array (examples/cache/flows.c)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cache_show import cache_doc, layout_members, pahole_members, record_cache
from cli_runner import perfsleuth

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def flows_run(examples_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("flows") / "store"
    return record_cache(store, examples_built / "flows", "account", "200", "400", calls=50)


@pytest.mark.skipif(shutil.which("pahole") is None, reason="pahole (Debian dwarves) not installed")
def test_bitfields_unions_and_nested_structs_match_pahole(flows_run, examples_built):
    theirs = pahole_members(examples_built / "flows", "flow")
    layout = cache_doc(flows_run)["layout"]
    assert len(theirs) == 9
    assert ("retries", 4, 1, 4) in theirs  # a bitfield: its unit's offset, bit 1, a 4-byte unit
    assert layout_members(layout) == theirs


def test_the_layout_text_prints_bitfields_and_bit_holes_as_pahole_does(flows_run):
    text = cache_doc(flows_run)["layout"]["pahole"]
    assert "active:1;" in text and "/*     4: 1  4 */" in text
    assert "/* XXX 8 bits hole, try to pack */" in text  # after the bitfields, before port
    assert "union {...}" in text and "struct {...}" in text
    assert "members: 9 */" in text


def test_the_hot_bitfields_and_the_lone_hot_field_on_line_1(flows_run):
    layout = cache_doc(flows_run)["layout"]
    hot = {f["name"] for f in layout["fields"] if f["hot"]}
    # the flags are read a byte at a time: priority shares active's and retries' byte
    assert {"active", "retries", "last_seen"} <= hot
    assert hot <= {"active", "retries", "priority", "last_seen"}
    active = next(f for f in layout["fields"] if f["name"] == "active")
    assert (active["line"], active["bytes"]) == (0, 1)
    move = layout["reorder"]
    assert move["move"] == ["last_seen"] and (move["from_line"], move["to_line"]) == (1, 0)
    assert move["swap_out"] == ["addr"]


CPP_SESSION = """
#include <cstdint>
struct Base { uint64_t id; uint32_t kind; };
struct Mixin { uint16_t tag; };
class Session : public Base, public Mixin {
public:
    uint64_t hits;
    char name[40];
    uint64_t last_seen;
    virtual ~Session() {}
};
__attribute__((noinline)) uint64_t touch(Session *s) { s->hits++; return s->id + s->last_seen; }
int main() { Session s{}; return (int)touch(&s); }
"""
# pahole prints a base class as a comment: /* struct Base <ancestor>; */ /* 8 16 */
PAHOLE_ANCESTOR = re.compile(
    r"/\* (?:struct|class) (\w+)\s+<ancestor>; \*/\s+/\*\s+(\d+)\s+(\d+) \*/"
)


def test_cxx_base_classes_are_laid_out_where_pahole_puts_them_and_stay_there(tmp_path):
    source, binary = tmp_path / "session.cc", tmp_path / "session"
    source.write_text(CPP_SESSION)
    subprocess.run(["g++", "-g", "-O1", "-o", str(binary), str(source)], check=True)
    layout = cache_doc(record_cache(tmp_path / "store", binary, "touch"))["layout"]
    ours = {f["name"]: (f["offset"], f["size"]) for f in layout["fields"] if f["ancestor"]}
    if shutil.which("pahole"):
        pahole = subprocess.run(
            ["pahole", "-C", "Session", str(binary)], capture_output=True, text=True, check=True
        ).stdout
        found = PAHOLE_ANCESTOR.finditer(pahole)
        theirs = {f"<ancestor {m[1]}>": (int(m[2]), int(m[3])) for m in found}
        assert ours == theirs
    assert ours == {"<ancestor Base>": (8, 16), "<ancestor Mixin>": (24, 2)}
    hot = {f["name"] for f in layout["fields"] if f["hot"]}
    assert hot == {"<ancestor Base>", "hits", "last_seen"}  # s->id is Base's
    base = next(f for f in layout["fields"] if f["name"] == "<ancestor Base>")
    assert [(m["name"], m["offset"], m["hot"]) for m in base["inside"]] == [
        ("id", 8, True),
        ("kind", 16, False),
    ]
    move = layout["reorder"]
    assert move["move"] == ["last_seen"]
    assert "_vptr.Session" not in move["swap_out"]  # the vtable pointer is the language's
    assert "<ancestor" in layout["pahole"]


CPP_UNORDERED_MAP = """
#include <cstdint>
#include <unordered_map>
struct Session { uint32_t id; uint32_t flags; char name[64]; uint64_t bytes; uint64_t created; };
using Map = std::unordered_map<uint64_t, Session>;
__attribute__((noinline)) uint64_t lookup(const Map &m, uint64_t key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second.bytes + it->second.flags;
}
int main() {
    Map m;
    for (uint64_t i = 0; i < 64; i++) m[i * 2654435761u] = Session{};
    uint64_t sum = 0;
    for (uint64_t i = 0; i < 40; i++) sum += lookup(m, (i * 7 % 64) * 2654435761u);
    return (int)sum;
}
"""


def test_an_unordered_map_nodes_value_fields_are_hot_or_cold_inside_its_base_class(tmp_path):
    """libstdc++ keeps a node's pair<const K, V> in raw bytes (__aligned_buffer<T>) inside
    a base class: the fields of the T it holds are marked, not one 112-byte blob."""
    source, binary = tmp_path / "umap.cc", tmp_path / "umap"
    source.write_text(CPP_UNORDERED_MAP)
    subprocess.run(["g++", "-g", "-O2", "-o", str(binary), str(source)], check=True)
    function = cache_doc(record_cache(tmp_path / "store", binary, "lookup"))
    node = next(lay for lay in function["layouts"] if lay["struct"].startswith("_Hash_node<"))
    value = next(f for f in node["fields"] if f["name"].startswith("<ancestor _Hash_node_value"))
    inside = {m["name"]: (m["offset"], m["hot"]) for m in value["inside"]}
    assert inside["_M_storage.first"] == (8, True)  # the key, compared
    assert inside["_M_storage.second.flags"] == (20, True)
    assert inside["_M_storage.second.bytes"] == (88, True)
    assert inside["_M_storage.second.id"] == (16, False)
    assert inside["_M_storage.second.name"] == (24, False)
    # the base classes stay; Session's bytes moves to the node's line 0, beside flags
    assert node["reorder"]["move"] == ["_M_storage.second.bytes"]
    assert node["reorder"]["to_line"] == 0
    inlined = perfsleuth(tmp_path / "store", "record", "--mode", "cache", "--function",
                         "std::unordered_map<unsigned long, Session>::find", "--", str(binary),
                         check=False)  # fmt: skip
    assert inlined.returncode == 2 and "inlined it into its callers" in inlined.stderr


# sparsehash's dense_hashtable keeps its flags in `settings`, a class whose members
# all come from its base class (`class Settings : public sh_hashtable_settings<...>`)
CPP_INHERITED_MEMBER = """
#include <cstdint>
struct Flags { uint64_t threshold; bool use_empty; bool use_deleted; };
struct Settings : Flags {};
struct Rep { uint64_t count; Settings settings; uint64_t *slots; };
struct Table { Rep rep; };  // dense_hash_map holds its dense_hashtable as `rep`
__attribute__((noinline)) uint64_t lookup(Table *t, uint64_t key) {
    return t->rep.settings.use_empty ? t->rep.slots[key & 7] : t->rep.count;
}
int main() {
    uint64_t slots[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    Table t{{3, {}, slots}};
    t.rep.settings.use_empty = true;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < 20; i++) sum += lookup(&t, i);
    return (int)(sum & 1);
}
"""


def test_a_member_inherited_by_a_member_is_named_by_its_path_without_the_base(tmp_path):
    """`settings.use_empty`, as C++ spells it (it was `settings..use_empty`)."""
    source, binary = tmp_path / "inherited.cc", tmp_path / "inherited"
    source.write_text(CPP_INHERITED_MEMBER)
    subprocess.run(["g++", "-g", "-O2", "-o", str(binary), str(source)], check=True)
    layout = cache_doc(record_cache(tmp_path / "store", binary, "lookup"))["layout"]
    rep = next(f for f in layout["fields"] if f["name"] == "rep")
    inside = {m["name"]: (m["offset"], m["hot"]) for m in rep["inside"]}
    assert inside == {
        "count": (0, False),  # read only when use_empty is false
        "settings.threshold": (8, False),
        "settings.use_empty": (16, True),
        "settings.use_deleted": (17, False),
        "slots": (24, True),
    }


C_CALLBACKS = """
#include <stddef.h>
#include <stdint.h>
struct table {
    void *(*alloc)(size_t);
    uint64_t (*hash)(const void *item, uint64_t seed);
    int (*compare)(const void *a, const void *b, void *udata);
    void (*done)(void);
    uint64_t seed;
};
static uint64_t hash(const void *item, uint64_t seed) { return seed ^ (uintptr_t)item; }
__attribute__((noinline)) uint64_t lookup(struct table *t, const void *key) {
    return t->hash(key, t->seed);
}
int main(void) { struct table t = {0, hash, 0, 0, 7}; return lookup(&t, &t) == 0; }
"""


def test_function_pointer_members_are_named_as_pahole_names_them(tmp_path):
    source, binary = tmp_path / "callbacks.c", tmp_path / "callbacks"
    source.write_text(C_CALLBACKS)
    subprocess.run(["gcc", "-g", "-O1", "-o", str(binary), str(source)], check=True)
    text = cache_doc(record_cache(tmp_path / "store", binary, "lookup"))["layout"]["pahole"]
    assert "?" not in text
    members = [" ".join(row.split("/*")[0].split()) for row in text.splitlines()[1:5]]
    assert members == [
        "void * (*alloc)(size_t);",
        "uint64_t (*hash)(const void *, uint64_t);",
        "int (*compare)(const void *, const void *, void *);",
        "void (*done)(void);",
    ]

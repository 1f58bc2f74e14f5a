"""The libclang source patterns of aliasing writes, on small snippets
(one C++ and one C file, parsed once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.static_analysis.aliasing_patterns import AliasMatch, SourceScan, find_matches
from perfsleuth.static_analysis.byte_map import FIX
from perfsleuth.static_analysis.source import TranslationUnit, parse

CXX = """#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
void tick();
void cond(std::vector<uint8_t>& v) {
  for (std::size_t i = 0; i < v.size(); i++) v[i] += 1;
}
void u32(std::vector<uint32_t>& v) { for (std::size_t i = 0; i < v.size(); i++) v[i] += 1; }
void c8(std::vector<char8_t>& v) { for (std::size_t i = 0; i < v.size(); i++) v[i] += 1; }
void u16(std::vector<uint16_t>& v) { for (std::size_t i = 0; i < v.size(); i++) v[i] += 1; }
void flags(std::vector<bool>& v) { for (std::size_t i = 0; i < v.size(); i++) v[i] = true; }
void hoisted(std::vector<uint8_t>& v) {
  std::size_t n = v.size(); uint8_t* d = v.data();
  for (std::size_t i = 0; i < n; i++) d[i] = 0;
}
struct C { int n; };
int stack(const C* c) {
  unsigned char buf[64];
  for (int i = 0; i < c->n; i++) buf[i & 63] = 1;
  return buf[0];
}
void branchy(std::string& s) {
  for (std::size_t i = 0; i < s.size(); i++) { if (s[i] == 'a') s[i] = 'b'; }
}
void opaque(std::vector<uint8_t>& v) {
  for (std::size_t i = 0; i < v.size(); i++) { v[i] = 0; tick(); }
}
#include <array>
struct Block { std::array<uint8_t, 16> bytes; };
int block(const std::vector<uint8_t>& v) {
  Block k{};
  for (std::size_t i = 0; i < v.size() && i < 16; i++) k.bytes[i] = v[i];
  return k.bytes[0];
}
void by_ref(uint8_t* out, const std::size_t& n) { for (std::size_t i = 0; i < n; i++) out[i] = 1; }
struct Pool {
  std::vector<uint8_t> bytes;
  ~Pool() { for (std::size_t i = 0; i < bytes.size(); i++) bytes[i] = 0; }
};
extern "C" int same_32(const unsigned char* a, const unsigned char* b);
struct Key {
  unsigned char& operator[](int i) { return bytes[i]; }
  bool operator==(const Key& o) const { return same_32(bytes, o.bytes) == 0; }
  unsigned char bytes[32];
};
static const Key ZERO_KEY = {{0}};
inline Key zero_key() { return ZERO_KEY; }
void keys(std::vector<Key>& out, const std::vector<uint64_t>& v) {
  for (std::size_t i = 0; i < v.size(); i++) {
    out[i] = zero_key();
    out[i].bytes[0] = v[i] & 255;
    out[i].bytes[1] = (v[i] >> 8) & 255;
  }
}
struct Ring {
  unsigned char* slots;
  std::size_t used;
  std::size_t capacity() const { return 64; }
  std::size_t count() const { return used; }
};
void ring_const(Ring* r) { for (std::size_t i = 0; i < r->capacity(); i++) r->slots[0] = 0; }
void ring_count(Ring* r) { for (std::size_t i = 0; i < r->count(); i++) r->slots[0] = 0; }
void swap(const std::string& from, std::string& to) {
  for (std::size_t i = 0; i < from.size(); ++i) {
    switch (from[i]) { case '-': to[i] = '+'; break; default: to[i] = from[i]; break; }
  }
}
"""

C = """#include <stddef.h>
struct S { char* str; size_t len; size_t cap; };
struct B { unsigned char* data; size_t len; };
void fill(struct S* s) { for (size_t i = 0; i < s->len; i++) s->str[i] = ' '; }
void row(char** rows, int r, int w) { for (int j = 0; j < w; j++) rows[r][j] = 0; }
void put(struct S* s, char c) {
  if (s->len + 1 < s->cap) { s->str[s->len++] = c; s->str[s->len] = 0; }
}
void either(struct S* s, char c) {
  if (c) { s->str[0] = c; } else { s->str[1] = 0; }
}
void then_both(struct S* s, char c) {
  if (c) { s->str[0] = c; s->str[1] = 0; } else { s->cap = 0; }
}
struct Pair { unsigned char* buf; size_t n; };
void pair_of(struct Pair* p) { for (int i = 0; i < 2; i++) p->buf[i] = (unsigned char)p->n; }
void restricted(unsigned char* restrict out, const size_t* n) {
  for (size_t i = 0; i < *n; i++) out[i] = 1;
}
void push(struct B* b, const unsigned char* src, size_t n) {
  for (size_t i = 0; i < n; i++) { b->data[b->len] = src[i]; b->len++; }
}
__attribute__((noinline)) static void step(size_t* n) { *n += 1; }
void fnptr(struct B* b, void (*cb)(size_t)) {
  for (size_t i = 0; i < b->len; i++) { b->data[i] = 0; cb(i); }
}
void kept_apart(struct B* b, size_t* n) {
  for (size_t i = 0; i < b->len; i++) { b->data[i] = 0; step(n); }
}
void port(struct B* b, volatile unsigned char* p) {
  for (size_t i = 0; i < b->len; i++) *p = b->data[i];
}
int exits(struct B* b, const unsigned char* s) {
  for (size_t i = 0; i < b->len; i++) { if (!s[i]) return 1; b->data[i] = s[i]; }
  return 0;
}
void switched(struct B* b, const unsigned char* s) {
  for (size_t i = 0; i < b->len; i++) {
    switch (s[i]) { case 0: b->data[i] = 1; break; default: break; }
  }
}
void outer(const struct S* s, unsigned char* marks) {
  for (size_t r = 0; r < s->len; r++) {
    size_t t = 0;
    for (size_t c = 0; c < s->cap; c++) t += s->str[c];
    marks[r] = t;
  }
}
struct P { unsigned char r, g; };
union U { unsigned char byte; size_t word; };
void field(struct P* p, const struct B* b) {
  for (size_t i = 0; i < b->len; i++) p->r ^= b->data[i];
}
void in_union(union U* u, const struct B* b) {
  for (size_t i = 0; i < b->len; i++) u->byte ^= b->data[i];
}
struct L { char text[16]; };
int private_line(const struct B* b) {
  struct L l;
  for (size_t i = 0; i < b->len && i < 16; i++) l.text[i] = b->data[i];
  return l.text[0];
}
void counted(struct B* b, _Atomic size_t* n) {
  for (size_t i = 0; i < b->len; i++) { b->data[i] = 0; *n += 1; }
}
void fenced(struct B* b) {
  for (size_t i = 0; i < b->len; i++) { b->data[i] = 0; __asm__ __volatile__("" ::: "memory"); }
}
size_t before_loop(struct B* b) {
  size_t z = 0; b->data[0] = 0; for (size_t i = 1; i < b->len; i++) z += b->data[i]; return z;
}
struct Cursor { size_t have; size_t pos; unsigned char* next; };
struct Reader { struct Cursor at; size_t size; };
int unread(struct Reader* r, int c) {
  if (r->at.have == 0) { r->at.next[0] = (unsigned char)c; r->at.pos--; return c; }
  return -1;
}
unsigned recode(unsigned char* w, unsigned v) {
  unsigned s = w[1] + v;
  w[0] = (unsigned char)(s >> 6);
  w[1] = (unsigned char)((w[1] & 0xC0) | (s & 0x3F));
  return s;
}
unsigned recode_into(unsigned char* w, unsigned char* o, unsigned v) {
  unsigned s = w[1] + v;
  o[0] = (unsigned char)(s >> 6);
  return s + w[1];
}
int flush_tail(struct B* b, unsigned char* out, int last) {
  if (b->len > 4) {
    if (last) { out[0] = (unsigned char)b->len; return 1; }
  }
  return b->len > 8;
}
int flush_on(struct B* b, unsigned char* out, int last) {
  if (b->len > 4) {
    if (last) { out[0] = (unsigned char)b->len; }
  }
  return b->len > 8;
}
void pad(struct B* b, size_t n) {
  if (n < 3) {
    for (size_t i = 0; i < n; i++) b->data[i] = (unsigned char)b->len;
  }
}
void pad_any(struct B* b, size_t n) {
  for (size_t i = 0; i < n; i++) b->data[i] = (unsigned char)b->len;
}
struct Frame { unsigned char head[4]; size_t size; unsigned char* body; };
void frame_head(struct Frame* f) {
  f->head[0] = (unsigned char)(f->size >> 8);
  f->head[1] = (unsigned char)f->size;
}
void by_case(struct B* b, unsigned char c) {
  switch (b->len) {
    case 1: b->data[0] = c; break;
    default: b->data[b->len - 1] = c;
  }
}
void by_case_after(struct B* b, unsigned char c) {
  switch (b->len) {
    case 1: b->data[0] = c; break;
    default: break;
  }
  b->data[b->len - 1] = c;
}
union Tiny { unsigned long long words[2]; unsigned char bytes[16]; };
struct Coder { union Tiny tiny; size_t bits; unsigned char* out; };
size_t coder_tail(struct Coder* c) {
  size_t b = c->bits;
  c->tiny.bytes[0] = (unsigned char)b;
  return b + c->bits;
}
unsigned long long coder_word(struct Coder* c) {
  unsigned long long w = c->tiny.words[0];
  c->tiny.bytes[0] = 1;
  return w + c->tiny.words[0];
}
void frame_body(struct Frame* f) {
  f->body[0] = (unsigned char)(f->size >> 8);
  f->body[1] = (unsigned char)f->size;
}
"""


def analyse(directory: Path, name: str, code: str, std: str) -> SourceScan:
    source = directory / name
    source.write_text(code)
    unit = TranslationUnit(source, ["-O2", std], "defaults")
    parsed = parse(unit)
    assert parsed is not None, unit.error
    return find_matches(parsed, source)


@pytest.fixture(scope="module")
def cxx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, AliasMatch]:
    found = analyse(tmp_path_factory.mktemp("cxx"), "snippet.cc", CXX, "-std=c++20")
    return {m.function: m for m in found.matches}


@pytest.fixture(scope="module")
def c_scan(tmp_path_factory: pytest.TempPathFactory) -> SourceScan:
    return analyse(tmp_path_factory.mktemp("c"), "snippet.c", C, "-std=gnu17")


@pytest.fixture(scope="module")
def c(c_scan: SourceScan) -> dict[str, AliasMatch]:
    return {m.function: m for m in c_scan.matches}


def test_loop_condition_pattern_names_the_read_the_write_and_the_fixes(
    cxx: dict[str, AliasMatch],
) -> None:
    match = cxx["cond"]
    assert (match.pattern, match.line, match.end_line) == ("loop-condition", 7, 7)
    assert match.read == "v.size()"
    assert match.write == "v[i] += 1"
    assert match.write_type == "unsigned char"
    assert match.confidence == 0.85
    assert any("char8_t" in fix for fix in match.fixes)
    assert any("hoist `v.size()`" in fix for fix in match.fixes)


@pytest.mark.parametrize(
    "function", ["u32", "c8", "u16", "flags", "hoisted", "stack", "opaque", "block"]
)
def test_look_alikes_are_not_reported(cxx: dict[str, AliasMatch], function: str) -> None:
    assert function not in cxx


def test_branches_lower_the_confidence(cxx: dict[str, AliasMatch]) -> None:
    assert cxx["branchy"].branches
    assert cxx["branchy"].confidence < cxx["cond"].confidence


def test_a_byte_map_through_a_switch_is_offered_the_block_rewrite_first(
    cxx: dict[str, AliasMatch],
) -> None:
    assert cxx["swap"].branches and cxx["swap"].byte_map
    assert cxx["swap"].fixes[0] == FIX
    assert not cxx["branchy"].byte_map and FIX not in cxx["branchy"].fixes


def test_c_struct_fields_rows_and_straight_line(c: dict[str, AliasMatch]) -> None:
    assert (c["fill"].pattern, c["fill"].read) == ("loop-condition", "s->len")
    assert (c["row"].pattern, c["row"].read) == ("loop-body", "rows[r]")
    assert (c["put"].pattern, c["put"].read) == ("straight-line", "s->len")
    assert (
        c["put"].fixes[0].startswith("keep `s->len` in a local, count it there and write it back")
    )
    assert c["put"].confidence < c["row"].confidence < c["fill"].confidence
    assert not any("char8_t" in fix for fix in c["fill"].fixes)  # C has no char8_t


def test_straight_line_reads_in_the_two_branches_of_an_if_are_not_repeated(
    c: dict[str, AliasMatch],
) -> None:
    """`s->str` read in the then branch and again in the else branch: one runs."""
    assert "either" not in c
    assert (c["then_both"].pattern, c["then_both"].read) == ("straight-line", "s->str")


def test_a_loop_bounded_by_a_small_constant_is_not_confident(c: dict[str, AliasMatch]) -> None:
    """Two iterations (GCC unrolls them into two stores): a few reloads per call."""
    assert c["pair_of"].short_trip == 2 and c["pair_of"].confidence == 0.3
    assert c["fill"].short_trip is None and c["fill"].confidence >= 0.85


def test_a_restrict_destination_is_not_reported(c: dict[str, AliasMatch]) -> None:
    assert "restricted" not in c


def test_reads_written_in_the_loop_are_not_offered_for_hoisting(c: dict[str, AliasMatch]) -> None:
    assert c["push"].hoistable == ["b->data"]


@pytest.mark.parametrize(
    "function",
    ["fnptr", "kept_apart", "port", "exits", "outer", "field", "private_line", "before_loop"]
    + ["counted", "fenced"],
)
def test_loops_kept_scalar_or_writes_that_cannot_alias_are_not_reported(
    c: dict[str, AliasMatch], function: str
) -> None:
    assert function not in c


@pytest.mark.parametrize("function", ["switched", "in_union"])
def test_their_aliasing_twins_are(c: dict[str, AliasMatch], function: str) -> None:
    assert c[function].pattern == "loop-condition"


def test_an_inline_struct_copy_is_not_a_call_that_blocks(cxx: dict[str, AliasMatch]) -> None:
    """`out[i] = zero_key()` is the class's implicit operator=, a 32-byte copy: libclang
    hangs the whole class under it, but Key's operator== (an extern call) is not its."""
    assert cxx["keys"].pattern == "loop-condition"
    assert cxx["keys"].read == "v.size()"


def test_a_method_is_a_read_only_when_its_body_loads_a_field(
    cxx: dict[str, AliasMatch],
) -> None:
    """`r->capacity()` returns a constant: the method's name is not a load of `r`;
    `r->count()` loads r->used, which the byte store may change."""
    assert cxx["ring_const"].pattern == "loop-body" and cxx["ring_const"].read == "r->slots"
    assert (cxx["ring_count"].pattern, cxx["ring_count"].read) == ("loop-condition", "r->count()")


def test_a_destructor_s_loop_is_read(cxx: dict[str, AliasMatch]) -> None:
    assert cxx["Pool::~Pool"].read == "bytes.size()"


def test_a_bound_read_through_a_reference_is_memory(cxx: dict[str, AliasMatch]) -> None:
    assert (cxx["by_ref"].pattern, cxx["by_ref"].read) == ("loop-condition", "n")


@pytest.mark.parametrize(
    ("function", "kind", "what"),
    [
        ("fnptr", "call", "cb(i)"),
        ("kept_apart", "call", "step(n)"),
        ("exits", "exit", "return 1"),
        ("port", "volatile", "*p"),
        ("counted", "atomic", "*n"),
        ("fenced", "asm", '__asm__ __volatile__("" ::: "memory")'),
    ],
)
def test_loops_kept_scalar_say_what_keeps_them(
    c_scan: SourceScan, function: str, kind: str, what: str
) -> None:
    blocked = next(b for b in c_scan.blocked if b.function == function)
    assert (blocked.kind, blocked.what) == (kind, what)


def test_a_struct_member_is_an_address_not_a_repeated_read(c: dict[str, AliasMatch]) -> None:
    # r->at.have before the byte store and r->at.pos after it are different fields:
    # `r->at` itself is no load (zlib's gzungetc, `state->x`).
    assert "unread" not in c


def test_elements_at_different_constant_indices_do_not_alias(c: dict[str, AliasMatch]) -> None:
    # w[0] = ... cannot change w[1] (brotli's Shift); a store through another
    # pointer can.
    assert "recode" not in c
    assert c["recode_into"].read == "w[1]"


def test_a_write_in_a_branch_that_returns_is_not_followed_by_the_read(
    c: dict[str, AliasMatch],
) -> None:
    # The byte store's branch returns, so the read after the `if` never follows it
    # (brotli's EncodeData); without the return it does.
    assert "flush_tail" not in c
    assert c["flush_on"].read == "b->len"


def test_a_loop_bounded_by_an_enclosing_if_is_short(c: dict[str, AliasMatch]) -> None:
    # `if (n < 3) for (i < n)` runs at most 2 times (brotli's tree repetitions).
    assert c["pad"].short_trip == 2
    assert c["pad"].confidence == 0.3
    assert c["pad_any"].short_trip is None and c["pad_any"].confidence == 0.7


def test_an_array_member_at_a_constant_index_is_not_a_sibling_field(
    c: dict[str, AliasMatch],
) -> None:
    # f->head[0] sits at a fixed offset of *f, apart from f->size: neither compiler
    # reloads (xz's lzma2_header_uncompressed); bytes behind f->body may be f->size.
    assert "frame_head" not in c
    assert c["frame_body"].read in ("f->body", "f->size")


def test_a_write_in_one_case_is_not_followed_by_a_read_in_another(
    c: dict[str, AliasMatch],
) -> None:
    # case 1 breaks: the default case never runs after its store (bzip2's
    # add_pair_to_block); code after the switch does.
    assert "by_case" not in c
    assert c["by_case_after"].read == "b->len"


def test_a_nested_array_member_is_apart_from_a_sibling_but_not_from_its_union(
    c: dict[str, AliasMatch],
) -> None:
    # c->tiny.bytes[0] cannot be c->bits (brotli's EncodeData), but it is part of
    # c->tiny.words[0], its union sibling.
    assert "coder_tail" not in c
    assert c["coder_word"].read == "c->tiny.words[0]"


TEMPLATE_MEMBER = """
template <typename T>
void cbc(T& enc, unsigned char* out, int n) {
  for (int i = 0; i < n; i++) { out[i] = 0; enc.Encrypt(out + i, enc.size); }
}
"""


def test_a_member_of_a_dependent_type_is_read_without_a_crash(tmp_path: Path) -> None:
    """bitcoin's crypto/aes.cpp: `enc.Encrypt` in a template refers to nothing libclang
    can resolve (its `referenced` is None), which stopped the unit's analysis."""
    found = analyse(tmp_path, "aes.cc", TEMPLATE_MEMBER, "-std=c++20")
    assert "cbc" not in {m.function for m in found.matches}


HELPERS = (
    """struct S { int n; unsigned char *p; };
static inline int count(const struct S *s) { return s->n; }
void fill(struct S *s) {
"""
    + "".join(f"  s->p[{i}] = (unsigned char)count(s);\n" for i in range(30))
    + "}\n"
)


def test_an_inline_helper_is_read_once_whatever_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's sqlite3VdbeExec calls the same inline helpers at hundreds of sites:
    walking a helper's body at each one took `advise` 90 CPU-s on the amalgamation."""
    from perfsleuth.static_analysis import memory_access

    walked: list[str] = []
    real_walk = memory_access.walk

    def counted(cursor):  # type: ignore[no-untyped-def]
        if cursor.kind.name == "FUNCTION_DECL":
            walked.append(cursor.spelling)
        return real_walk(cursor)

    monkeypatch.setattr(memory_access, "walk", counted)
    found = analyse(tmp_path, "helpers.c", HELPERS, "-std=c11")
    assert found.read == 2 and found.unread == 0
    # once searched as a function of its own, once read for its 30 calls (was 31)
    assert walked.count("count") == 2


def test_no_function_is_searched_past_the_deadline(tmp_path: Path) -> None:
    source = tmp_path / "helpers.c"
    source.write_text(HELPERS)
    parsed = parse(TranslationUnit(source, ["-O2", "-std=c11"], "defaults"))
    found = find_matches(parsed, source, deadline=0.0)
    assert (found.read, found.unread, found.matches) == (0, 2, [])


def test_a_unit_whose_search_the_budget_stopped_is_cut_short_and_says_so(tmp_path: Path) -> None:
    from perfsleuth.static_analysis.unit_analysis import (
        Budget,
        CompileLimits,
        analyse_unit,
        cut_short_note,
    )

    source = tmp_path / "helpers.c"
    source.write_text(HELPERS)
    unit = TranslationUnit(source, ["-O2", "-std=c11"], "defaults")
    report = analyse_unit(unit, limits=CompileLimits(deadline=0.0))
    assert report.cut_short == "the source search (after 0 of 2 functions)"
    assert report.error and report.matches == [] and report.compiled_by == []
    note = cut_short_note(report, Budget(seconds=10, run="3"))
    assert note.startswith("helpers.c cut short: the source search (after 0 of 2 functions) ")
    assert "stopped at the 10 s CPU budget" in note and "advise 3 --budget 250" in note

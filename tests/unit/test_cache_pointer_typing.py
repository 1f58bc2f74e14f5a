"""The register search and array-element checks of cpu_cache_projections/pointers.py, on machine
code assembled by GNU as (the bytes below) and decoded by capstone."""

from __future__ import annotations

import pytest
from elftools.dwarf.dwarf_expr import DWARFExprParser
from elftools.dwarf.structs import DWARFStructs

from perfsleuth.cpu_cache_projections.layout import disassembler
from perfsleuth.cpu_cache_projections.pointers import (
    Pointer,
    Typing,
    Variable,
    element_base,
    field_offset,
)
from perfsleuth.cpu_cache_projections.struct_types import Field, Struct

# 0 test esi, esi          4 mov rax, [rdi + 8]   (1:)     8 call 11
# 1 je 4                   5 mov rcx, [rax]       (2:)     9 mov rcx, [rax]
# 2 mov rax, [rdi + 8]     6 mov rax, [rdi + 8]           10 mov rcx, [rbx]
# 3 jmp 5                  7 mov rbx, [rdi + 8]           11 ret
CODE = bytes.fromhex("85f67406488b4708eb04488b4708488b08488b4708488b5f08e806000000488b08488b0bc3")


@pytest.fixture(scope="module")
def typing() -> Typing:
    return Typing(list(disassembler().disasm(CODE, 0x1000)), [])


def test_the_writes_of_both_paths_into_a_join_are_found(typing):
    assert typing.reaching_writes("rax", 5) == {2, 4}


def test_a_call_writes_the_return_registers_unless_its_callee_returns_nothing(typing):
    assert typing.reaching_writes("rax", 9) == {8}  # the call's result
    assert typing.reaching_writes("rbx", 10) == {7}  # kept across the call
    keeping = Typing(typing.code, [], void=frozenset({0x1024}))
    assert keeping.reaching_writes("rax", 9) == {6}  # GCC keeps rax across a void callee


def test_a_register_never_written_in_the_function_is_not_followed(typing):
    assert typing.reaching_writes("rdi", 6) is None


FLOW = Struct(
    "flow",
    192,
    [
        Field("key", "uint64_t", 0, 8),
        Field("label", "char[40]", 8, 40),
        Field("last_ns", "uint64_t", 48, 8),
        Field("data", "char[0]", 56, 0),
    ],
)


@pytest.mark.parametrize(
    ("disp", "scale", "element"),
    [
        (48, 1, True),  # flows[i].last_ns, index scaled by the compiler
        (0, 192, True),  # scale == sizeof
        (16, 1, False),  # label[i]: an item of the member's array
        (56, 1, False),  # data[i]: a flexible array member
        (48, 8, False),  # an index of 8-byte items inside the struct
        (192, 1, False),  # past the struct
    ],
)
def test_an_indexed_access_is_an_element_only_at_a_field_outside_arrays(disp, scale, element):
    assert field_offset(FLOW, disp, scale) is element


def ops(hex_bytes: str) -> list:
    structs = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8)
    return DWARFExprParser(structs).parse_expr(list(bytes.fromhex(hex_bytes)))


def test_a_computed_location_base_plus_index_times_size_names_its_base():
    # clang's f = t + i: DW_OP_breg5 RDI+0, DW_OP_breg4 RSI+0, DW_OP_constu 0xc0,
    # DW_OP_mul, DW_OP_plus, DW_OP_stack_value
    assert element_base(ops("75007400 10c001 1e 22 9f".replace(" ", ""))) == "rdi"
    assert element_base(ops("7508 9f".replace(" ", ""))) is None  # &t->x: no index
    assert element_base(ops("75007400 10c001 1e 22".replace(" ", ""))) is None  # not a value


# boost::unordered_flat_map's `elements[pos * 15 + n]` as GCC 12 -O2 computes it, the
# group's first element in rbx (here a local held there), the slot's index times 72:
# 0 lea r8, [r8 + r8*8]      4 lea r8, [rbx + r8*8]     8 cmp [r8], rdx
# b add dword [r8 + 0x10], 1                            10 ret
SCALED_ELEMENT = bytes.fromhex("4f8d04c04e8d04c34939104183401001c3")
PAIR = Struct(
    "pair<long unsigned int const, Session>",
    72,
    [Field("first", "const long unsigned int", 0, 8), Field("second", "Session", 8, 64)],
)


def test_an_index_scaled_by_lea_onto_a_pointer_reaches_an_element_of_its_array():
    """The slot of a boost::unordered_flat_map was reached by `lea r8, [rbx + r8*8]`,
    which was not taken for an index added to rbx (scale 1 only), so the pairs a
    lookup reads had no layout."""
    group = Pointer("elements", "local", PAIR, None)
    typing = Typing(
        list(disassembler().disasm(SCALED_ELEMENT, 0x1000)),
        [Variable(group, ((0x1000, 0x1011, "rbx"),))],
    )
    key, hits = typing.access(0x1008), typing.access(0x100B)
    assert key is not None and hits is not None
    assert (key[0].name, key[0].indexed, key[1]) == ("elements[]", True, 0)
    assert hits[1] == 16  # second.hits, the pair's field at 16 (inside `second`)


# clang-16 -O2's probe loop of boost::unordered_flat_map: the groups' pointer loaded
# once before it, the group read at `[rcx + rbx]` inside a loop of 39 instructions
# (here the pointer from a stack slot, the loop's body additions):
# 0 mov rcx, [rbp - 8]   4: 36 x add rax, 1   movdqa xmm1, [rcx + rbx]   sub rdx, 1
# jne 4                  ret
PROBE_LOOP = bytes.fromhex("488b4df8" + "4883c001" * 36 + "660f6f0c194883ea010f8561ffffffc3")
GROUP = Struct("group15", 16, [Field("m", "__m128i", 0, 16)])


def test_a_pointer_loaded_before_a_long_probe_loop_is_followed_through_it():
    """The search back gave up after 32 instructions, so clang's build laid out no
    group: every path back from the load passes the loop's whole body."""
    groups = Pointer("groups", "local", GROUP, None)
    typing = Typing(
        list(disassembler().disasm(PROBE_LOOP, 0x1000)),
        [Variable(groups, (), slots=((0x1000, 0x10A4, -8),))],
    )
    found = typing.access(0x1094)
    assert found is not None
    assert (found[0].name, found[1]) == ("groups[]", 0)


# GCC -O2's probe loop of ankerl::unordered_dense: the values' pointer loaded before a
# jump into the loop, the alignment nop after the jump falling into the loop's start:
# 0 mov rdi, [rdi]   1 jmp 3   2 nop   3 add eax, 1   4 mov rcx, [rdi]   5 jne 3   6 ret
PADDED_LOOP = bytes.fromhex("488b3feb019083c001488b0f75f8c3")


def test_the_alignment_after_a_jump_is_no_path_back_to_the_entry():
    """The nop no instruction reaches was taken for the function's entry, a path on
    which rdi is never written: the pairs an unordered_dense lookup reads had no
    layout."""
    typing = Typing(list(disassembler().disasm(PADDED_LOOP, 0x1000)), [])
    assert typing.reaching_writes("rdi", 4) == {0}
    assert typing.reaching_writes("rsi", 4) is None  # a path back to the entry

"""Struct layout of the objects a function works on, pahole-style, with each field
marked hot or cold by the recorded accesses.

Three kinds of objects are laid out, each layout saying which variable it belongs to:

- the struct a pointer parameter of the traced function points to (DWARF). Which
  object a call worked on comes from the machine code: for an access through
  `disp(reg)`, reg held `address - disp`, and the base most accesses of a call agree
  on is the object. Accesses inside global struct variables do not vote, so a
  pointer into a global table is laid out as that global, nor do those through
  the pointers below;
- the structs local pointers (`f = &t->flows[i]`) and pointers held in members
  (`s->peer`) point to (pointers.py): each object an access through one reaches
  is a visit;
- global and static variables of struct type, or arrays of structs (per element),
  that the calls' accesses reach (globals.py).

Accesses inside [object, object + size) are attributed to the fields they overlap.
Where DWARF says which accesses go through the parameter, those alone say where
its object is (a table's head whose buckets the call walks is not the node most
accesses reach, nor a node's embedded handle taken for a node). A field is hot
when at least HOT_FRACTION of the visits touch it; a visit is one call's work on
one object (for an array, on one element). A line is hot by the bytes touched in
it, and holds every field that overlaps it: a field that crosses a line boundary
is listed on both lines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

from capstone import CS_ARCH_X86, CS_MODE_64, Cs, CsError
from capstone.x86 import X86_OP_MEM, X86_REG_INVALID, X86_REG_RBP, X86_REG_RIP, X86_REG_RSP
from elftools.common.exceptions import DWARFError, ELFError
from elftools.dwarf.die import DIE
from elftools.dwarf.locationlists import LocationParser

from ..binaries import PF_X, PT_LOAD, binary_at
from ..binaries.subprograms import attr_text, origin
from ..model.cpu_cache import (
    InnerField,
    Layout,
    LayoutField,
    LayoutLine,
    LayoutOwner,
    Move,
    NoLayout,
    Reorder,
    StructLayout,
)
from . import globals, pointers
from .globals import StructVariable, Visit
from .pointers import Pointer, Typing
from .struct_types import (
    Field,
    Struct,
    find_subprogram,
    strip_qualifiers,
    struct_of,
)
from .trace import Trace

Typed = dict[int, tuple[Pointer, int]]  # ELF address -> the pointer it goes through, disp
HOT_FRACTION = 0.25  # of visits touching a field, for it to count as hot
Member = TypeVar("Member", LayoutField, InnerField)
FRAME_REGISTERS = (X86_REG_RSP, X86_REG_RBP, X86_REG_RIP, X86_REG_INVALID)


def project(trace: Trace) -> tuple[Layout, list[StructLayout]]:
    """The first layout, or why there is none, and every layout: the parameter's
    first, then the globals by accesses, most first."""
    variables = globals.struct_variables(trace.executable)
    in_globals = globals.inside_one(variables, trace.base)
    typed = pointer_typing(trace.executable, trace.function, data_pcs(trace))
    through = pointer_accesses(trace, typed, in_globals)
    parameter, reason = parameter_layout(trace, typed, lambda a: in_globals(a) or a in through)
    layouts = [parameter] if parameter is not None else []
    layouts.extend(pointer_layouts(trace, through))
    layouts.extend(global_layouts(trace, variables))
    if not layouts:
        none: NoLayout = {"available": False, "reason": reason}
        return none, []
    return layouts[0], layouts


def parameter_layout(
    trace: Trace, typed: Typed, in_globals: Callable[[int], bool]
) -> tuple[StructLayout | None, str]:
    """The layout of the struct a pointer parameter points to, or why there is none:
    the parameter whose accesses DWARF names in most calls, with the struct it points
    to; without DWARF's names, the struct that best covers where the accesses agree."""
    structs, reason = parameter_structs(trace.executable, trace.function)
    if not structs:
        return None, reason
    declared = dict(structs)
    through: dict[str, list[Visit]] = {}
    untyped: list[tuple[Visit, tuple[int, int]]] = []
    for number, call in enumerate(trace.calls):
        found = parameter_base(call, trace, typed)
        if found is not None and found[0] in declared:
            through.setdefault(found[0], []).append(Visit(number, found[1], call))
        elif (voted := object_base(call, trace, in_globals)) is not None:
            untyped.append((Visit(number, voted[0], call), voted[1]))
    if through:
        name, visits = max(through.items(), key=lambda named: len(named[1]))
        best = declared[name]
    elif untyped:
        visits = [visit for visit, _ in untyped]
        name, best = max(structs, key=lambda named: coverage(named[1], visits))
        visits = [visit for visit, (low, high) in untyped if low >= 0 and high <= best.size]
        if not visits:
            low, high = untyped[0][1]
            return None, (
                f"no access of {trace.function} goes through its pointer parameters, and the "
                f"accesses that agree on an object reach bytes {low} to {high} of it, past the "
                f"end of struct {best.name} ({best.size} B): not an object of that struct, so "
                "the parameters' objects could not be told apart"
            )
    else:
        return None, (
            f"no access of {trace.function} goes through a struct pointer (reg+displacement) "
            "or into a global struct variable, so its objects could not be told apart"
        )
    owner: LayoutOwner = {"parameter": name, "variable": name, "variable_kind": "parameter"}
    return layout_of(best, visits, trace.line_size, owner), ""


def data_pcs(trace: Trace) -> frozenset[int]:
    """The ELF addresses of the instructions that made the data accesses."""
    return frozenset(pc - trace.base for call in trace.calls for k, _a, _s, pc in call if k != "I")


def pointer_accesses(
    trace: Trace, typed: Typed, in_globals: Callable[[int], bool]
) -> dict[int, tuple[Pointer, int]]:
    """Address -> (pointer, disp) of the accesses through locals and members (not
    parameters, not into globals)."""
    through = {}
    for call in trace.calls:
        for kind, address, _size, pc in call:
            found = typed.get(pc - trace.base)
            if (
                kind != "I"
                and found is not None
                and found[0].kind != "parameter"
                and not in_globals(address)
            ):
                through[address] = found
    return through


def pointer_layouts(trace: Trace, through: dict[int, tuple[Pointer, int]]) -> list[StructLayout]:
    """One layout per local or member pointer, a visit per call and object it reached."""
    reached: dict[str, tuple[Pointer, dict[tuple[int, int], list]]] = {}
    for number, call in enumerate(trace.calls):
        for kind, address, _size, _pc in call:
            found = through.get(address) if kind != "I" else None
            if found is not None:
                pointer, disp = found
                objects = reached.setdefault(pointer.name, (pointer, {}))[1]
                objects.setdefault((number, address - disp), [])
    layouts = []
    for pointer, objects in reached.values():
        visits = [
            Visit(number, base, inside(trace.calls[number], base, pointer.struct.size))
            for number, base in objects
        ]
        owner: LayoutOwner = {
            "parameter": None,
            "variable": pointer.name,
            "variable_kind": "member" if pointer.kind == "member" else "local",
        }
        layouts.append(layout_of(pointer.struct, visits, trace.line_size, owner))
    return sorted(layouts, key=lambda lay: -lay["visits"])


def inside(call: list, base: int, size: int) -> list:
    return [a for a in call if a[0] != "I" and 0 <= a[1] - base < size]


@lru_cache(maxsize=16)
def pointer_typing(executable: str, function: str, pcs: frozenset[int]) -> Typed:
    """ELF address -> (pointer, disp) for the accesses at pcs that go through a
    parameter, local or member pointer; empty without DWARF."""
    binary = binary_at(executable)
    dwarf = binary.dwarf() if binary else None
    if binary is None or dwarf is None:
        return {}
    try:
        subprogram = find_subprogram(binary, function)
        if subprogram is None:
            return {}
        start, end = pc_range(subprogram)
        locations = LocationParser(dwarf.location_lists())
        code = list(disassembler().disasm(code_between(executable, start, end), start))
        frame = pointers.frame_base_offset(subprogram, code)
        known = pointers.variables(subprogram, (start, end), locations, frame)
        typing = Typing(code, known, pointers.void_callees(subprogram, code))

        typed = {pc: typing.access(pc) for pc in pcs}
    except (ELFError, DWARFError, CsError):  # the pointers are then not followed
        return {}
    return {pc: t for pc, t in typed.items() if t is not None}


def pc_range(subprogram: DIE) -> tuple[int, int]:
    low = subprogram.attributes["DW_AT_low_pc"].value
    high = subprogram.attributes.get("DW_AT_high_pc")
    if high is None:
        return low, low
    return low, high.value if high.form == "DW_FORM_addr" else low + high.value


def code_between(executable: str, start: int, end: int) -> bytes:
    for segment, data in text_segments(executable):
        if segment <= start < segment + len(data):
            return data[start - segment : end - segment]
    return b""


def global_layouts(trace: Trace, variables: tuple[StructVariable, ...]) -> list[StructLayout]:
    reached = globals.touched(variables, trace)
    ranked = sorted(reached, key=lambda v: -sum(len(visit.accesses) for visit in reached[v]))
    return [global_layout(v, reached[v], trace.line_size) for v in ranked]


def global_layout(variable: StructVariable, visits: list[Visit], line: int) -> StructLayout:
    owner: LayoutOwner = {
        "parameter": None,
        "variable": variable.name,
        "variable_kind": "global" if variable.external else "static",
        "address": variable.address,
        "elements": variable.elements,
        "elements_touched": len({visit.start for visit in visits}),
    }
    return layout_of(variable.struct, visits, line, owner)


def coverage(struct: Struct, visits: list[Visit]) -> int:
    return sum(
        1
        for visit in visits
        for kind, address, _s, _pc in visit.accesses
        if kind != "I" and 0 <= address - visit.start < struct.size
    )


def layout_of(struct: Struct, visits: list[Visit], line: int, owner: LayoutOwner) -> StructLayout:
    touched: Counter[str] = Counter()
    in_line: Counter[int] = Counter()
    lines_touched: list[int] = []
    for visit in visits:
        names, lines = touched_fields(struct, visit.accesses, visit.start, line)
        touched.update(names)
        in_line.update(struct_lines(struct, visit.accesses, visit.start, line))
        lines_touched.append(len(lines))
    fields = [field_row(f, touched, len(visits), line) for f in struct.fields]
    heat = [in_line[index] / len(visits) for index in range(-(-struct.size // line))]
    by_line = line_rows(fields, line, heat)
    aligned = Counter(visit.start % line for visit in visits).most_common(1)[0][0]
    return {
        "available": True,
        "struct": struct.name,
        "size": struct.size,
        "line_size": line,
        "object_misalignment": aligned,
        "calls": len({visit.call for visit in visits}),
        "visits": len(visits),
        "objects": len({visit.start for visit in visits}),
        "fields": fields,
        "lines": by_line,
        "lines_touched_per_call": sum(lines_touched) / len(lines_touched),
        "reorder": reordering(fields, by_line, line),
        "pahole": render(struct, fields, line),
        **owner,
    }


def touched_fields(struct: Struct, call: list, base: int, line: int) -> tuple[set[str], set[int]]:
    names: set[str] = set()
    lines: set[int] = set()
    for kind, address, size, _pc in call:
        offset = address - base
        if kind == "I" or not 0 <= offset < struct.size:
            continue
        lines.update(range(address // line, (address + size - 1) // line + 1))
        names.update(
            f.name
            for f in struct.fields
            if not f.empty and f.span()[0] < offset + size and offset < f.span()[1]
        )
        names.update(
            inner_key(f, leaf)
            for f in struct.fields
            for leaf in f.inner
            if leaf.offset < offset + size and offset < leaf.offset + leaf.size
        )
    return names, lines


def inner_key(outer: Field, leaf: Field) -> str:
    """A member inside another one, as its visits are counted."""
    return f"{outer.name}\0{leaf.name}"


def struct_lines(struct: Struct, call: list, base: int, line: int) -> set[int]:
    """The lines of the struct (0 its first) whose bytes these accesses touch."""
    touched: set[int] = set()
    for kind, address, size, _pc in call:
        start, end = max(address - base, 0), min(address - base + size, struct.size)
        if kind != "I" and start < end:
            touched.update(range(start // line, (end - 1) // line + 1))
    return touched


def field_row(f: Field, touched: Counter[str], visits: int, line: int) -> LayoutField:
    start, end = f.span()
    heat = touched[f.name] / visits
    row: LayoutField = {
        "name": f.name,
        "type": f.type_name,
        "offset": f.offset,
        "size": f.size,
        "bit_offset": f.bit_offset,
        "bit_size": f.bit_size,
        "bytes": end - start,  # what the field occupies: a bitfield's bits, rounded out
        "ancestor": f.ancestor,
        "fixed": f.fixed,
        "line": start // line,
        "touched": heat,
        "hot": heat >= HOT_FRACTION,
    }
    if f.inner:
        row["inside"] = [
            inner_row(leaf, touched[inner_key(f, leaf)] / visits, line) for leaf in f.inner
        ]
    return row


def inner_row(leaf: Field, heat: float, line: int) -> InnerField:
    return {
        "name": leaf.name,
        "type": leaf.type_name,
        "offset": leaf.offset,
        "size": leaf.size,
        "line": leaf.offset // line,
        "touched": heat,
        "hot": heat >= HOT_FRACTION,
    }


def line_rows(fields: list[LayoutField], line: int, heat: list[float]) -> list[LayoutLine]:
    """Per line of the struct: the fields that overlap it, hot ones only on a line
    whose bytes are hot; heat: the share of the visits touching each line."""
    rows: list[LayoutLine] = []
    for index, touched in enumerate(heat):
        low, high = index * line, (index + 1) * line
        here = [(f, overlap) for f in fields if (overlap := bytes_within(f, low, high)) > 0]
        hot = {f["name"]: n for f, n in here if f["hot"] and touched >= HOT_FRACTION}
        rows.append(
            {
                "line": index,
                "hot_fields": list(hot),
                "cold_fields": [f["name"] for f, _ in here if f["name"] not in hot],
                "hot_bytes": sum(hot.values()),
                "touched": touched,
            }
        )
    return rows


def bytes_within(f: LayoutField, low: int, high: int) -> int:
    """How many of the bytes the field occupies lie in [low, high)."""
    start = (
        f["offset"] if f["bit_size"] is None else (f["offset"] * 8 + (f["bit_offset"] or 0)) // 8
    )
    return max(0, min(high, start + f["bytes"]) - max(low, start))


def reordering(fields: list[LayoutField], lines: list[LayoutLine], line: int) -> Reorder | None:
    """Move the hot fields of one hot line into the cold room of the hottest other
    one: the least-hot line first, then the next, until a move fits; where the hot
    fields are base classes (never moved), the members of a struct inside them."""
    if all(f.get("fixed") for f in fields if f["hot"]):
        return inner_reordering(fields, line)
    hot_lines = [r for r in lines if r["hot_fields"]]
    hot_bytes = sum(r["hot_bytes"] for r in hot_lines)
    needed = max(1, -(-hot_bytes // line))
    if len(hot_lines) <= needed:
        return None
    for source in sorted(hot_lines, key=lambda r: r["hot_bytes"]):
        target = max((r for r in hot_lines if r is not source), key=lambda r: r["hot_bytes"])
        move = line_move(fields, source["line"], target["line"], line)
        if move is not None:
            return {
                **move,
                "lines_per_object_before": len(hot_lines),
                "lines_per_object_after": len(hot_lines) - 1,
            }
    return None


def inner_reordering(fields: list[LayoutField], line: int) -> Reorder | None:
    """Within a struct that a base class holds (libstdc++'s unordered_map node keeps
    the user's value inside `_Hash_node_value`): the hot members of the least-hot
    line, all of one struct (`_M_storage.second.`), moved into the cold room that
    struct has on the hottest other line, in the outer struct's own lines."""
    leaves = [leaf for f in fields if f.get("fixed") for leaf in f.get("inside", [])]
    hot = [leaf for leaf in leaves if leaf["hot"]]
    on_line: Counter[int] = Counter()
    for leaf in hot:
        for index in leaf_lines(leaf, line):
            on_line[index] += leaf["size"]
    if len(on_line) <= max(1, -(-sum(leaf["size"] for leaf in hot) // line)):
        return None
    target = on_line.most_common(1)[0][0]
    for source, _ in sorted(on_line.items(), key=lambda item: item[1]):
        moving = [leaf for leaf in hot if source in leaf_lines(leaf, line)]
        owners = {leaf["name"].rpartition(".")[0] for leaf in moving}
        if source == target or len(owners) != 1 or "" in owners:
            continue
        if any(leaf_lines(leaf, line) != {source} for leaf in moving):
            continue  # a hot member crossing into another line keeps that line hot
        (owner,) = owners
        cold = [
            leaf
            for leaf in leaves
            if not leaf["hot"]
            and leaf["line"] == target
            and leaf["name"].rpartition(".")[0] == owner
        ]
        swapped = room_for(sum(leaf["size"] for leaf in moving), cold, lambda f: f["size"])
        if swapped is not None:
            return {
                "move": [leaf["name"] for leaf in moving],
                "from_line": source,
                "to_line": target,
                "swap_out": [leaf["name"] for leaf in swapped],
                "lines_per_object_before": len(on_line),
                "lines_per_object_after": len(on_line) - 1,
            }
    return None


def leaf_lines(leaf: InnerField, line: int) -> set[int]:
    """The lines of the outer struct a member's bytes lie on."""
    start, end = leaf["offset"], leaf["offset"] + max(leaf["size"], 1)
    return set(range(start // line, (end - 1) // line + 1))


def room_for(need: int, cold: list[Member], size: Callable[[Member], int]) -> list[Member] | None:
    """The cold fields that make room for need bytes: one big enough if there is one,
    else the smallest few; None when all of them are not enough."""
    ordered = sorted(cold, key=size)
    single = next((f for f in ordered if size(f) >= need), None)
    if single is not None:
        return [single]
    swapped: list[Member] = []
    room = 0
    for f in ordered:
        if room >= need:
            break
        swapped.append(f)
        room += size(f)
    return swapped if room >= need else None


def line_move(fields: list[LayoutField], source: int, target: int, line: int) -> Move | None:
    """The hot fields of line `source` and the cold fields of line `target` that would
    make room for them (one big enough if there is one, else the smallest few)."""
    source_bytes = (source * line, (source + 1) * line)
    moving = [f for f in fields if f["line"] == source and f["hot"]]
    if any(f.get("fixed") for f in moving):
        return None  # a base class or vtable pointer stays where the language puts it
    if any(f["hot"] and f["line"] < source and bytes_within(f, *source_bytes) for f in fields):
        return None  # a hot field from the line before crosses into it: the line stays hot
    need = sum(f["bytes"] for f in moving)
    cold_there = [f for f in fields if f["line"] == target and not f["hot"] and not f.get("fixed")]
    swapped = room_for(need, cold_there, lambda f: f["bytes"])
    if swapped is None:
        return None
    return {
        "move": [f["name"] for f in moving],
        "from_line": source,
        "to_line": target,
        "swap_out": [f["name"] for f in swapped],
    }


def render(struct: Struct, fields: list[LayoutField], line: int) -> str:
    """pahole's layout: members with /* offset size */ (/* offset:bit size */ for
    bitfields), cache line boundaries, holes (in bits after a bitfield)."""
    out = ["typedef struct {" if struct.typedef else f"struct {struct.name} {{"]
    end, after_bitfield = 0, False
    for member, f in zip(struct.fields, fields, strict=True):
        start, stop = member.bits()
        if start > end:
            gap = start - end
            hole = f"{gap} bits" if after_bitfield or gap % 8 else f"{gap // 8} bytes"
            out.append(f"\t/* XXX {hole} hole, try to pack */")
        if f["offset"] and f["offset"] % line == 0 and start == f["offset"] * 8 and start >= end:
            out.append(
                f"\t/* --- cacheline {f['offset'] // line} boundary ({f['offset']} bytes) --- */"
            )
        out.append(f"\t{member_line(f)}  " + (f"hot {f['touched']:.0%}" if f["hot"] else "cold"))
        end = max(end, stop)
        after_bitfield = member.bit_size is not None
    if struct.size * 8 > end:
        out.append(f"\t/* padding: {struct.size - (end + 7) // 8} */")
    lines = -(-struct.size // line)
    out.append("")
    out.append(f"\t/* size: {struct.size}, cachelines: {lines}, members: {len(fields)} */")
    out.append(f"}} {struct.name};" if struct.typedef else "};")
    return "\n".join(out)


def member_line(f: LayoutField) -> str:
    element, _, dims = f["type"].partition("[")
    name = f"{f['name']}[{dims}" if dims else f["name"]
    if "(*)(" in f["type"]:  # a function pointer: `int (*compare)(const void *)`
        returns, _, parameters = f["type"].partition(" (*)")
        element, name = returns, f"(*{f['name']}){parameters}"
    if f.get("ancestor"):
        name = "<ancestor>"
    if f["bit_size"] is None:
        return f"{element:<26} {name + ';':<21} /* {f['offset']:5} {f['size']:5} */"
    name = f"{name}:{f['bit_size']};"
    return f"{element:<26} {name:<21} /* {f['offset']:5}:{f['bit_offset']:2} {f['size']:2} */"


def parameter_base(call: list, trace: Trace, typed: Typed) -> tuple[str, int] | None:
    """The parameter and the object the accesses DWARF says go through a parameter
    agree on: where the parameter points (a list's head, whose nodes the call then
    walks, is not taken for whichever node most accesses reach)."""
    votes: Counter[tuple[str, int]] = Counter()
    for kind, address, _size, pc in call:
        found = typed.get(pc - trace.base) if kind != "I" else None
        if found is not None and found[0].kind == "parameter":
            votes[(found[0].name, address - found[1])] += 1
    return votes.most_common(1)[0][0] if votes else None


def object_base(
    call: list, trace: Trace, in_globals: Callable[[int], bool]
) -> tuple[int, tuple[int, int]] | None:
    """The base address most struct-pointer accesses of one call agree on, and the
    bytes [low, high) of the object those accesses reach: an object they reach past
    the end of is not of the struct (stb_ds's lookup reads its hash index's header at
    displacements up to 104, which laid out the 72-byte item as `*map`)."""
    votes: Counter[int] = Counter()
    reach: dict[int, tuple[int, int]] = {}
    for kind, address, size, pc in call:
        if kind == "I" or in_globals(address):
            continue
        disp = displacement(trace.executable, pc - trace.base)
        if disp is not None:
            base = address - disp
            votes[base] += 1
            low, high = reach.get(base, (disp, disp + size))
            reach[base] = (min(low, disp), max(high, disp + size))
    if not votes:
        return None
    base = votes.most_common(1)[0][0]
    return base, reach[base]


@lru_cache(maxsize=4096)
def displacement(executable: str, vaddr: int) -> int | None:
    """disp of the instruction's `disp(reg)` memory operand, None for stack, RIP or indexed."""
    code = code_at(executable, vaddr)
    if not code:
        return None
    try:
        insn = next(disassembler().disasm(code, vaddr, 1), None)
    except CsError:
        return None
    if insn is None:
        return None
    for op in insn.operands:
        if op.type == X86_OP_MEM:
            mem = op.mem
            if mem.base in FRAME_REGISTERS or mem.index != X86_REG_INVALID:
                return None
            return int(mem.disp)
    return None


@lru_cache(maxsize=1)
def disassembler() -> Cs:
    md = Cs(CS_ARCH_X86, CS_MODE_64)
    md.detail = True
    return md


def code_at(executable: str, vaddr: int) -> bytes:
    for start, data in text_segments(executable):
        if start <= vaddr < start + len(data):
            return data[vaddr - start : vaddr - start + 16]
    return b""


@lru_cache(maxsize=8)
def text_segments(executable: str) -> tuple[tuple[int, bytes], ...]:
    binary = binary_at(executable)
    if binary is None:
        return ()
    return tuple(
        (seg.vaddr, binary.data(seg))
        for seg in binary.segments
        if seg.type == PT_LOAD and seg.flags & PF_X
    )


def parameter_structs(executable: str, function: str) -> tuple[list[tuple[str, Struct]], str]:
    """Structs the function's pointer parameters point to, or why there are none."""
    binary = binary_at(executable)
    if binary is None:
        return [], f"could not read the debug info of {executable} (not an ELF file)"
    dwarf = binary.dwarf()
    if dwarf is None:
        return [], (
            f"{executable} has no DWARF debug info, so struct layouts are unknown; "
            "rebuild with -g (the footprint does not need it)"
        )
    try:
        subprogram = find_subprogram(binary, function)
        if subprogram is None:
            return [], (
                f"the debug info of {executable} does not describe {function}: its source "
                "file was built without -g, so struct layouts are unknown (the footprint "
                "does not need them)"
            )
        structs = [
            (name, struct)
            for name, declared in parameters(subprogram)
            if (struct := pointed_struct(declared)) is not None
        ]
    except (ELFError, DWARFError) as e:
        return [], f"could not read the debug info of {executable} ({e})"
    if not structs:
        return [], (
            f"{function} takes no pointer to a struct and touches no global struct variable, "
            "so there is no layout to show"
        )
    return structs, ""


def parameters(subprogram: DIE) -> list[tuple[str, DIE]]:
    out = []
    for child in subprogram.iter_children():
        if child.tag != "DW_TAG_formal_parameter":
            continue
        declared = origin(child)
        if "DW_AT_type" in declared.attributes:
            out.append(
                (attr_text(declared, "DW_AT_name"), declared.get_DIE_from_attribute("DW_AT_type"))
            )
    return out


def pointed_struct(declared: DIE) -> Struct | None:
    type_die = strip_qualifiers(declared)
    if (
        type_die is None
        or type_die.tag != "DW_TAG_pointer_type"
        or "DW_AT_type" not in type_die.attributes
    ):
        return None
    return struct_of(type_die.get_DIE_from_attribute("DW_AT_type"))

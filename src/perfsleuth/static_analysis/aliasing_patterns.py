"""Aliasing writes in the source: a store through a char-like type forces the
compiler to reload memory.

In C and C++ a write through char, signed/unsigned char, (u)int8_t or std::byte may
modify any object, so after it the compiler must load again every value it had read
from memory: a vector's size and data pointer, a struct field, a row pointer. In a
loop that means loads on every iteration and, usually, no vectorisation.

The source patterns, by confidence:
  loop-condition  the loop condition reads memory (directly, or through an inline
                  accessor such as size() or end()) and the body writes through a
                  char-like type; high confidence when the body has no branches;
  loop-body       a loop-invariant memory read (data pointer behind operator[], p->field,
                  rows[r]) repeated in a body that writes through a char-like type;
  straight-line   the same pointer-field, dereference or element read before and after
                  a char-typed write, its base unchanged in between (low confidence).
Loops that cannot be vectorised whatever the types — a call the compiler cannot see
through (those reload anyway), an early exit, a volatile or atomic access, inline
assembly — are not matches but `Blocked`, with what blocks them, for the missed-
vectorisation finding to name. Char writes outside a loop, or outside the inner
loops of an outer one, and stores to a struct's own char fields match nothing.
The compiler's remarks and the machine code (unit_analysis.py) confirm or refute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import byte_map
from .clang_ast import (
    LOOP_KINDS,
    SourceText,
    children,
    cursor_kind,
    function_definitions,
    operator_of,
    root_variable,
    strip_reference,
    unwrap,
    walk,
)
from .cpu_limits import cpu_seconds
from .memory_access import WRITE_OPERATORS, Access, FunctionBody, access_at

BRANCH_KINDS = (
    "IF_STMT",
    "SWITCH_STMT",
    "CONDITIONAL_OPERATOR",
    "BREAK_STMT",  # a switch's: a loop's own break is an early exit
    "CONTINUE_STMT",
)
# Statements that leave a loop before its condition says so; with any of them the
# loop cannot be vectorised whatever the types.
EXIT_KINDS = ("RETURN_STMT", "GOTO_STMT", "INDIRECT_GOTO_STMT", "CXX_THROW_EXPR")
ASM_KINDS = ("ASM_STMT", "GCC_ASM_STMT", "MS_ASM_STMT")
# Expressions whose type says whether they are a volatile or an atomic access.
ACCESS_KINDS = ("DECL_REF_EXPR", "UNARY_OPERATOR", "MEMBER_REF_EXPR", "ARRAY_SUBSCRIPT_EXPR")
ATOMIC_CLASSES = ("atomic", "__atomic_base", "atomic_ref", "__atomic_float", "__atomic_ref")
CONFIDENCE = {"loop-condition": 0.85, "loop-body": 0.7, "straight-line": 0.35}
BRANCH_PENALTY = 0.2
# Where the compiler's own headers live (libclang may spell them
# "/../lib/gcc/.../include/c++/12/..."): their code is not the user's to change.
STANDARD_LIBRARY_FOLDERS = ("/include/c++/", "/lib/gcc/", "/lib/llvm-", "/lib/clang/")
# A loop whose condition bounds it by a small constant (`i < 2`, `i < n && i < 16`)
# repeats its reloads a few times per call at most (the compiler often unrolls it
# into that many stores): no measurable cost on its own.
SHORT_LOOP = 16
SHORT_LOOP_CONFIDENCE = 0.3
CONSTANT_BOUND = re.compile(r"<=?\s*(\d+)[uUlL]*\b(?!\s*[.*/+-])|\b(\d+)[uUlL]*\s*>=?")
# `i < repetitions`: the variable a loop condition bounds its counter by.
VARIABLE_BOUND = re.compile(r"<=?\s*([A-Za-z_]\w*)\s*$")


@dataclass
class AliasMatch:
    """One source-level match: a memory read the compiler must repeat, and the
    char-typed write that forces it."""

    pattern: str  # "loop-condition", "loop-body" or "straight-line"
    function: str
    file: str
    line: int  # the loop's first line, or the repeated read's line for straight-line code
    end_line: int
    read: str  # the memory read that must be repeated, as written in the source
    read_line: int
    write: str  # the char-typed write
    write_line: int
    write_type: str
    confidence: float
    branches: bool = False
    fixes: list[str] = field(default_factory=list)
    # The repeated read is of a local object: a finding only if clang fails to vectorise.
    needs_compiler: bool = False
    # Every repeated read that can be computed once before the loop, as written.
    hoistable: list[str] = field(default_factory=list)
    # Containers indexed in the loop (`in` of in[i]) whose data pointer can be read
    # once before it: `in.data()`.
    indexed: list[str] = field(default_factory=list)
    # The constant the loop condition bounds it by, when at most SHORT_LOOP.
    short_trip: int | None = None
    # Where the written byte type is spelled: [file, line] of the declaration (a field,
    # a variable, or the typedef it is declared with), the line char8_t would change.
    write_declared: list = field(default_factory=list)
    # The loop maps bytes through a switch (byte_map.py): computed without branches in
    # blocks, both compilers vectorise it, whatever the types.
    byte_map: bool = False

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Blocked:
    """A loop that writes through a char-like type and repeats reads, but that
    something other than types keeps scalar: missed vectorisation for that reason."""

    function: str
    file: str
    line: int
    end_line: int
    kind: str  # "call", "exit", "volatile", "atomic" or "asm"
    what: str  # the call, the exit or the access, as written
    what_line: int


@dataclass
class SourceScan:
    """What the source patterns found in a unit: aliasing matches, and loops that
    would match but cannot be vectorised for another reason."""

    matches: list[AliasMatch] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    read: int = 0  # the functions searched
    unread: int = 0  # the functions left when the deadline came


class _LoopScan:
    """The memory reads, char writes and assigned variables of one loop iteration."""

    def __init__(self, fn: FunctionBody, loop: Any) -> None:
        self.fn = fn
        self.loop = loop
        self.condition, self.body = _loop_parts(loop, fn.src)
        per_iteration = [*self.condition, *([self.body] if self.body is not None else [])]
        self.nodes = [n for part in per_iteration for n in walk(part)]
        self.writes = [(n, t) for n in self.nodes if (t := fn.char_write(n)) is not None]
        write_keys = {fn.src.text(t) for _, t in self.writes}
        self.variant = _assigned_or_declared(self.nodes, fn.src)
        condition_nodes = {n.hash for part in self.condition for n in walk(part)}
        self.reads: list[tuple[Access, bool]] = []
        for node in self.nodes:
            access = access_at(fn, node)
            if access is None or access.deps & self.variant:
                continue
            if access.key in write_keys:
                continue
            self.reads.append((access, node.hash in condition_nodes))

    def result(self) -> AliasMatch | Blocked | None:
        """The aliasing match, the reason the loop stays scalar anyway, or nothing."""
        if not self.writes or not self.reads:
            return None
        blocked = self.blocker()
        if blocked is not None:
            return blocked
        return None if self._writes_outside_inner_loops() else self.match()

    def match(self) -> AliasMatch:
        locals_only = all(a.deps <= self.fn.local_objects for a, _ in self.reads)
        condition_reads = [a for a, in_condition in self.reads if in_condition]
        read = (condition_reads or [a for a, _ in self.reads])[0]
        pattern = "loop-condition" if condition_reads else "loop-body"
        write, target = self.writes[0]
        branches = self.body is not None and any(
            cursor_kind(n) in BRANCH_KINDS for n in walk(self.body)
        )
        confidence = CONFIDENCE[pattern] - (BRANCH_PENALTY if branches else 0.0)
        src = self.fn.src
        maps_bytes = branches and byte_map.blocked(src.text(self.loop)) is not None
        condition = " && ".join(src.text(part) for part in self.condition)
        short_trip = _constant_bound(condition)
        if short_trip is None:
            short_trip = _guarded_bound(self.fn, self.loop, condition)
        if short_trip is not None:
            confidence = min(confidence, SHORT_LOOP_CONFIDENCE)
        return AliasMatch(
            pattern=pattern,
            function=self.fn.name,
            file=str(self.loop.extent.start.file.name),
            line=self.loop.extent.start.line,
            end_line=self.loop.extent.end.line,
            read=src.text(read.node),
            read_line=read.node.extent.start.line,
            write=src.text(write),
            write_line=write.extent.start.line,
            write_type=_type_name(target),
            confidence=round(confidence, 2),
            branches=branches,
            fixes=[byte_map.FIX] * maps_bytes + _fixes(self.fn, read, target, pattern),
            needs_compiler=locals_only,
            hoistable=self._hoistable(),
            indexed=self._indexed(),
            short_trip=short_trip,
            write_declared=_declared_at(target),
            byte_map=maps_bytes,
        )

    def blocker(self) -> Blocked | None:
        """What other than types keeps the loop scalar: a call the compiler cannot
        see through (it reloads anyway), an early exit, a volatile or atomic access,
        inline assembly. Such a loop is missed vectorisation for that reason, not an
        aliasing write."""
        calls = self.fn.opaque_calls(self.loop)
        if calls:
            return self._blocked("call", calls[0])
        exit_node = _early_exit(self.body) if self.body is not None else None
        if exit_node is not None:
            return self._blocked("exit", exit_node)
        for node in self.nodes:
            kind = _volatile_atomic_or_asm(node)
            if kind:
                return self._blocked(kind, node)
        return None

    def _blocked(self, kind: str, node: Any) -> Blocked:
        return Blocked(
            function=self.fn.name,
            file=str(self.loop.extent.start.file.name),
            line=self.loop.extent.start.line,
            end_line=self.loop.extent.end.line,
            kind=kind,
            what=self.fn.src.text(node),
            what_line=node.extent.start.line,
        )

    def _writes_outside_inner_loops(self) -> bool:
        """An outer loop whose char writes all sit outside its inner loops: the
        reloads happen once per inner loop run, not per element."""
        inner = [n for n in self.nodes if cursor_kind(n) in LOOP_KINDS]
        return bool(inner) and not any(
            _inside(write, loop) for write, _ in self.writes for loop in inner
        )

    def _indexed(self) -> list[str]:
        """The containers the loop indexes with operator[] (read or written), unless
        the loop assigns them: their data pointer does not change in the loop."""
        src = self.fn.src
        written = {src.text(children(n)[0]) for n in self.nodes if _is_assignment(n, src)}
        found: dict[str, None] = {}
        for node in self.nodes:
            if cursor_kind(node) != "CALL_EXPR" or node.spelling != "operator[]":
                continue
            kids = children(node)
            if not kids or strip_reference(unwrap(kids[0]).type).get_canonical().kind.name != (
                "RECORD"
            ):
                continue
            text = src.text(kids[0])
            if text.isidentifier() and text not in written:
                found[text] = None
        return list(found)

    def _hoistable(self) -> list[str]:
        """The repeated reads' texts, outermost first; element accessors (v[i]) are
        left out, as their index changes."""
        src = self.fn.src
        written = {src.text(children(n)[0]) for n in self.nodes if _is_assignment(n, src)}
        texts: dict[str, None] = {}
        for access, _ in self.reads:
            text = src.text(access.node)
            if cursor_kind(unwrap(access.node)) == "CALL_EXPR" and not text.endswith("()"):
                continue
            if text in written:
                continue
            if not any(text in other for other in texts):
                texts[text] = None
        return list(texts)


def _declared_at(target: Any) -> list:
    """[file, line] of the declaration whose type the write goes through: the field of
    `k.bytes[0]`, the variable of `out[i]` or `*p` — or the typedef or alias its type is
    spelled with (`using Bytes = std::vector<uint8_t>`); [] when not found."""
    node = unwrap(target)
    while cursor_kind(node) in ("ARRAY_SUBSCRIPT_EXPR", "CALL_EXPR", "UNARY_OPERATOR"):
        kids = children(node)
        if not kids:
            return []
        node = unwrap(kids[0])
    decl = node.referenced if cursor_kind(node) in ("MEMBER_REF_EXPR", "DECL_REF_EXPR") else None
    if decl is None or cursor_kind(decl) not in ("FIELD_DECL", "VAR_DECL", "PARM_DECL"):
        return []
    spelled = decl.type.get_declaration()
    if cursor_kind(spelled) in ("TYPEDEF_DECL", "TYPE_ALIAS_DECL") and spelled.location.file:
        decl = spelled
    return [str(decl.location.file.name), decl.location.line] if decl.location.file else []


def _constant_bound(condition: str) -> int | None:
    """The smallest constant the loop condition compares its counter with, when it
    is at most SHORT_LOOP (`i < 2` -> 2); None otherwise."""
    bounds = [int(a or b) for a, b in CONSTANT_BOUND.findall(condition)]
    small = [bound for bound in bounds if bound <= SHORT_LOOP]
    return min(small) if small else None


def _guarded_bound(fn: FunctionBody, loop: Any, condition: str) -> int | None:
    """The small constant an enclosing `if` bounds the loop's bound variable by:
    `if (n < 3) for (i = 0; i < n; i++)` runs at most 2 times; None otherwise."""
    first = condition.split("&&")[0].strip()
    bound = VARIABLE_BOUND.search(first)
    if bound is None:
        return None
    guard = re.compile(rf"\b{bound.group(1)}\s*(<=?)\s*(\d+)[uUlL]*\s*$")
    for node in walk(fn.cursor):
        kids = children(node) if cursor_kind(node) == "IF_STMT" else []
        if len(kids) < 2 or not _inside(loop, kids[1]):
            continue
        found = guard.search(fn.src.text(kids[0]))
        if found is not None:
            limit = int(found.group(2)) - (found.group(1) == "<")
            if limit <= SHORT_LOOP:
                return limit
    return None


def _early_exit(node: Any, own_break: bool = True) -> Any | None:
    """The statement by which this part of a loop body leaves the loop: return,
    goto, throw, or a break that is not a switch's or an inner loop's."""
    kind = cursor_kind(node)
    if kind in EXIT_KINDS or (kind == "BREAK_STMT" and own_break):
        return node
    if kind == "LAMBDA_EXPR":
        return None  # its returns leave the lambda, not the loop
    own_break = own_break and kind not in (*LOOP_KINDS, "SWITCH_STMT")
    return next(
        (found for kid in children(node) if (found := _early_exit(kid, own_break)) is not None),
        None,
    )


def _volatile_atomic_or_asm(node: Any) -> str:
    """The kind of access that keeps a loop scalar — "volatile", "atomic" (a C
    `_Atomic` object, or a member call of std::atomic) or "asm" — else ""."""
    kind = cursor_kind(node)
    if kind in ASM_KINDS:
        return "asm"
    if kind == "CALL_EXPR":
        callee = node.referenced
        owner = callee.semantic_parent if callee is not None else None
        return "atomic" if owner is not None and owner.spelling in ATOMIC_CLASSES else ""
    if kind not in ACCESS_KINDS:
        return ""
    ctype = node.type
    if ctype.is_volatile_qualified():
        return "volatile"
    return "atomic" if ctype.get_canonical().kind.name == "ATOMIC" else ""


def _inside(node: Any, outer: Any) -> bool:
    start, end = node.extent.start.offset, node.extent.end.offset
    return outer.extent.start.offset <= start and end <= outer.extent.end.offset


def _loop_parts(loop: Any, src: SourceText) -> tuple[list[Any], Any | None]:
    """(condition and increment expressions, body) of a loop; init is left out."""
    kids = children(loop)
    kind = cursor_kind(loop)
    if kind == "DO_STMT":
        return kids[1:], kids[0] if kids else None
    if kind == "WHILE_STMT":
        return kids[:-1], kids[-1] if kids else None
    if kind == "CXX_FOR_RANGE_STMT":
        return [], kids[-1] if kids else None
    body = kids[-1] if kids else None
    header = src.slice(loop, loop.extent.start.offset, body.extent.start.offset if body else 0)
    first_semicolon = loop.extent.start.offset + _top_level_semicolon(header)
    return [k for k in kids[:-1] if k.extent.start.offset > first_semicolon], body


def _top_level_semicolon(header: str) -> int:
    depth = 0
    for i, ch in enumerate(header):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == ";" and depth == 1:
            return i
    return len(header)


def _assigned_or_declared(nodes: list[Any], src: SourceText) -> frozenset[str]:
    """Variables a loop iteration changes: assigned, incremented, declared, address taken."""
    ids: set[str] = set()
    for node in nodes:
        kind = cursor_kind(node)
        if kind == "VAR_DECL":
            ids.add(node.get_usr() or f"{node.spelling}@{node.location.line}")
        elif kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
            op = operator_of(node, src)
            if op in WRITE_OPERATORS or op in ("++", "--", "&"):
                ids |= root_variable(children(node)[0])
        elif kind == "CALL_EXPR" and node.spelling in ("operator=", "operator++", "operator--"):
            kids = children(node)
            if kids:
                ids |= root_variable(kids[0])
    return frozenset(ids)


def _type_name(target: Any) -> str:
    ctype = target.type
    spelling = ctype.spelling.replace("&", "").replace("const ", "").strip()
    for alias in ("value_type", "reference", "__gnu_cxx::__alloc_traits"):
        if alias in spelling:
            return strip_reference(ctype).spelling
    return spelling or strip_reference(ctype).spelling


def _fixes(fn: FunctionBody, read: Access, target: Any, pattern: str) -> list[str]:
    src = fn.src
    fixes = []
    cxx = fn.cursor.translation_unit.spelling.endswith((".cc", ".cpp", ".cxx", ".C", ".hpp"))
    if cxx:
        fixes.append(
            f"write through char8_t instead of {_type_name(target)} "
            "(std::vector<char8_t> / std::u8string, C++20): char8_t does not alias"
        )
    read_text = src.text(read.node)
    if pattern == "loop-condition":
        fixes.append(f"hoist `{read_text}` into a local before the loop")
    elif pattern == "straight-line":
        fixes.append(f"read `{read_text}` once into a local and reuse it")
    else:
        fixes.append(
            f"load `{read_text}` (or the data pointer behind it) into a local before the loop"
        )
    fixes.append("or mark the written pointer __restrict")
    return fixes


def _straight_line(fn: FunctionBody, body: Any) -> AliasMatch | None:
    """The first read repeated after a char-typed write with its base unchanged, all
    three outside loops: a loop ends a sequence, like a call the compiler cannot see
    through (a loop's reads and writes are the loop patterns' business: a loop that
    only reads is hoisted, one that writes is matched as a loop)."""
    events = list(_events(fn, body))
    branches = _if_else_branches(body)
    parts = _if_parts(body)
    switches = [n for n in walk(body) if cursor_kind(n) == "SWITCH_STMT"]
    for i, (kind, access, _) in enumerate(events):
        if kind != "read" or access.deps <= fn.local_objects:
            continue
        write = None
        left = None  # the switch the writing case left by its break or exit
        for later_kind, later, later_node in events[i + 1 :]:
            if later_kind == "barrier" or (later_kind == "assign" and later.deps & access.deps):
                break
            if _exclusive(branches, access.node, later_node):
                continue  # the then and the else branch of one `if` never both run
            if left is not None and _inside(later_node, left):
                continue  # another case of the switch: reached without the write
            if later_kind == "exit" and write is not None:
                left = _innermost(switches, later_node, write[1])
                if _together(parts, write[1], later_node):
                    write = None  # the branch that writes leaves: what follows runs without it
            elif (
                later_kind == "write"
                and later.key != access.key
                and write is None
                and not _distinct_elements(later.node, access.node, fn.src)
            ):
                write = (later.node, later_node)
            elif (
                later_kind == "read"
                and later.key == access.key
                and write is not None
                and not _exclusive(branches, write[1], later_node)
            ):
                return _straight_line_match(fn, access, write, later_node)
    return None


def _if_else_branches(body: Any) -> list[tuple[Any, Any]]:
    """(then, else) of every `if` with an else in the body."""
    pairs = []
    for node in walk(body):
        kids = children(node) if cursor_kind(node) == "IF_STMT" else []
        if len(kids) >= 3:
            pairs.append((kids[-2], kids[-1]))
    return pairs


def _if_parts(body: Any) -> list[Any]:
    """The then and else branches of every `if` in the body."""
    return [kid for n in walk(body) if cursor_kind(n) == "IF_STMT" for kid in children(n)[1:]]


def _innermost(switches: list[Any], exit_node: Any, write: Any) -> Any | None:
    """The innermost switch holding both the exit and the write, if any."""
    holding = [n for n in switches if _inside(exit_node, n) and _inside(write, n)]
    return min(holding, key=lambda n: n.extent.end.offset - n.extent.start.offset, default=None)


def _together(parts: list[Any], write: Any, exit_node: Any) -> bool:
    """Are the write and the exit in one branch of an `if`?"""
    return any(_inside(write, part) and _inside(exit_node, part) for part in parts)


def _distinct_elements(written: Any, read: Any, src: SourceText) -> bool:
    """Places at different constant offsets from one base, which no compiler takes to
    alias: `w[0]` and `w[1]`; `c->buf[1]` (an array member) and another field `c->size`."""
    written, read = unwrap(written), unwrap(read)
    if cursor_kind(written) != "ARRAY_SUBSCRIPT_EXPR":
        return False
    base, index = children(written)[:2]
    if cursor_kind(unwrap(index)) != "INTEGER_LITERAL":
        return False
    if cursor_kind(read) == "ARRAY_SUBSCRIPT_EXPR":
        read_base, read_index = children(read)[:2]
        constant = cursor_kind(unwrap(read_index)) == "INTEGER_LITERAL"
        same_base = src.text(base) == src.text(read_base)
        return constant and same_base and src.text(index) != src.text(read_index)
    return _sibling_fields(unwrap(base), read, src)


def _sibling_fields(array_member: Any, read: Any, src: SourceText) -> bool:
    """`c->buf` (an array member) and `c->size`, or `s->tiny.u8` and `s->bits`: places
    at fixed, different offsets of the object behind one base expression (not two
    members of one union, which overlap)."""
    if array_member.type.get_canonical().kind.name != "CONSTANTARRAY":
        return False
    written, other = _member_path(array_member, src), _member_path(read, src)
    if written is None or other is None or written[0] != other[0]:
        return False
    for first, second in zip(written[1], other[1], strict=False):
        if first != second:
            return cursor_kind(first.semantic_parent) != "UNION_DECL"
    return False  # one place holds the other


def _member_path(node: Any, src: SourceText) -> tuple[str, list[Any]] | None:
    """(base expression, fields from the outermost) of `s->tiny.u8`: ("s", [tiny, u8]);
    None when the node is no member access."""
    fields: list[Any] = []
    while cursor_kind(node) == "MEMBER_REF_EXPR" and node.referenced is not None:
        fields.insert(0, node.referenced)
        kids = children(node)
        if not kids:
            return ("this", fields)
        base = unwrap(kids[0])
        if src.text(node)[len(src.text(kids[0])) :].lstrip().startswith("->"):
            return (src.text(base), fields)
        node = base
    return (src.text(node), fields) if fields else None


def _exclusive(branches: list[tuple[Any, Any]], first: Any, second: Any) -> bool:
    """Are the two nodes in the two branches of one `if`, so that only one of them runs?"""
    return any(
        (_inside(first, then) and _inside(second, other))
        or (_inside(first, other) and _inside(second, then))
        for then, other in branches
    )


def _straight_line_match(
    fn: FunctionBody, read: Access, write: tuple[Any, Any], again: Any
) -> AliasMatch:
    target, expression = write
    return AliasMatch(
        pattern="straight-line",
        function=fn.name,
        file=str(read.node.extent.start.file.name),
        line=read.node.extent.start.line,
        end_line=again.extent.end.line,
        read=fn.src.text(read.node),
        read_line=again.extent.start.line,
        write=fn.src.text(expression),
        write_line=target.extent.start.line,
        write_type=_type_name(target),
        confidence=CONFIDENCE["straight-line"],
        fixes=_counted_fixes(
            _fixes(fn, read, target, "straight-line"),
            fn.src.text(read.node),
            fn.src.text(expression),
        ),
    )


def _counted_fixes(fixes: list[str], read: str, write: str) -> list[str]:
    """The fixes, where the write also counts the read up or down (glib's
    `gstring->str[gstring->len++] = c`): a local copy alone would lose the count."""
    spelled = re.escape(read)
    if not re.search(rf"{spelled}\s*(?:\+\+|--)|(?:\+\+|--)\s*{spelled}(?!\w)", write):
        return fixes
    kept = (
        f"keep `{read}` in a local, count it there and write it back after the stores "
        "(a local copy alone would lose the count)"
    )
    return [kept if fix.startswith(f"read `{read}` once") else fix for fix in fixes]


def _events(fn: FunctionBody, node: Any, lvalue: bool = False):  # type: ignore[no-untyped-def]
    """("read"|"write"|"assign"|"barrier"|"exit", access, node) in evaluation order; a
    write's access is of its target, its node the whole writing expression; a loop, or
    a call the compiler cannot see through, is a barrier; a return, goto or a switch's
    break an exit."""
    if cursor_kind(node) in LOOP_KINDS:
        yield ("barrier", Access("", frozenset(), node), node)
        return
    target = fn.char_write(node)
    kids = children(node)
    assigns = _is_assignment(node, fn.src)
    for i, kid in enumerate(kids):
        yield from _events(fn, kid, lvalue=(assigns or target is not None) and i == 0)
    if target is not None:
        written = access_at(fn, target) or Access(fn.src.text(target), frozenset(), target)
        yield ("write", Access(written.key, written.deps, target), node)
        return
    kind = cursor_kind(node)
    if kind in EXIT_KINDS or kind == "BREAK_STMT":  # loops are not walked: a switch's break
        yield ("exit", Access("", frozenset(), node), node)
    elif kind == "CALL_EXPR" and fn.opaque_calls(node):
        yield ("barrier", Access("", frozenset(), node), node)
    elif assigns or kind == "UNARY_OPERATOR" and operator_of(node, fn.src) == "&":
        changed = frozenset(root_variable(kids[0])) if kids else frozenset()
        yield ("assign", Access("", changed, node), node)
    if not lvalue and kind != "UNEXPOSED_EXPR":
        access = access_at(fn, node)
        if access is not None and access.deps:
            yield ("read", access, node)


def _is_assignment(node: Any, src: SourceText) -> bool:
    kind = cursor_kind(node)
    if kind not in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
        return False
    op = operator_of(node, src)
    return op in WRITE_OPERATORS or op in ("++", "--")


def _function_matches(fn: FunctionBody) -> SourceScan:
    body = next((c for c in children(fn.cursor) if cursor_kind(c) == "COMPOUND_STMT"), None)
    if body is None or not any(fn.char_write(n) is not None for n in walk(body)):
        return SourceScan()  # every pattern needs a char-typed write
    found = _loop_matches(fn, body)
    straight = _straight_line(fn, body)
    if straight is not None:
        found.matches.append(straight)
    return found


def _loop_matches(fn: FunctionBody, body: Any) -> SourceScan:
    """Innermost loops first: an outer loop is looked at only if no loop inside it
    matched or was found blocked."""
    found = SourceScan()
    loops = [n for n in walk(body) if cursor_kind(n) in LOOP_KINDS]
    matched_spans: list[tuple[int, int]] = []
    for loop in sorted(loops, key=lambda n: n.extent.end.offset - n.extent.start.offset):
        span = (loop.extent.start.offset, loop.extent.end.offset)
        if any(span[0] <= s and e <= span[1] for s, e in matched_spans):
            continue
        result = _LoopScan(fn, loop).result()
        if isinstance(result, AliasMatch):
            found.matches.append(result)
        elif isinstance(result, Blocked):
            found.blocked.append(result)
        if result is not None:
            matched_spans.append(span)
    return found


# (file base name, line) of the sampled lines of a run.
HotLines = frozenset[tuple[str, int]]


def find_matches(
    parsed: Any, main_file: Path, hot: HotLines | None = None, deadline: float | None = None
) -> SourceScan:
    """Every aliasing-write match (and blocked look-alike loop) in the functions
    defined in main_file; with `hot`, the profile's sampled lines, only in functions
    holding one of them — and then also in the headers the unit includes that hold
    one (a hot template or inline function: the project's, or a library's installed
    one such as glib's g_string_append_c_inline; not the C++ standard library's).
    No function is started past `deadline` (on cpu_seconds()'s clock): those left are
    counted as unread (SQLite's amalgamation has 1,146 functions holding a hot line of
    speedtest1, 34 CPU-s of search)."""
    src = SourceText()
    found = SourceScan()
    hot_files = {name for name, _ in hot} if hot is not None else set()

    def wanted(name: str) -> bool:
        if name == str(main_file):
            return True
        standard = any(folder in name for folder in STANDARD_LIBRARY_FOLDERS)
        return Path(name).name in hot_files and not standard

    for node in function_definitions(parsed, wanted):
        if hot is None or _holds_hot_line(node, hot):
            if found.unread or (deadline is not None and cpu_seconds() >= deadline):
                found.unread += 1
                continue
            found.read += 1
            try:
                function = _function_matches(FunctionBody(node, src))
            except ValueError:  # a libclang enum value newer than the Python bindings
                continue
            found.matches.extend(function.matches)
            found.blocked.extend(function.blocked)
    found.matches.sort(key=lambda m: (-m.confidence, m.file, m.line))
    return found


def _holds_hot_line(node: Any, hot: HotLines) -> bool:
    name = Path(node.location.file.name).name
    first, last = node.extent.start.line, node.extent.end.line
    return any((name, line) in hot for line in range(first, last + 1))

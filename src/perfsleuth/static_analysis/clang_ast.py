"""Reading libclang's syntax tree: cursor kinds, source text as written, variables,
and the functions and loops of a file. Shared by the source patterns of static/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FUNCTION_KINDS = (
    "FUNCTION_DECL",
    "CXX_METHOD",
    "CONSTRUCTOR",
    "DESTRUCTOR",
    "CONVERSION_FUNCTION",
    "FUNCTION_TEMPLATE",
)
LOOP_KINDS = ("FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT")
ASSIGN_KINDS = ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR")


class SourceText:
    """Source text by file, to quote expressions exactly as written."""

    def __init__(self) -> None:
        self._bytes: dict[str, bytes] = {}
        # per function definition (file, offset): does its body load through a pointer?
        # (memory_access.reads_through: asked once a function, not once a call)
        self.loads_through: dict[tuple[str, int], bool] = {}

    def slice(self, cursor: Any, begin: int, end: int) -> str:
        """Text between two file offsets of the cursor's file."""
        name = cursor.extent.start.file.name if cursor.extent.start.file else ""
        if name not in self._bytes:
            try:
                self._bytes[name] = Path(name).read_bytes()
            except OSError:
                self._bytes[name] = b""
        return self._bytes[name][begin:end].decode(errors="replace")

    def text(self, cursor: Any) -> str:
        extent = cursor.extent
        return " ".join(self.slice(cursor, extent.start.offset, extent.end.offset).split())


def cursor_kind(cursor: Any) -> str:
    try:
        return str(cursor.kind.name)
    except ValueError:  # a cursor kind newer than the bindings
        return ""


def unwrap(cursor: Any) -> Any:
    """The expression under implicit casts and parentheses."""
    while cursor_kind(cursor) in ("UNEXPOSED_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR"):
        kids = children(cursor)
        if len(kids) != 1:
            break
        cursor = kids[0]
    return cursor


def children(cursor: Any) -> list[Any]:
    return list(cursor.get_children())


def operator_of(cursor: Any, src: SourceText) -> str:
    """The operator of a unary, binary or compound-assignment expression."""
    kids = children(cursor)
    if not kids:
        return ""
    extent = cursor.extent
    first = kids[0].extent
    if cursor_kind(cursor) == "UNARY_OPERATOR":
        before = src.slice(cursor, extent.start.offset, first.start.offset).strip()
        return before or src.slice(cursor, first.end.offset, extent.end.offset).strip()
    if len(kids) < 2:
        return ""
    return src.slice(cursor, first.end.offset, kids[1].extent.start.offset).strip()


def strip_reference(ctype: Any) -> Any:
    canonical = ctype.get_canonical()
    if canonical.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
        return canonical.get_pointee().get_canonical()
    return canonical


def walk(cursor: Any):  # type: ignore[no-untyped-def]
    yield cursor
    for child in cursor.get_children():
        yield from walk(child)


def var_id(cursor: Any) -> str:
    decl = cursor.referenced
    return decl.get_usr() or f"{decl.spelling}@{decl.location.line}" if decl else ""


def variables_in(cursor: Any) -> frozenset[str]:
    ids = set()
    for node in walk(cursor):
        kind = cursor_kind(node)
        if kind == "DECL_REF_EXPR" and node.referenced is not None:
            if cursor_kind(node.referenced) in ("VAR_DECL", "PARM_DECL"):
                ids.add(var_id(node))
        elif kind in ("CXX_THIS_EXPR",) or (kind == "MEMBER_REF_EXPR" and not children(node)):
            ids.add("this")
    return frozenset(ids)


def qualified_name(cursor: Any) -> str:
    parts = [cursor.spelling]
    parent = cursor.semantic_parent
    while parent is not None and cursor_kind(parent) not in ("TRANSLATION_UNIT", ""):
        if parent.spelling:
            parts.append(parent.spelling)
        parent = parent.semantic_parent
    return "::".join(reversed(parts))


def root_variable(cursor: Any) -> set[str]:
    cursor = unwrap(cursor)
    if cursor_kind(cursor) == "DECL_REF_EXPR" and cursor.referenced is not None:
        return {var_id(cursor)}
    return set()


def template_pattern(function: Any) -> Any | None:
    """The definition in its class template of a member of an implicit specialization
    (`std::vector<unsigned long>::size`), or None. The unit is parsed without the
    implicit instantiations its end would add (PARSE_INCOMPLETE), so before C++20 made
    them constexpr, the standard containers' members have no instantiated body."""
    from clang.cindex import conf

    pattern = conf.lib.clang_getSpecializedCursorTemplate(function)
    return pattern.get_definition() if pattern is not None else None


def function_definitions(parsed: Any, wanted: Any) -> list[Any]:
    """The function definitions written in the files `wanted` accepts: namespaces,
    classes and templates are looked into, function bodies and other files are not
    (a unit's headers hold most of its syntax tree)."""
    found: list[Any] = []
    accepted: dict[str, bool] = {}
    pending = list(parsed.cursor.get_children())
    while pending:
        node = pending.pop()
        location = node.location.file
        if location is None:
            continue
        name = location.name
        if name not in accepted:
            accepted[name] = bool(wanted(name))
        if not accepted[name]:
            continue
        if cursor_kind(node) in FUNCTION_KINDS:
            if node.is_definition():
                found.append(node)
        else:
            pending.extend(node.get_children())
    found.sort(key=lambda node: node.extent.start.offset)
    return found


def outline(
    parsed: Any, main_file: Path, loops: bool = True
) -> tuple[list[tuple[str, int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """(qualified name, first line, last line) of each function defined in main_file,
    (first line, last line) of every loop in them (none unless `loops`: finding
    them walks every function body), and of those loops that chase pointers."""
    functions = function_definitions(parsed, lambda name: name == str(main_file))
    spans = [(qualified_name(f), f.extent.start.line, f.extent.end.line) for f in functions]
    found = [
        node
        for function in (functions if loops else [])
        for node in walk(function)
        if cursor_kind(node) in LOOP_KINDS
    ]
    return spans, [_lines(node) for node in found], [_lines(n) for n in found if chases(n)]


def _lines(node: Any) -> tuple[int, int]:
    return node.extent.start.line, node.extent.end.line


def chases(loop: Any) -> bool:
    """Does the loop set a pointer to a value it loads through that pointer (`p =
    p->next`, also through casts and macros: uthash's HASH_FIND sets `out =
    (T)((char *)out->hh.hh_next - tbl->hho)`), or through a pointer it loaded so
    (`next = p->next; ... p = next;`)? Its next address needs this iteration's load
    and its trip count is unknown at entry: a linked structure's walk."""
    steps = [
        (target, value, _loaded_through(value))
        for node in walk(loop)
        if (step := _pointer_step(node))
        for target, value in [step]
    ]
    # the pointers each pointer set in the loop was loaded through: `next` <- {`p`}
    loaded: dict[str, set[str]] = {}
    for target, _value, through in steps:
        loaded.setdefault(target, set()).update(through)
    return any(
        target in through or any(target in loaded.get(local, ()) for local in variables_in(value))
        for target, value, through in steps
    )


def _pointer_step(node: Any) -> tuple[str, Any] | None:
    """(the pointer, its new value) of `p = ...`, `p += ...` or `T *p = ...`."""
    kids = children(node)
    kind = cursor_kind(node)
    if kind == "VAR_DECL" and _is_pointer(node) and kids:
        return var_id(node), kids[-1]
    if kind not in ASSIGN_KINDS or len(kids) != 2 or not _is_pointer(node):
        return None
    variable = root_variable(kids[0])
    # `p = ...` has a pointer on each side, `p + n` has not; `p += ...` is either
    if variable and (kind == "COMPOUND_ASSIGNMENT_OPERATOR" or _is_pointer(kids[1])):
        return next(iter(variable)), kids[1]
    return None


def _is_pointer(cursor: Any) -> bool:
    return bool(cursor.type.get_canonical().kind.name == "POINTER")


def _loaded_through(value: Any) -> set[str]:
    """The pointers the expression loads through: `p` of `p->member` and `*p`."""
    found = set()
    for cursor in walk(value):
        kind = cursor_kind(cursor)
        kids = children(cursor)
        if kind not in ("MEMBER_REF_EXPR", "UNARY_OPERATOR") or len(kids) != 1:
            continue
        base = unwrap(kids[0]).type.get_canonical()
        # `*p` has the type p points to; `p++`, `&p`, `!p` have another
        if base.kind.name == "POINTER" and (
            kind == "MEMBER_REF_EXPR"
            or cursor.type.get_canonical() == base.get_pointee().get_canonical()
        ):
            found |= root_variable(kids[0])
    return found

"""Aliasing writes: a store through a char-like type forces the compiler to reload memory.

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
Loops calling functions the compiler cannot see are skipped: those reload anyway.
The compiler's remarks and the machine code, when available, confirm or refute.
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..model.findings import Finding
from ..static import compiler_remarks, machine_code
from ..static import source as source_analysis
from ..static.compiler_remarks import CompileError, Remark
from ..static.source import SYSTEM_PREFIXES, HotCode, TranslationUnit
from . import Context

CHAR_TYPE_KINDS = ("CHAR_S", "CHAR_U", "SCHAR", "UCHAR")
LOOP_KINDS = ("FOR_STMT", "WHILE_STMT", "DO_STMT", "CXX_FOR_RANGE_STMT")
BRANCH_KINDS = (
    "IF_STMT",
    "SWITCH_STMT",
    "CONDITIONAL_OPERATOR",
    "BREAK_STMT",
    "CONTINUE_STMT",
    "RETURN_STMT",
    "GOTO_STMT",
)
FUNCTION_KINDS = ("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "FUNCTION_TEMPLATE")
WRITE_KINDS = ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR", "CALL_EXPR")
WRITE_OPERATORS = ("=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=")
# Library functions that write no memory the program can see, so calls to them
# do not force reloads (many are declared pure or const; glibc's ctype ones via
# tables behind const functions).
PURE_LIBRARY_FUNCTIONS = frozenset(
    {"abs", "labs", "llabs", "fabs", "fabsf", "sqrt", "sqrtf", "floor", "ceil", "fmin", "fmax"}
    | {"min", "max", "toupper", "tolower", "isalpha", "isdigit", "isalnum", "isspace"}
    | {"isupper", "islower", "isxdigit", "ispunct", "isprint", "strlen", "memcmp", "strcmp"}
)
PURE_ATTRIBUTES = ("PURE_ATTR", "CONST_ATTR")
ACCESSOR_ELEMENT_METHODS = ("operator[]", "at", "front", "back", "data")
INLINE_DEPTH = 4

CONFIDENCE = {"loop-condition": 0.85, "loop-body": 0.7, "straight-line": 0.35}
BRANCH_PENALTY = 0.2


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

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Source:
    """Source text by file, to quote expressions exactly as written."""

    def __init__(self) -> None:
        self._bytes: dict[str, bytes] = {}

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


def _kind(cursor: Any) -> str:
    try:
        return str(cursor.kind.name)
    except ValueError:  # a cursor kind newer than the bindings
        return ""


def _unwrap(cursor: Any) -> Any:
    """The expression under implicit casts and parentheses."""
    while _kind(cursor) in ("UNEXPOSED_EXPR", "PAREN_EXPR", "CSTYLE_CAST_EXPR"):
        children = list(cursor.get_children())
        if len(children) != 1:
            break
        cursor = children[0]
    return cursor


def _children(cursor: Any) -> list[Any]:
    return list(cursor.get_children())


def _operator(cursor: Any, src: _Source) -> str:
    """The operator of a unary, binary or compound-assignment expression."""
    kids = _children(cursor)
    if not kids:
        return ""
    extent = cursor.extent
    first = kids[0].extent
    if _kind(cursor) == "UNARY_OPERATOR":
        before = src.slice(cursor, extent.start.offset, first.start.offset).strip()
        return before or src.slice(cursor, first.end.offset, extent.end.offset).strip()
    if len(kids) < 2:
        return ""
    return src.slice(cursor, first.end.offset, kids[1].extent.start.offset).strip()


def _strip_reference(ctype: Any) -> Any:
    canonical = ctype.get_canonical()
    if canonical.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
        return canonical.get_pointee().get_canonical()
    return canonical


def char_like(ctype: Any) -> bool:
    """char, signed/unsigned char, (u)int8_t, std::byte — but not char8_t."""
    canonical = _strip_reference(ctype)
    if canonical.kind.name in CHAR_TYPE_KINDS:
        return True
    return canonical.spelling.replace("const ", "") in ("std::byte", "enum std::byte")


def _is_restrict_pointer(cursor: Any) -> bool:
    ctype = _unwrap(cursor).type
    return "restrict" in ctype.spelling


class _Function:
    """The facts of one function body the patterns need."""

    def __init__(self, cursor: Any, src: _Source) -> None:
        self.cursor = cursor
        self.src = src
        self.name = _qualified_name(cursor)
        self.local_objects: set[str] = set()  # local objects read as if in memory
        self.returned_vars = {
            _var_id(_unwrap(c))
            for r in _walk(cursor)
            if _kind(r) == "RETURN_STMT"
            for c in _children(r)
            if _kind(_unwrap(c)) == "DECL_REF_EXPR"
        }

    # --- variables -----------------------------------------------------------

    def is_memory_object(self, cursor: Any) -> bool:
        """Does this object expression live in memory the compiler cannot keep in registers?"""
        cursor = _unwrap(cursor)
        kind = _kind(cursor)
        if kind == "CXX_THIS_EXPR":
            return True
        if kind == "DECL_REF_EXPR":
            decl = cursor.referenced
            if decl is None:
                return False
            if _kind(decl) != "VAR_DECL" and _kind(decl) != "PARM_DECL":
                return False
            if decl.type.get_canonical().kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
                return True
            local = _kind(decl.semantic_parent) in FUNCTION_KINDS
            static = decl.storage_class.name == "STATIC"
            if not local or static or _var_id(cursor) in self.returned_vars:
                return True
            if decl.type.get_canonical().kind.name == "RECORD":
                # A local object lives in memory only once its address escapes
                # (say, to a non-inline resize()); only the compiler can tell.
                self.local_objects.add(_var_id(cursor))
                return True
            return False
        if kind == "MEMBER_REF_EXPR":
            kids = _children(cursor)
            return not kids or self._arrow(cursor) or self.is_memory_object(kids[0])
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            return not self._local_array(_children(cursor)[0])
        if kind == "UNARY_OPERATOR":
            return self.src.text(cursor).startswith("*")
        if kind == "CALL_EXPR":
            return cursor.type.get_canonical().kind.name == "LVALUEREFERENCE" or (
                _kind(cursor.referenced) == "CXX_METHOD"
                and cursor.spelling in ACCESSOR_ELEMENT_METHODS
            )
        return False

    def _arrow(self, member: Any) -> bool:
        kids = _children(member)
        if not kids:
            return True  # implicit this->field
        text = self.src.text(member)
        base = self.src.text(kids[0])
        return text[len(base) :].lstrip().startswith("->")

    def memory_access(self, cursor: Any) -> tuple[str, frozenset[str]] | None:
        """(key, variables it depends on) when evaluating this expression reads or
        writes memory at a location fixed by those variables."""
        cursor = _unwrap(cursor)
        kind = _kind(cursor)
        if kind == "MEMBER_REF_EXPR":
            if cursor.type.get_canonical().kind.name == "CONSTANTARRAY":
                return None  # an array member is an address, not a load
            kids = _children(cursor)
            if not kids:
                return (f"this->{cursor.spelling}", frozenset({"this"}))
            if self._arrow(cursor) or self.is_memory_object(kids[0]):
                return (self.src.text(cursor), _vars(kids[0]))
            return None
        if kind in ("ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR") and _aggregate(cursor):
            return None  # a struct or array element is an address; its fields are loads
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            base = _children(cursor)[0]
            if self._local_array(base):
                return None
            return (self.src.text(cursor), _vars(cursor))
        if kind == "UNARY_OPERATOR" and self.src.text(cursor).startswith("*"):
            return (self.src.text(cursor), _vars(cursor))
        if kind == "CALL_EXPR":
            return self._accessor_call(cursor)
        return None

    def _accessor_call(self, call: Any) -> tuple[str, frozenset[str]] | None:
        """An inline call that reads memory: a member call on an object in memory
        (v.size(), v[i], img.get_height(), size() on this), or a free inline function
        dereferencing what it is given (buf_len(b))."""
        function = call.referenced
        if function is None or not inline_only(function):
            return None
        if _kind(function) == "FUNCTION_DECL":
            return self._inline_reader(call, function)
        if _kind(function) != "CXX_METHOD" or function.is_static_method():
            return None
        kids = _children(call)
        if kids and _kind(kids[0]) == "MEMBER_REF_EXPR" and not _children(kids[0]):
            return (f"this->{function.spelling}()", frozenset({"this"}))
        obj = _member_object(call, kids)
        if obj is None or not self.is_memory_object(obj) or self._local_array(obj):
            return None
        return (f"{self.src.text(obj)}.{function.spelling}", _vars(obj))

    def _inline_reader(self, call: Any, function: Any) -> tuple[str, frozenset[str]] | None:
        definition = function.get_definition()
        args = _children(call)[1:]
        if definition is None or not args or not any(_dereferences(n) for n in _walk(definition)):
            return None
        deps = frozenset().union(*(_vars(a) for a in args))
        return (self.src.text(call), deps) if deps else None

    def _local_array(self, base: Any) -> bool:
        """A stack array (char buf[64], std::array<uint8_t, 64>) the write cannot alias."""
        base = _unwrap(base)
        if _kind(base) != "DECL_REF_EXPR" or base.referenced is None:
            return False
        decl = base.referenced
        if _kind(decl) != "VAR_DECL" or _kind(decl.semantic_parent) not in FUNCTION_KINDS:
            return False
        spelling = decl.type.get_canonical().spelling
        return decl.type.get_canonical().kind.name == "CONSTANTARRAY" or spelling.startswith(
            "std::array<"
        )

    # --- writes --------------------------------------------------------------

    def char_write(self, cursor: Any) -> Any | None:
        """The lvalue of a write through a char-like type into memory, else None."""
        kind = _kind(cursor)
        if kind not in WRITE_KINDS:
            return None
        if kind == "CALL_EXPR" and cursor.spelling not in ("operator=", "operator++"):
            return None
        kids = _children(cursor)
        if not kids:
            return None
        target = _unwrap(kids[0])
        if not char_like(target.type):  # cheaper than the operator, so first
            return None
        if kind == "UNARY_OPERATOR" and _operator(cursor, self.src) not in ("++", "--"):
            return None
        binary = kind not in ("UNARY_OPERATOR", "CALL_EXPR")
        if binary and _operator(cursor, self.src) not in WRITE_OPERATORS:
            return None
        return target if self._writes_memory(target) else None

    def _writes_memory(self, target: Any) -> bool:
        kind = _kind(target)
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            base = _children(target)[0]
            return not self._local_array(base) and not _is_restrict_pointer(base)
        if kind == "UNARY_OPERATOR":
            kids = _children(target)
            return bool(kids) and not _is_restrict_pointer(kids[0])
        if kind == "MEMBER_REF_EXPR":
            return self.memory_access(target) is not None
        if kind == "CALL_EXPR":  # operator[] / at() of a container
            obj = _member_object(target, _children(target))
            return obj is not None and not self._local_array(obj)
        if kind == "DECL_REF_EXPR" and target.referenced is not None:  # char& out
            ctype = target.referenced.type.get_canonical()
            return ctype.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE")
        return False

    # --- calls ---------------------------------------------------------------

    def opaque_calls(self, cursor: Any) -> list[str]:
        """Calls in this subtree to functions the compiler cannot see through."""
        opaque = []
        for node in _walk(cursor):
            if _kind(node) != "CALL_EXPR" or node.referenced is None:
                continue
            callee = node.referenced
            if _kind(callee) in ("CONSTRUCTOR", "DESTRUCTOR") and callee.is_default_constructor():
                continue
            if callee.spelling in PURE_LIBRARY_FUNCTIONS or callee.spelling.startswith("__builtin"):
                continue
            if not inline_only(callee):
                opaque.append(callee.spelling)
        return opaque


def _dereferences(node: Any) -> bool:
    """Does this node of a function body load through a pointer?"""
    kind = _kind(node)
    if kind == "MEMBER_REF_EXPR":
        kids = _children(node)
        return bool(kids) and "->" in _text_between(node, kids[0])
    return kind == "ARRAY_SUBSCRIPT_EXPR" or (
        kind == "UNARY_OPERATOR" and _token_text(node).startswith("*")
    )


def _text_between(node: Any, base: Any) -> str:
    """The tokens of node after those of its base (`->field` of `p->field`)."""
    end = base.extent.end.offset
    return "".join(t.spelling for t in node.get_tokens() if t.extent.start.offset >= end)[:2]


def _token_text(node: Any) -> str:
    return "".join(t.spelling for t in node.get_tokens())[:1]


def _aggregate(cursor: Any) -> bool:
    kind = cursor.type.get_canonical().kind.name
    return kind in ("RECORD", "CONSTANTARRAY", "INCOMPLETEARRAY")


def _member_object(call: Any, kids: list[Any]) -> Any | None:
    """The object a member call is made on: `v` in v.size(), and in v[i], whose
    operator call lists the object first."""
    if not kids:
        return None
    first = _unwrap(kids[0])
    if _kind(first) == "MEMBER_REF_EXPR" and _kind(first.referenced) == "CXX_METHOD":
        inner = _children(first)
        return inner[0] if inner else None
    if call.spelling.startswith("operator"):
        return kids[0]
    return None


def inline_only(function: Any, depth: int = 0) -> bool:
    """Is the function's body visible to the compiler, and all it calls, recursively?"""
    name = function.spelling
    if name.startswith("__builtin") or name in PURE_LIBRARY_FUNCTIONS:
        return True
    if any(_kind(child) in PURE_ATTRIBUTES for child in function.get_children()):
        return True  # writes no memory, so it cannot force a reload
    usr = (function.translation_unit.spelling, function.get_usr())
    if usr in _INLINE_CACHE:
        return _INLINE_CACHE[usr]
    _INLINE_CACHE[usr] = True  # recursion is fine: only its other callees decide
    _INLINE_CACHE[usr] = _body_inline_only(function, depth)
    return _INLINE_CACHE[usr]


_INLINE_CACHE: dict[tuple[str, str], bool] = {}  # (TU, USR): visibility differs by TU


def _body_inline_only(function: Any, depth: int) -> bool:
    definition = function.get_definition()
    if definition is None:
        return _kind(function) in ("CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR") and (
            function.is_default_method()
        )
    if depth >= INLINE_DEPTH:
        return True
    return all(
        inline_only(node.referenced, depth + 1)
        for node in _walk(definition)
        if _kind(node) == "CALL_EXPR" and node.referenced is not None
    )


def _walk(cursor: Any):  # type: ignore[no-untyped-def]
    yield cursor
    for child in cursor.get_children():
        yield from _walk(child)


def _var_id(cursor: Any) -> str:
    decl = cursor.referenced
    return decl.get_usr() or f"{decl.spelling}@{decl.location.line}" if decl else ""


def _vars(cursor: Any) -> frozenset[str]:
    ids = set()
    for node in _walk(cursor):
        kind = _kind(node)
        if kind == "DECL_REF_EXPR" and node.referenced is not None:
            if _kind(node.referenced) in ("VAR_DECL", "PARM_DECL"):
                ids.add(_var_id(node))
        elif kind in ("CXX_THIS_EXPR",) or (kind == "MEMBER_REF_EXPR" and not _children(node)):
            ids.add("this")
    return frozenset(ids)


def _qualified_name(cursor: Any) -> str:
    parts = [cursor.spelling]
    parent = cursor.semantic_parent
    while parent is not None and _kind(parent) not in ("TRANSLATION_UNIT", ""):
        if parent.spelling:
            parts.append(parent.spelling)
        parent = parent.semantic_parent
    return "::".join(reversed(parts))


@dataclass
class _Access:
    key: str
    deps: frozenset[str]
    node: Any


class _LoopScan:
    """The memory reads, char writes and assigned variables of one loop iteration."""

    def __init__(self, fn: _Function, loop: Any) -> None:
        self.fn = fn
        self.loop = loop
        self.condition, self.body = _loop_parts(loop, fn.src)
        per_iteration = [*self.condition, *([self.body] if self.body is not None else [])]
        self.nodes = [n for part in per_iteration for n in _walk(part)]
        self.writes = [(n, t) for n in self.nodes if (t := fn.char_write(n)) is not None]
        write_keys = {fn.src.text(t) for _, t in self.writes}
        self.variant = _assigned_or_declared(self.nodes, fn.src)
        condition_nodes = {n.hash for part in self.condition for n in _walk(part)}
        self.reads: list[tuple[_Access, bool]] = []
        for node in self.nodes:
            access = _access(fn, node)
            if access is None or access.deps & self.variant:
                continue
            if access.key in write_keys:
                continue
            self.reads.append((access, node.hash in condition_nodes))

    def match(self) -> AliasMatch | None:
        if not self.writes or not self.reads:
            return None
        if self.fn.opaque_calls(self.loop):
            return None
        locals_only = all(a.deps <= self.fn.local_objects for a, _ in self.reads)
        condition_reads = [a for a, in_condition in self.reads if in_condition]
        read = (condition_reads or [a for a, _ in self.reads])[0]
        pattern = "loop-condition" if condition_reads else "loop-body"
        write, target = self.writes[0]
        branches = self.body is not None and any(_kind(n) in BRANCH_KINDS for n in _walk(self.body))
        confidence = CONFIDENCE[pattern] - (BRANCH_PENALTY if branches else 0.0)
        src = self.fn.src
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
            fixes=_fixes(self.fn, read, target, pattern),
            needs_compiler=locals_only,
            hoistable=self._hoistable(),
        )

    def _hoistable(self) -> list[str]:
        """The repeated reads' texts, outermost first; element accessors (v[i]) are
        left out, as their index changes."""
        src = self.fn.src
        written = {src.text(_children(n)[0]) for n in self.nodes if _is_assignment(n, src)}
        texts: dict[str, None] = {}
        for access, _ in self.reads:
            text = src.text(access.node)
            if _kind(_unwrap(access.node)) == "CALL_EXPR" and not text.endswith("()"):
                continue
            if text in written:
                continue
            if not any(text in other for other in texts):
                texts[text] = None
        return list(texts)


def _access(fn: _Function, node: Any) -> _Access | None:
    found = fn.memory_access(node) if _kind(node) != "UNEXPOSED_EXPR" else None
    if found is None:
        found = _global_read(node)
    return _Access(found[0], found[1], node) if found is not None else None


def _global_read(node: Any) -> tuple[str, frozenset[str]] | None:
    """A read of a global or static variable (memory, with no variable parts)."""
    if _kind(node) != "DECL_REF_EXPR" or node.referenced is None:
        return None
    decl = node.referenced
    if _kind(decl) != "VAR_DECL" or decl.type.get_canonical().is_const_qualified():
        return None
    local = _kind(decl.semantic_parent) in FUNCTION_KINDS
    if local and decl.storage_class.name != "STATIC":
        return None
    if decl.type.get_canonical().kind.name in ("RECORD", "CONSTANTARRAY", "ELABORATED"):
        return None
    return (decl.spelling, frozenset())


def _loop_parts(loop: Any, src: _Source) -> tuple[list[Any], Any | None]:
    """(condition and increment expressions, body) of a loop; init is left out."""
    kids = _children(loop)
    kind = _kind(loop)
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


def _assigned_or_declared(nodes: list[Any], src: _Source) -> frozenset[str]:
    """Variables a loop iteration changes: assigned, incremented, declared, address taken."""
    ids: set[str] = set()
    for node in nodes:
        kind = _kind(node)
        if kind == "VAR_DECL":
            ids.add(node.get_usr() or f"{node.spelling}@{node.location.line}")
        elif kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
            op = _operator(node, src)
            if op in WRITE_OPERATORS or op in ("++", "--", "&"):
                ids |= _root_var(_children(node)[0])
        elif kind == "CALL_EXPR" and node.spelling in ("operator=", "operator++", "operator--"):
            kids = _children(node)
            if kids:
                ids |= _root_var(kids[0])
    return frozenset(ids)


def _root_var(cursor: Any) -> set[str]:
    cursor = _unwrap(cursor)
    if _kind(cursor) == "DECL_REF_EXPR" and cursor.referenced is not None:
        return {_var_id(cursor)}
    return set()


def _type_name(target: Any) -> str:
    ctype = target.type
    spelling = ctype.spelling.replace("&", "").replace("const ", "").strip()
    for alias in ("value_type", "reference", "__gnu_cxx::__alloc_traits"):
        if alias in spelling:
            return _strip_reference(ctype).spelling
    return spelling or _strip_reference(ctype).spelling


def _fixes(fn: _Function, read: _Access, target: Any, pattern: str) -> list[str]:
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


def _straight_line(fn: _Function, body: Any, in_loops: set[int]) -> AliasMatch | None:
    """The first read repeated after a char-typed write with its base unchanged."""
    events = list(_events(fn, body))
    for i, (kind, access, node) in enumerate(events):
        if kind != "read" or node.extent.start.line in in_loops:
            continue
        if access.deps <= fn.local_objects:
            continue
        write = None
        for later_kind, later, later_node in events[i + 1 :]:
            if later_kind == "call" or (later_kind == "assign" and later.deps & access.deps):
                break
            if later_kind == "write" and later.key != access.key and write is None:
                write = (later.node, later_node)
            elif later_kind == "read" and later.key == access.key and write is not None:
                return _straight_line_match(fn, access, write, later_node)
    return None


def _straight_line_match(
    fn: _Function, read: _Access, write: tuple[Any, Any], again: Any
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
        fixes=_fixes(fn, read, target, "straight-line"),
    )


def _events(fn: _Function, node: Any, lvalue: bool = False):  # type: ignore[no-untyped-def]
    """("read"|"write"|"assign"|"call", access, node) in evaluation order; a write's
    access is of its target, its node the whole writing expression."""
    target = fn.char_write(node)
    kids = _children(node)
    assigns = _is_assignment(node, fn.src)
    for i, kid in enumerate(kids):
        yield from _events(fn, kid, lvalue=(assigns or target is not None) and i == 0)
    if target is not None:
        written = _access(fn, target) or _Access(fn.src.text(target), frozenset(), target)
        yield ("write", _Access(written.key, written.deps, target), node)
        return
    kind = _kind(node)
    if kind == "CALL_EXPR" and fn.opaque_calls(node):
        yield ("call", _Access("", frozenset(), node), node)
    elif assigns or kind == "UNARY_OPERATOR" and _operator(node, fn.src) == "&":
        changed = frozenset(_root_var(kids[0])) if kids else frozenset()
        yield ("assign", _Access("", changed, node), node)
    if not lvalue and kind != "UNEXPOSED_EXPR":
        access = _access(fn, node)
        if access is not None and access.deps:
            yield ("read", access, node)


def _is_assignment(node: Any, src: _Source) -> bool:
    kind = _kind(node)
    if kind not in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
        return False
    op = _operator(node, src)
    return op in WRITE_OPERATORS or op in ("++", "--")


def _function_matches(fn: _Function) -> list[AliasMatch]:
    body = next((c for c in _children(fn.cursor) if _kind(c) == "COMPOUND_STMT"), None)
    if body is None or not any(fn.char_write(n) is not None for n in _walk(body)):
        return []  # every pattern needs a char-typed write
    matches: list[AliasMatch] = []
    loops = [n for n in _walk(body) if _kind(n) in LOOP_KINDS]
    matched_spans: list[tuple[int, int]] = []
    # Innermost loops first: an outer loop is reported only if no loop inside it is.
    for loop in sorted(loops, key=lambda n: n.extent.end.offset - n.extent.start.offset):
        span = (loop.extent.start.offset, loop.extent.end.offset)
        if any(span[0] <= s and e <= span[1] for s, e in matched_spans):
            continue
        match = _LoopScan(fn, loop).match()
        if match is not None:
            matches.append(match)
            matched_spans.append(span)
    in_loops = {line for m in matches for line in range(m.line, m.end_line + 1)}
    straight = _straight_line(fn, body, in_loops)
    if straight is not None:
        matches.append(straight)
    return matches


# (file base name, line) of the sampled lines of a run.
HotLines = frozenset[tuple[str, int]]


def find_matches(parsed: Any, main_file: Path, hot: HotLines | None = None) -> list[AliasMatch]:
    """Every aliasing-write match in the functions defined in main_file; with `hot`,
    the profile's sampled lines, only in functions holding one of them — and then
    also in the project headers the unit includes (a hot template or inline loop)."""
    src = _Source()
    matches: list[AliasMatch] = []
    hot_files = {name for name, _ in hot} if hot is not None else set()

    def wanted(name: str) -> bool:
        if name == str(main_file):
            return True
        return Path(name).name in hot_files and not name.startswith(SYSTEM_PREFIXES)

    for node in _nodes_in(parsed, wanted):
        if _kind(node) not in FUNCTION_KINDS or not node.is_definition():
            continue
        if hot is None or _holds_hot_line(node, hot):
            try:
                matches.extend(_function_matches(_Function(node, src)))
            except ValueError:  # a libclang enum value newer than the Python bindings
                continue
    return sorted(matches, key=lambda m: (-m.confidence, m.file, m.line))


def _holds_hot_line(node: Any, hot: HotLines) -> bool:
    name = Path(node.location.file.name).name
    first, last = node.extent.start.line, node.extent.end.line
    return any((name, line) in hot for line in range(first, last + 1))


def _nodes_in(parsed: Any, wanted: Any):  # type: ignore[no-untyped-def]
    """The nodes written in the files `wanted` accepts, skipping (not walking) the rest."""

    def visit(node: Any):  # type: ignore[no-untyped-def]
        for child in node.get_children():
            location = child.location.file
            if location is not None and wanted(location.name):
                yield child
                yield from visit(child)

    yield from visit(parsed.cursor)


def _main_file_nodes(parsed: Any, main_file: Path):  # type: ignore[no-untyped-def]
    """The nodes written in main_file."""
    return _nodes_in(parsed, lambda name: name == str(main_file))


def function_spans(parsed: Any, main_file: Path) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of each function defined in main_file."""
    return [
        (_qualified_name(node), node.extent.start.line, node.extent.end.line)
        for node in _main_file_nodes(parsed, main_file)
        if _kind(node) in FUNCTION_KINDS and node.is_definition()
    ]


def loop_spans(parsed: Any, main_file: Path) -> list[tuple[int, int]]:
    """(first line, last line) of every loop in main_file."""
    return [
        (node.extent.start.line, node.extent.end.line)
        for node in _main_file_nodes(parsed, main_file)
        if _kind(node) in LOOP_KINDS
    ]


@dataclass
class UnitReport:
    """Everything the source and the compiler said about one translation unit."""

    unit: TranslationUnit
    matches: list[AliasMatch] = field(default_factory=list)
    remarks: list[Remark] = field(default_factory=list)
    functions: list[tuple[str, int, int]] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)
    # (file, loop line) -> the loop in clang-16's build of the unit
    object_loops: dict[tuple[str, int], machine_code.LoopCode] = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0

    def remark_for(self, file: str, first: int, last: int) -> Remark | None:
        return compiler_remarks.remark_for_loop(self.remarks, Path(file), first, last)

    def loop_at(self, line: int) -> tuple[int, int]:
        """The innermost loop around a line (the line alone when none is known)."""
        around = [(b - a, (a, b)) for a, b in self.loops if a <= line <= b]
        return min(around)[1] if around else (line, line)

    def function_at(self, line: int) -> str:
        inside = [
            (last - first, name) for name, first, last in self.functions if first <= line <= last
        ]
        return min(inside)[1] if inside else ""

    def verdicts(self) -> list[tuple[AliasMatch, Remark | None, bool]]:
        """(match, clang's remark on its loop, whether clang refutes it). clang refutes
        a loop match by vectorising the loop anyway, and a read of a local object by
        not blaming memory when it fails (whether that object lives in memory depends
        on whether its address escaped, which only the compiler knows)."""
        found = []
        for match in self.matches:
            remark = self.remark_for(match.file, match.line, match.end_line)
            vectorized = remark is not None and remark.vectorized
            refuted = match.pattern != "straight-line" and vectorized
            if match.needs_compiler and (remark is None or not remark.memory_reason):
                refuted = True
            found.append((match, remark, refuted))
        return found

    def confirmed_matches(self) -> list[tuple[AliasMatch, Remark | None]]:
        """Source matches clang does not refute."""
        return [(match, remark) for match, remark, refuted in self.verdicts() if not refuted]


_REPORTS: dict[tuple[str, tuple[str, ...], float, HotLines | None], UnitReport] = {}


def analyse_unit(unit: TranslationUnit, hot_lines: HotLines | None = None) -> UnitReport:
    """Parse and match the unit (only functions holding hot_lines, when given)
    while clang compiles it for its remarks, in parallel; cached, so the aliasing and
    vectorisation analyzers share one analysis. A unit built with guessed flags that
    does not compile is tried once more with the common standard headers included."""
    key = (str(unit.path), tuple(unit.flags), unit.path.stat().st_mtime, hot_lines)
    if key not in _REPORTS:
        report = _analyse(unit, hot_lines)
        if report.error and unit.flags_origin == "defaults":
            retried = _analyse(unit.with_standard_includes(), hot_lines)
            report = report if retried.error else retried
        _REPORTS[key] = report
    return _REPORTS[key]


def _analyse(unit: TranslationUnit, hot_lines: HotLines | None) -> UnitReport:
    started = time.perf_counter()
    report = UnitReport(unit)
    with tempfile.TemporaryDirectory(prefix="perfsleuth-unit-") as tmp:
        obj = Path(tmp) / "unit.o"
        with ThreadPoolExecutor(max_workers=1) as pool:
            compiling = pool.submit(compiler_remarks.compile_unit, unit, None, obj)
            parsed = source_analysis.parse(unit)
            try:
                report.remarks = compiling.result()[0]
            except CompileError as exc:
                report.error = str(exc)
        if parsed is None:
            report.error = report.error or unit.error
        else:
            report.matches = find_matches(parsed, unit.path, hot_lines)
            report.functions = function_spans(parsed, unit.path)
            report.loops = loop_spans(parsed, unit.path)
        if not report.error and report.matches:
            report.object_loops = _object_loops(unit, obj, report.matches)
    report.seconds = time.perf_counter() - started
    return report


def _object_loops(
    unit: TranslationUnit, obj: Path, matches: list[AliasMatch]
) -> dict[tuple[str, int], machine_code.LoopCode]:
    """The machine code clang-16 made of each matched loop, for when there is no
    binary (lint) to read it from."""
    exe = obj.with_suffix(".exe")
    if not compiler_remarks.link_for_disassembly(unit, obj, exe):
        return {}
    loops = {}
    for match in matches:
        if match.pattern != "straight-line":
            loop = machine_code.loop_code(exe, match.file, match.line, match.end_line)
            if loop is not None:
                loops[(match.file, match.line)] = loop
    return loops


DEFAULT_DEEP_TUS = 5
DEEP_TUS_ENV = "PERFSLEUTH_DEEP_TUS"  # for `perfsleuth advise`/`run`, which set no option


def _deep_tus(ctx: Context) -> int:
    given = ctx.options.get("deep_tus")
    if given is None:
        given = os.environ.get(DEEP_TUS_ENV) or DEFAULT_DEEP_TUS
    try:
        return max(0, int(given))
    except ValueError:
        raise UserError(f"{DEEP_TUS_ENV}={given!r}: give a whole number of units") from None


def deep_reports(ctx: Context, hot: HotCode) -> list[tuple[UnitReport, Path | None]]:
    """The analysed hot units of the run (at most ctx.options["deep_tus"], else
    $PERFSLEUTH_DEEP_TUS, else 5), each with its binary; notes for missing source,
    units that do not compile, and a missing clang (the other analyzers still run)."""
    limit = _deep_tus(ctx)
    units, notes = source_analysis.hot_units(
        hot, ctx.binaries or ctx.run.dsos, ctx.src_roots, ctx.compile_commands, limit
    )
    reports = []
    hot_lines = frozenset(hot.line_weight)
    for unit, binary in units:
        try:
            report = analyse_unit(unit, hot_lines)
        except UserError as missing_tool:
            notes.append(f"source and compiler analysis of hot loops skipped: {missing_tool}")
            break
        if report.error:
            notes.append(f"skipped {unit.path.name}: it does not compile ({report.error})")
        else:
            reports.append((report, binary))
    for note in notes:
        if note not in ctx.notes:
            ctx.notes.append(note)
    return reports


# Expected fraction of a loop's time a fix saves: the study measured 2.6-12x on
# vectorisable byte loops, ~1.3x when branches keep the loop scalar, and a load or
# two per call for straight-line code.
GAIN = {"vectorizable": 0.6, "branches": 0.2, "straight-line": 0.05}
REMARK_CONFIRMS = 0.05
MACHINE_CODE_CONFIRMS = 0.08


def analyze(ctx: Context) -> list[Finding]:
    findings = []
    hot = source_analysis.hot_code(ctx.profile)
    seen: set[tuple[str, int]] = set()  # a header's loop is met in every unit including it
    for report, binary in deep_reports(ctx, hot):
        for match, remark, refuted in report.verdicts():
            share = hot.share(match.file, match.line, match.end_line)
            if share <= 0 or (match.file, match.line) in seen:
                continue
            seen.add((match.file, match.line))
            asm = (
                machine_code.loop_code(binary, match.file, match.line, match.end_line)
                if (binary and match.pattern != "straight-line")
                else report.object_loops.get((match.file, match.line))
            )
            # clang's verdict is about clang's code; the binary's own machine code
            # (perhaps from GCC) has the last word.
            if refuted and (asm is None or not asm.confirms_aliasing):
                continue
            in_binary = binary is not None and match.pattern != "straight-line"
            findings.append(build_finding(match, report, remark, asm, share, in_binary))
    return findings


def build_finding(
    match: AliasMatch,
    report: UnitReport,
    remark: Remark | None,
    asm: machine_code.LoopCode | None,
    share: float,
    asm_in_binary: bool = True,
) -> Finding:
    """One finding from a source match and, when known, the compiler's and the
    machine code's evidence about the same loop."""
    confidence = match.confidence
    evidence = [_source_evidence(match)]
    if remark is not None and not remark.vectorized:
        confidence += REMARK_CONFIRMS
        evidence.append(f"{remark.describe()} ({Path(remark.file).name}:{remark.line})")
    elif remark is not None:
        evidence.append(
            f"clang-16 vectorizes this loop with the unit's flags ({remark.message}), "
            "but the binary's machine code reloads"
        )
    if asm is not None and asm.confirms_aliasing:
        confidence += MACHINE_CODE_CONFIRMS
        symbol = match.function if asm.function.startswith("_Z") else asm.function
        built = "" if asm_in_binary else " (clang-16's build of the unit)"
        evidence.append(
            f"machine code of {symbol}{built}: {_count(asm.reloads, 'load')} from unchanged "
            f"addresses and {_count(asm.byte_stores, 'byte store')} in a "
            f"{len(asm.instructions)}-instruction loop"
        )
        evidence.extend(asm.evidence())
    if share:
        evidence.append(f"{share:.1%} of the run's samples are in this code")
    gain_kind = (
        "straight-line"
        if match.pattern == "straight-line"
        else "branches"
        if match.branches
        else "vectorizable"
    )
    where = "the loop" if match.pattern != "straight-line" else "the code"
    return Finding(
        rule=f"aliasing-write.{match.pattern}",
        kind="aliasing-write",
        title=(
            f"{match.write_type} write `{match.write}` makes {where} in "
            f"{match.function} reload `{match.read}`"
        ),
        share=round(share, 4),
        estimated_gain=round(share * GAIN[gain_kind], 4),
        confidence=round(min(confidence, 0.98), 2),
        suggestion="; ".join(match.fixes),
        function=match.function,
        file=match.file,
        line=match.line,
        evidence=evidence,
        fix={"options": match.fixes, "file": match.file, "line": match.line},
        details={
            "match": match.to_json(),
            "flags": report.unit.flags,
            "flags_origin": report.unit.flags_origin,
            "directory": str(report.unit.directory or ""),
            "remark": remark.__dict__ if remark else None,
            "machine_code": [i.describe() for i in asm.instructions] if asm else [],
        },
    )


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _source_evidence(match: AliasMatch) -> str:
    if match.pattern == "straight-line":
        return (
            f"source: `{match.read}` is read again (line {match.read_line}) after "
            f"`{match.write}` writes through {match.write_type} (line {match.write_line})"
        )
    where = "condition" if match.pattern == "loop-condition" else "body"
    return (
        f"source: the loop at line {match.line} reads `{match.read}` in its {where} "
        f"(line {match.read_line}) and writes through {match.write_type}: "
        f"`{match.write}` (line {match.write_line})"
    )

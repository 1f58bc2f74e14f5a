"""What a function body reads and writes in memory, as the compiler sees it.

A write through a char-like type (char, signed/unsigned char, (u)int8_t, std::byte)
may modify any object; the reads it forces the compiler to repeat are those of
memory: fields behind a pointer or `this`, elements behind a data pointer, objects
whose address escapes, globals. Calls the compiler cannot see through make it reload
anyway, so they are told apart from inline ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .clang_ast import (
    FUNCTION_KINDS,
    SourceText,
    children,
    cursor_kind,
    operator_of,
    qualified_name,
    root_variable,
    strip_reference,
    template_pattern,
    unwrap,
    var_id,
    variables_in,
    walk,
)

CLASS_TEMPLATES = ("CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION")
METHOD_KINDS = ("CXX_METHOD", "FUNCTION_TEMPLATE")
CHAR_TYPE_KINDS = ("CHAR_S", "CHAR_U", "SCHAR", "UCHAR")
# what names the callee of a call that a template leaves unresolved
UNRESOLVED_CALLEES = ("MEMBER_REF_EXPR", "OVERLOADED_DECL_REF", "DECL_REF_EXPR")
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
NOINLINE_SPELLINGS = ("noinline", "__noinline__")
POINTER_HOLDERS = ("VAR_DECL", "PARM_DECL", "FIELD_DECL")
ACCESSOR_ELEMENT_METHODS = ("operator[]", "at", "front", "back", "data")
INLINE_DEPTH = 4
RECORD_KINDS = ("STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "CLASS_TEMPLATE")


def char_like(ctype: Any) -> bool:
    """char, signed/unsigned char, (u)int8_t, std::byte — but not char8_t."""
    canonical = strip_reference(ctype)
    if canonical.kind.name in CHAR_TYPE_KINDS:
        return True
    return canonical.spelling.replace("const ", "") in ("std::byte", "enum std::byte")


def _is_restrict_pointer(cursor: Any) -> bool:
    ctype = unwrap(cursor).type
    return "restrict" in ctype.spelling


class FunctionBody:
    """The facts of one function body the patterns need."""

    def __init__(self, cursor: Any, src: SourceText) -> None:
        self.cursor = cursor
        self.src = src
        self.name = qualified_name(cursor)
        self.local_objects: set[str] = set()  # local objects read as if in memory
        self._escaped_vars: set[str] | None = None
        self.returned_vars = {
            var_id(unwrap(c))
            for r in walk(cursor)
            if cursor_kind(r) == "RETURN_STMT"
            for c in children(r)
            if cursor_kind(unwrap(c)) == "DECL_REF_EXPR"
        }

    # --- variables -----------------------------------------------------------

    def is_memory_object(self, cursor: Any) -> bool:
        """Does this object expression live in memory the compiler cannot keep in registers?"""
        cursor = unwrap(cursor)
        kind = cursor_kind(cursor)
        if kind == "CXX_THIS_EXPR":
            return True
        if kind == "DECL_REF_EXPR":
            return self._variable_in_memory(cursor)
        if kind == "MEMBER_REF_EXPR":
            kids = children(cursor)
            return not kids or self._arrow(cursor) or self.is_memory_object(kids[0])
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            return not self._local_array(children(cursor)[0])
        if kind == "UNARY_OPERATOR":
            return self.src.text(cursor).startswith("*")
        if kind == "CALL_EXPR":
            return cursor.type.get_canonical().kind.name == "LVALUEREFERENCE" or (
                cursor_kind(cursor.referenced) == "CXX_METHOD"
                and cursor.spelling in ACCESSOR_ELEMENT_METHODS
            )
        return False

    def _variable_in_memory(self, ref: Any) -> bool:
        decl = ref.referenced
        if decl is None or cursor_kind(decl) not in ("VAR_DECL", "PARM_DECL"):
            return False
        if decl.type.get_canonical().kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
            return True
        local = cursor_kind(decl.semantic_parent) in FUNCTION_KINDS
        static = decl.storage_class.name == "STATIC"
        if not local or static or var_id(ref) in self.returned_vars:
            return True
        if decl.type.get_canonical().kind.name == "RECORD":
            # A local object lives in memory only once its address escapes
            # (say, to a non-inline resize()); only the compiler can tell.
            self.local_objects.add(var_id(ref))
            return True
        return False

    def _arrow(self, member: Any) -> bool:
        kids = children(member)
        if not kids:
            return True  # implicit this->field
        text = self.src.text(member)
        base = self.src.text(kids[0])
        return text[len(base) :].lstrip().startswith("->")

    def memory_access(self, cursor: Any) -> tuple[str, frozenset[str]] | None:
        """(key, variables it depends on) when evaluating this expression reads or
        writes memory at a location fixed by those variables."""
        cursor = unwrap(cursor)
        kind = cursor_kind(cursor)
        if kind == "MEMBER_REF_EXPR":
            if _aggregate(cursor):
                return None  # an array or struct member is an address; its fields are loads
            referenced = cursor.referenced
            if referenced is None:
                return None  # a member of a type a template depends on: not known here
            if cursor_kind(referenced) == "CXX_METHOD":
                return None  # `r->size` of r->size(): the call, not a field, decides
            kids = children(cursor)
            if not kids:
                return (f"this->{cursor.spelling}", frozenset({"this"}))
            if self._arrow(cursor) or self.is_memory_object(kids[0]):
                return (self.src.text(cursor), variables_in(kids[0]))
            return None
        if kind in ("ARRAY_SUBSCRIPT_EXPR", "UNARY_OPERATOR") and _aggregate(cursor):
            return None  # a struct or array element is an address; its fields are loads
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            base = children(cursor)[0]
            if self._local_array(base):
                return None
            return (self.src.text(cursor), variables_in(cursor))
        if kind == "UNARY_OPERATOR" and self.src.text(cursor).startswith("*"):
            return (self.src.text(cursor), variables_in(cursor))
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
        if cursor_kind(function) == "FUNCTION_DECL":
            return self._inline_reader(call, function)
        if cursor_kind(function) != "CXX_METHOD" or function.is_static_method():
            return None
        kids = children(call)
        if kids and cursor_kind(kids[0]) == "MEMBER_REF_EXPR" and not children(kids[0]):
            return (f"this->{function.spelling}()", frozenset({"this"}))
        obj = _member_object(call, kids)
        through_pointer = bool(kids) and cursor_kind(unwrap(kids[0])) == "MEMBER_REF_EXPR"
        through_pointer = through_pointer and self._arrow(unwrap(kids[0]))
        in_memory = obj is not None and (through_pointer or self.is_memory_object(obj))
        if obj is None or not in_memory or self._local_array(obj):
            return None
        if not reads_own_fields(function):
            return None  # `m.end()` of a node-based container: an address, no load
        return (f"{self.src.text(obj)}.{function.spelling}", variables_in(obj))

    def _inline_reader(self, call: Any, function: Any) -> tuple[str, frozenset[str]] | None:
        definition = function.get_definition()
        args = children(call)[1:]
        if definition is None or not args or not reads_through(definition, self.src):
            return None
        deps = frozenset().union(*(variables_in(a) for a in args))
        return (self.src.text(call), deps) if deps else None

    def _local_array(self, base: Any) -> bool:
        """A stack array (char buf[64], std::array<uint8_t, 64>, or an array member
        of a local object whose address is never taken) the write cannot alias."""
        base = unwrap(base)
        if cursor_kind(base) == "MEMBER_REF_EXPR":
            return _array_object(base.type) and self._private_member(base)
        if cursor_kind(base) != "DECL_REF_EXPR" or base.referenced is None:
            return False
        decl = base.referenced
        if (
            cursor_kind(decl) != "VAR_DECL"
            or cursor_kind(decl.semantic_parent) not in FUNCTION_KINDS
        ):
            return False
        return _array_object(decl.type)

    def _private_member(self, member: Any) -> bool:
        """A member (`line.text`, `m.head.flags`) of a local object by value whose
        address never escapes: it lives on the stack or in registers, where no
        pointer the function was given can reach — also when it is returned (the
        caller's return slot is not reachable through them either; both compilers
        load once)."""
        while cursor_kind(member) == "MEMBER_REF_EXPR" and not self._arrow(member):
            kids = children(member)
            if not kids:
                return False
            member = unwrap(kids[0])
        if cursor_kind(member) != "DECL_REF_EXPR" or member.referenced is None:
            return False
        decl = member.referenced
        if cursor_kind(decl) not in ("VAR_DECL", "PARM_DECL") or not _automatic(decl):
            return False
        record = decl.type.get_canonical().kind.name == "RECORD"
        return record and var_id(member) not in self._escaped()

    def _escaped(self) -> set[str]:
        """The variables whose address is taken, or which are handed to a call the
        compiler cannot see through or bound to a reference, anywhere in the
        function (found once per function)."""
        if self._escaped_vars is None:
            self._escaped_vars = set()
            for node in walk(self.cursor):
                for handed in self._handed_over(node):
                    self._escaped_vars |= root_variable(_object_root(handed))
        return self._escaped_vars

    def _handed_over(self, node: Any) -> list[Any]:
        kind = cursor_kind(node)
        if kind == "UNARY_OPERATOR" and operator_of(node, self.src) == "&":
            return children(node)[:1]
        if kind == "CALL_EXPR" and not _visible_call(node):
            return children(node)
        if kind == "VAR_DECL" and node.type.get_canonical().kind.name.endswith("REFERENCE"):
            return children(node)[-1:]
        return []

    # --- writes --------------------------------------------------------------

    def char_write(self, cursor: Any) -> Any | None:
        """The lvalue of a write through a char-like type into memory, else None."""
        kind = cursor_kind(cursor)
        if kind not in WRITE_KINDS:
            return None
        if kind == "CALL_EXPR" and cursor.spelling not in ("operator=", "operator++"):
            return None
        kids = children(cursor)
        if not kids:
            return None
        target = unwrap(kids[0])
        if not char_like(target.type):  # cheaper than the operator, so first
            return None
        if kind == "UNARY_OPERATOR" and operator_of(cursor, self.src) not in ("++", "--"):
            return None
        binary = kind not in ("UNARY_OPERATOR", "CALL_EXPR")
        if binary and operator_of(cursor, self.src) not in WRITE_OPERATORS:
            return None
        return target if self._writes_memory(target) else None

    def _writes_memory(self, target: Any) -> bool:
        kind = cursor_kind(target)
        if kind == "ARRAY_SUBSCRIPT_EXPR":
            base = children(target)[0]
            return not self._local_array(base) and not _is_restrict_pointer(base)
        if kind == "UNARY_OPERATOR":
            kids = children(target)
            return bool(kids) and not _is_restrict_pointer(kids[0])
        if kind == "MEMBER_REF_EXPR":
            # A store to a struct's own char field is typed by its struct (clang's
            # struct-path TBAA, GCC's access paths): it cannot change another
            # struct's fields, so it forces no reload. Union members can.
            return _union_member(target) and self.memory_access(target) is not None
        if kind == "CALL_EXPR":  # operator[] / at() of a container
            obj = _member_object(target, children(target))
            return obj is not None and not self._local_array(obj)
        if kind == "DECL_REF_EXPR" and target.referenced is not None:  # char& out
            ctype = target.referenced.type.get_canonical()
            return ctype.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE")
        return False

    # --- calls ---------------------------------------------------------------

    def opaque_calls(self, cursor: Any) -> list[Any]:
        """Calls in this subtree to functions the compiler cannot see through."""
        return [node for node in walk(cursor) if _opaque_call(node)]


def _opaque_call(node: Any) -> bool:
    if cursor_kind(node) != "CALL_EXPR":
        return False
    callee = node.referenced
    if _indirect(node, callee):
        return True
    if callee is None:
        return _unresolved(node)
    if cursor_kind(callee) in ("CONSTRUCTOR", "DESTRUCTOR") and callee.is_default_constructor():
        return False
    if callee.spelling in PURE_LIBRARY_FUNCTIONS or callee.spelling.startswith("__builtin"):
        return False
    return not inline_only(callee)


def _unresolved(call: Any) -> bool:
    """A call a template leaves open (`enc.Encrypt(...)` on a `T&`): whatever the
    instantiation calls, the compiler cannot be assumed to see through it."""
    kids = children(call)
    return bool(kids) and cursor_kind(unwrap(kids[0])) in UNRESOLVED_CALLEES


def _indirect(call: Any, callee: Any | None) -> bool:
    """A call the compiler cannot resolve: through a function pointer, or virtual."""
    if callee is None:
        kids = children(call)
        return bool(kids) and "POINTER" in unwrap(kids[0]).type.get_canonical().kind.name
    if cursor_kind(callee) in POINTER_HOLDERS:
        return True  # a variable or field holding a function pointer
    return cursor_kind(callee) == "CXX_METHOD" and callee.is_virtual_method()


def _visible_call(call: Any) -> bool:
    callee = call.referenced
    return callee is not None and not _indirect(call, callee) and inline_only(callee)


def _array_object(ctype: Any) -> bool:
    """An array held by value: `char buf[64]` or `std::array<uint8_t, 64>`."""
    canonical = ctype.get_canonical()
    return canonical.kind.name == "CONSTANTARRAY" or canonical.spelling.startswith("std::array<")


def _automatic(decl: Any) -> bool:
    """A variable of the function's own frame (not static, not global)."""
    local = cursor_kind(decl.semantic_parent) in FUNCTION_KINDS
    return local and decl.storage_class.name != "STATIC"


def _union_member(member: Any) -> bool:
    field = member.referenced
    return field is not None and cursor_kind(field.semantic_parent) == "UNION_DECL"


def _object_root(node: Any) -> Any:
    """The variable under member accesses: `m` in m.head.flags."""
    node = unwrap(node)
    while cursor_kind(node) == "MEMBER_REF_EXPR" and children(node):
        node = unwrap(children(node)[0])
    return node


def reads_through(definition: Any, src: SourceText) -> bool:
    """Does this function's body load through a pointer? Answered once a function: a hot
    function calls the same inline helpers at hundreds of sites (SQLite's sqlite3VdbeExec:
    90 CPU-s of `advise` tokenizing the helpers again at every call)."""
    start = definition.extent.start
    key = (start.file.name if start.file else "", start.offset)
    if key not in src.loads_through:
        src.loads_through[key] = any(_dereferences(n) for n in walk(definition))
    return src.loads_through[key]


def _dereferences(node: Any) -> bool:
    """Does this node of a function body load through a pointer?"""
    kind = cursor_kind(node)
    if kind == "MEMBER_REF_EXPR":
        kids = children(node)
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
    return _aggregate_type(cursor.type)


def _aggregate_type(ctype: Any) -> bool:
    return ctype.get_canonical().kind.name in ("RECORD", "CONSTANTARRAY", "INCOMPLETEARRAY")


def _member_object(call: Any, kids: list[Any]) -> Any | None:
    """The object a member call is made on: `v` in v.size(), and in v[i], whose
    operator call lists the object first."""
    if not kids:
        return None
    first = unwrap(kids[0])
    if cursor_kind(first) == "MEMBER_REF_EXPR" and cursor_kind(first.referenced) == "CXX_METHOD":
        inner = children(first)
        return inner[0] if inner else None
    if call.spelling.startswith("operator"):
        return kids[0]
    return None


def inline_only(function: Any, depth: int = 0) -> bool:
    """Is the function's body visible to the compiler, and all it calls, recursively?"""
    name = function.spelling
    if name.startswith("__builtin") or name in PURE_LIBRARY_FUNCTIONS:
        return True
    if any(cursor_kind(child) in PURE_ATTRIBUTES for child in function.get_children()):
        return True  # writes no memory, so it cannot force a reload
    usr = (function.translation_unit.spelling, function.get_usr())
    if usr in _INLINE_CACHE:
        return _INLINE_CACHE[usr]
    _INLINE_CACHE[usr] = True  # recursion is fine: only its other callees decide
    _INLINE_CACHE[usr] = _body_inline_only(function, depth)
    return _INLINE_CACHE[usr]


_INLINE_CACHE: dict[tuple[str, str], bool] = {}  # (TU, USR): visibility differs by TU


def _body_inline_only(function: Any, depth: int) -> bool:
    if _declared_noinline(function):
        return False
    definition = function.get_definition() or template_pattern(function)
    if definition is None:
        return cursor_kind(function) in ("CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR") and (
            function.is_default_method()
        )
    if depth >= INLINE_DEPTH:
        return True
    calls = [node for node in _own_nodes(definition) if cursor_kind(node) == "CALL_EXPR"]
    owner = definition.semantic_parent
    if owner is not None and cursor_kind(owner) in CLASS_TEMPLATES:
        unresolved = [c for c in calls if c.referenced is None]
        if not all(_dependent_call_inline_only(c, owner, depth) for c in unresolved):
            return False
    return all(inline_only(c.referenced, depth + 1) for c in calls if c.referenced is not None)


def _dependent_call_inline_only(call: Any, owner: Any, depth: int) -> bool:
    """A call a class template's own body leaves unresolved (its types depend on the
    template's parameters): an operator or a conversion on them
    (`size_type(_M_finish - _M_start)`) is seen through; a call by name only when
    every method of the class of that name is (`_M_data()`), else it may be anything
    (a traits class's `construct(...)`, a base class's `_M_allocate(...)`)."""
    name = _called_name(call)
    if name is None:
        return True
    methods = [
        m for m in owner.get_children() if cursor_kind(m) in METHOD_KINDS and m.spelling == name
    ]
    return bool(methods) and all(inline_only(m, depth + 1) for m in methods)


def _called_name(call: Any) -> str | None:
    """The name a call calls (`construct` of `_Alloc_traits::construct(...)`), None for
    an operator or a conversion to a type."""
    kids = children(call)
    if not kids or cursor_kind(kids[0]) == "TYPE_REF":
        return None
    callee_end = kids[0].extent.end.offset
    tokens = list(call.get_tokens())
    after = next((n for n, t in enumerate(tokens) if t.extent.start.offset >= callee_end), None)
    if not after or tokens[after].spelling != "(":
        return None
    return str(tokens[after - 1].spelling)


def _own_nodes(cursor: Any):  # type: ignore[no-untyped-def]
    """The nodes of a function's own code. libclang hangs the whole class under an
    implicit member (a defaulted `operator=` of `struct key { ...; bytes[32]; }`
    reaches its class's other methods), whose calls are not the member's."""
    yield cursor
    for child in cursor.get_children():
        if cursor_kind(child) not in RECORD_KINDS:
            yield from _own_nodes(child)


def reads_own_fields(method: Any, depth: int = 0) -> bool:
    """Does the method's inline body load a field of its object (`_M_finish`), itself or
    through another of its methods? Taking a field's address (`&_M_header`) or reading
    an array member's address is no load. A body not visible counts as a load."""
    definition = method.get_definition()
    if definition is None or depth >= INLINE_DEPTH:
        return True
    return _loads_field(definition, depth, False)


def _loads_field(node: Any, depth: int, under_address: bool) -> bool:
    kind = cursor_kind(node)
    if kind in RECORD_KINDS:
        return False
    if kind == "MEMBER_REF_EXPR" and not under_address and _own_field(node):
        return node.type.get_canonical().kind.name != "CONSTANTARRAY"
    if kind == "CALL_EXPR" and _own_method_call(node):
        return reads_own_fields(node.referenced, depth + 1)
    taking_address = kind == "UNARY_OPERATOR" and _token_text(node) == "&"
    return any(
        _loads_field(child, depth, under_address or taking_address) for child in node.get_children()
    )


def _own_field(member: Any) -> bool:
    """`field` or `this->field` (also `this->_M_impl._M_start`): a field of the object."""
    kids = children(member)
    if cursor_kind(member.referenced) != "FIELD_DECL":
        return False
    if not kids:
        return True
    base = unwrap(kids[0])
    return cursor_kind(base) == "CXX_THIS_EXPR" or (
        cursor_kind(base) == "MEMBER_REF_EXPR" and _own_field(base)
    )


def _own_method_call(call: Any) -> bool:
    callee = call.referenced
    if callee is None or cursor_kind(callee) != "CXX_METHOD":
        return False
    kids = children(call)
    first = unwrap(kids[0]) if kids else None
    if first is None or cursor_kind(first) != "MEMBER_REF_EXPR":
        return False
    inner = children(first)
    return not inner or cursor_kind(unwrap(inner[0])) == "CXX_THIS_EXPR"


def _declared_noinline(function: Any) -> bool:
    """__attribute__((noinline)) (libclang shows it as an unexposed attribute)."""
    return any(
        token.spelling in NOINLINE_SPELLINGS
        for child in function.get_children()
        if cursor_kind(child) == "UNEXPOSED_ATTR"
        for token in child.get_tokens()
    )


@dataclass
class Access:
    """A memory location an expression reads or writes: its key (the expression as
    written), the variables that fix it, and the expression's node."""

    key: str
    deps: frozenset[str]
    node: Any


def access_at(fn: FunctionBody, node: Any) -> Access | None:
    """The memory the node reads: through the function's objects, a global, or a
    reference."""
    found = fn.memory_access(node) if cursor_kind(node) != "UNEXPOSED_EXPR" else None
    if found is None:
        found = _variable_read(node)
    return Access(found[0], found[1], node) if found is not None else None


def _variable_read(node: Any) -> tuple[str, frozenset[str]] | None:
    """A read of a variable that lives in memory: a global or static (no variable
    parts), or a scalar through a reference (`n` of `const size_t& n`)."""
    if cursor_kind(node) != "DECL_REF_EXPR" or node.referenced is None:
        return None
    decl = node.referenced
    if cursor_kind(decl) not in ("VAR_DECL", "PARM_DECL"):
        return None
    ctype = decl.type.get_canonical()
    if ctype.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE"):
        scalar = not _aggregate_type(ctype.get_pointee())
        return (node.spelling, frozenset({var_id(node)})) if scalar else None
    if cursor_kind(decl) != "VAR_DECL" or ctype.is_const_qualified() or _automatic(decl):
        return None
    if ctype.kind.name in ("RECORD", "CONSTANTARRAY", "ELABORATED"):
        return None
    return (decl.spelling, frozenset())

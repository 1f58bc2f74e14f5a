"""Struct types from DWARF: members with their offsets, sizes and type names, as
pahole prints them. A bitfield, like pahole, has the offset and size of its
storage unit and its bit offset in it; `span` is the bytes its bits occupy."""

from __future__ import annotations

from dataclasses import dataclass, field

from elftools.dwarf.die import DIE

from ..binaries import Binary
from ..binaries.subprograms import attr_text

STRUCT_TAGS = ("DW_TAG_structure_type", "DW_TAG_class_type")
RAW_STORAGE = ("__aligned_buffer<", "__aligned_membuf<")
POINTER_TAGS = ("DW_TAG_pointer_type", "DW_TAG_reference_type", "DW_TAG_rvalue_reference_type")
INNER_DEPTH = 8  # levels of nesting followed into a member's own members
SUBROUTINE = "DW_TAG_subroutine_type"
AGGREGATE_KEYWORDS = {
    "DW_TAG_structure_type": "struct",
    "DW_TAG_class_type": "class",
    "DW_TAG_union_type": "union",
}


@dataclass
class Field:
    name: str
    type_name: str
    offset: int
    size: int
    bit_offset: int | None = None  # bitfields: the first bit in the storage unit
    bit_size: int | None = None
    ancestor: bool = False  # a C++ base class (pahole's `<ancestor>`)
    fixed: bool = False  # placed by the language (a base class, the vtable pointer): not movable
    # a base class without data (its size 1 in DWARF, none in the object: it shares its
    # offset with the next member), whose bytes are that member's
    empty: bool = False
    # a base class's or struct member's own members, flattened (`_M_storage.second.id`),
    # their offsets from the outer struct's start
    inner: list[Field] = field(default_factory=list)

    def span(self) -> tuple[int, int]:
        """The bytes [start, end) the field's bits occupy."""
        first, end = self.bits()
        return first // 8, (end + 7) // 8

    def bits(self) -> tuple[int, int]:
        """The bits [start, end) of the field within the struct."""
        if self.bit_size is None:
            return self.offset * 8, (self.offset + self.size) * 8
        first = self.offset * 8 + (self.bit_offset or 0)
        return first, first + self.bit_size


@dataclass
class Struct:
    name: str
    size: int
    fields: list[Field]
    # named by a typedef of an anonymous struct (`typedef struct {...} rec_map;`,
    # as Verstable and stb_ds declare their tables), as pahole prints it
    typedef: bool = False


def struct_of(die: DIE | None) -> Struct | None:
    """The struct a (possibly qualified or typedef'd) type is, if it is a complete one."""
    target = strip_qualifiers(die)
    if target is None or target.tag not in STRUCT_TAGS:
        return None
    if "DW_AT_byte_size" not in target.attributes:
        return None
    kinds = ("DW_TAG_member", "DW_TAG_inheritance")
    fields = [member(m) for m in target.iter_children() if m.tag in kinds]
    name = attr_text(target, "DW_AT_name")
    alias = "" if name else typedef_name(target)
    return Struct(
        name or alias or "(anonymous)",
        target.attributes["DW_AT_byte_size"].value,
        sorted((f for f in fields if f is not None), key=lambda f: f.bits()),
        typedef=bool(alias),
    )


def typedef_name(target: DIE) -> str:
    """The name a file-level typedef gives an anonymous struct, if one does."""
    for die in target.cu.get_top_DIE().iter_children():
        if (
            die.tag == "DW_TAG_typedef"
            and "DW_AT_type" in die.attributes
            and die.get_DIE_from_attribute("DW_AT_type").offset == target.offset
        ):
            return attr_text(die, "DW_AT_name")
    return ""


def struct_elements(die: DIE) -> tuple[Struct, int] | None:
    """A struct type as (struct, 1), an array of structs as (struct, element count)."""
    target = strip_qualifiers(die)
    if target is None:
        return None
    if target.tag == "DW_TAG_array_type" and "DW_AT_type" in target.attributes:
        element = struct_of(target.get_DIE_from_attribute("DW_AT_type"))
        count = array_length(target)
        return (element, count) if element is not None and count > 0 else None
    struct = struct_of(target)
    return (struct, 1) if struct is not None else None


def strip_qualifiers(die: DIE | None) -> DIE | None:
    while die is not None and die.tag in (
        "DW_TAG_typedef",
        "DW_TAG_const_type",
        "DW_TAG_volatile_type",
    ):
        if "DW_AT_type" not in die.attributes:
            return None
        die = die.get_DIE_from_attribute("DW_AT_type")
    return die


def member(die: DIE, depth: int = INNER_DEPTH) -> Field | None:
    """A member or base class; with depth > 0, the members inside it too."""
    if "DW_AT_type" not in die.attributes:
        return None
    type_die = die.get_DIE_from_attribute("DW_AT_type")
    name, kind, size = attr_text(die, "DW_AT_name"), type_name(type_die), type_size(type_die)
    if "DW_AT_bit_size" in die.attributes:
        first = bitfield_start(die, size)
        if first is None or size <= 0:
            return None
        unit = first // (size * 8) * size
        bits = int(die.attributes["DW_AT_bit_size"].value)
        return Field(name, kind, unit, size, first - unit * 8, bits)
    location = die.attributes.get("DW_AT_data_member_location")
    if location is None or not isinstance(location.value, int):
        return None
    held = raw_value_type(die, type_die)
    inner = leaves(held or type_die, location.value, "", depth) if depth else []
    if die.tag == "DW_TAG_inheritance":
        base = attr_text(strip_qualifiers(type_die) or type_die, "DW_AT_name")
        return Field(
            f"<ancestor {base}>",
            kind,
            location.value,
            size,
            ancestor=True,
            fixed=True,
            empty=without_data(type_die),
            inner=inner,
        )
    return Field(
        name, kind, location.value, size, fixed="DW_AT_artificial" in die.attributes, inner=inner
    )


def leaves(type_die: DIE, offset: int, prefix: str, depth: int) -> list[Field]:
    """The scalar members inside an aggregate at `offset`, named by their path from it
    (a base class adds nothing to the path). libstdc++'s raw node storage
    (`__aligned_buffer<T>`, `__aligned_membuf<T>`: the bytes an unordered_map or
    std::list node keeps its value in) is taken for the T it holds."""
    target = strip_qualifiers(type_die)
    if depth == 0 or target is None or target.tag not in STRUCT_TAGS:
        return []
    held = stored_type(target)
    if held is not None:
        return leaves(held, offset, prefix, depth - 1)
    found: list[Field] = []
    for child in target.iter_children():
        if child.tag not in ("DW_TAG_member", "DW_TAG_inheritance"):
            continue
        inner = member(child, 0)
        if inner is None or inner.bit_size is not None:
            continue
        path = prefix if inner.ancestor else f"{prefix}{inner.name}"
        start = offset + inner.offset
        type_die = child.get_DIE_from_attribute("DW_AT_type")
        below = leaves(type_die, start, prefix if inner.ancestor else f"{path}.", depth - 1)
        if below:
            found.extend(below)
        elif not inner.ancestor:
            found.append(Field(path, inner.type_name, start, inner.size))
    return found


def stored_type(target: DIE) -> DIE | None:
    """The T of libstdc++'s `__aligned_buffer<T>` / `__aligned_membuf<T>`."""
    if not attr_text(target, "DW_AT_name").startswith(RAW_STORAGE):
        return None
    for child in target.iter_children():
        if child.tag == "DW_TAG_template_type_param" and "DW_AT_type" in child.attributes:
            return child.get_DIE_from_attribute("DW_AT_type")
    return None


def without_data(type_die: DIE) -> bool:
    """Whether a class has no data members, itself or in its base classes."""
    target = strip_qualifiers(type_die)
    if target is None or target.tag not in STRUCT_TAGS:
        return False
    for child in target.iter_children():
        placed = ("DW_AT_data_member_location", "DW_AT_data_bit_offset")  # not static
        if child.tag == "DW_TAG_member" and any(a in child.attributes for a in placed):
            return False
        if child.tag == "DW_TAG_inheritance" and not without_data(
            child.get_DIE_from_attribute("DW_AT_type")
        ):
            return False
    return True


def raw_value_type(die: DIE, type_die: DIE) -> DIE | None:
    """The value a container's member keeps in raw bytes, `alignas(T) unsigned char
    m_value[sizeof(T)]` (tsl::robin_map's bucket_entry) or a struct of those bytes
    alone (`std::aligned_storage<sizeof(T), alignof(T)>::type`: tsl::hopscotch_map's
    bucket): the struct its class names `value_type`, or takes as a template type
    parameter, when its size is the array's."""
    target = byte_array(strip_qualifiers(type_die))
    if target is None or target.tag != "DW_TAG_array_type" or "DW_AT_type" not in target.attributes:
        return None
    if type_size(target.get_DIE_from_attribute("DW_AT_type")) != 1:
        return None
    parent = die.get_parent()
    for child in parent.iter_children() if parent is not None else ():
        named = child.tag == "DW_TAG_typedef" and attr_text(child, "DW_AT_name") == "value_type"
        if not (named or child.tag == "DW_TAG_template_type_param"):
            continue
        if "DW_AT_type" not in child.attributes:
            continue
        held = strip_qualifiers(child.get_DIE_from_attribute("DW_AT_type"))
        if held is not None and held.tag in STRUCT_TAGS and type_size(held) == type_size(target):
            return held
    return None


def byte_array(target: DIE | None) -> DIE | None:
    """target, or its one member with data when target is a struct or union of those
    bytes alone beside empty members (libstdc++'s `std::aligned_storage<N, A>::type`:
    `union type { unsigned char __data[N]; struct alignas(A) {} __align; }`)."""
    if target is None or target.tag not in (*STRUCT_TAGS, "DW_TAG_union_type"):
        return target
    typed = [
        strip_qualifiers(child.get_DIE_from_attribute("DW_AT_type"))
        for child in target.iter_children()
        if child.tag == "DW_TAG_member" and "DW_AT_type" in child.attributes
    ]
    held = [inner for inner in typed if inner is None or not without_data(inner)]
    if len(held) == 1 and held[0] is not None and type_size(held[0]) == type_size(target):
        return held[0]
    return target


def bitfield_start(die: DIE, unit_size: int) -> int | None:
    """A bitfield's first bit from the start of the struct: DWARF 5's
    DW_AT_data_bit_offset, or DWARF 4's DW_AT_bit_offset, counted from the most
    significant bit of the storage unit (little-endian targets)."""
    attributes = die.attributes
    if "DW_AT_data_bit_offset" in attributes:
        return int(attributes["DW_AT_data_bit_offset"].value)
    location = attributes.get("DW_AT_data_member_location")
    base = location.value if location is not None and isinstance(location.value, int) else 0
    if "DW_AT_bit_offset" not in attributes:
        return base * 8
    size = unit_size
    if "DW_AT_byte_size" in attributes:
        size = int(attributes["DW_AT_byte_size"].value)
    bits = int(attributes["DW_AT_bit_size"].value)
    return base * 8 + size * 8 - int(attributes["DW_AT_bit_offset"].value) - bits


def type_size(die: DIE) -> int:
    if "DW_AT_byte_size" in die.attributes:
        return int(die.attributes["DW_AT_byte_size"].value)
    if die.tag in POINTER_TAGS:  # rustc gives its pointers no size: an address's
        return int(die.cu.header["address_size"])
    if die.tag == "DW_TAG_array_type":
        return type_size(die.get_DIE_from_attribute("DW_AT_type")) * array_length(die)
    if "DW_AT_type" in die.attributes:
        return type_size(die.get_DIE_from_attribute("DW_AT_type"))
    return 0


def array_length(die: DIE) -> int:
    length = 1
    for sub in die.iter_children():
        if "DW_AT_count" in sub.attributes:
            length *= int(sub.attributes["DW_AT_count"].value)
        elif "DW_AT_upper_bound" in sub.attributes:
            length *= int(sub.attributes["DW_AT_upper_bound"].value) + 1
    return length


def type_name(die: DIE) -> str:
    name = attr_text(die, "DW_AT_name")
    if die.tag in AGGREGATE_KEYWORDS:
        return f"{AGGREGATE_KEYWORDS[die.tag]} {name or '{...}'}"
    if die.tag == "DW_TAG_enumeration_type":
        return f"enum {name or '{...}'}"
    if name:
        return name
    inner = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None
    if die.tag == "DW_TAG_pointer_type" and inner is not None and inner.tag == SUBROUTINE:
        return function_pointer_name(inner)
    if die.tag == "DW_TAG_pointer_type":
        return f"{type_name(inner) if inner is not None else 'void'} *"
    if die.tag == "DW_TAG_const_type":
        return f"const {type_name(inner) if inner is not None else 'void'}"
    if die.tag == "DW_TAG_array_type" and inner is not None:
        dims = "][".join(str(array_length_one(s)) for s in die.iter_children())
        return f"{type_name(inner)}[{dims}]"
    return "?"


def function_pointer_name(die: DIE) -> str:
    """`int (*)(const void *, void *)`: the member's name goes where pahole puts it,
    inside the parentheses (layout.member_line)."""
    returns = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None
    parameters = [
        type_name(p.get_DIE_from_attribute("DW_AT_type"))
        if p.tag == "DW_TAG_formal_parameter"
        else "..."
        for p in die.iter_children()
        if p.tag in ("DW_TAG_formal_parameter", "DW_TAG_unspecified_parameters")
    ]
    result = type_name(returns) if returns is not None else "void"
    return f"{result} (*)({', '.join(parameters) or 'void'})"


def array_length_one(sub: DIE) -> int:
    if "DW_AT_count" in sub.attributes:
        return int(sub.attributes["DW_AT_count"].value)
    if "DW_AT_upper_bound" in sub.attributes:
        return int(sub.attributes["DW_AT_upper_bound"].value) + 1
    return 0


def find_subprogram(binary: Binary, function: str) -> DIE | None:
    """The DWARF entry of a function given as perf or callgrind names it
    ("ns::C::f(int)" -> f)."""
    return binary.subprogram(function.split("(")[0].split("::")[-1])

"""A loop mapping bytes through a switch is rewritten without branches in blocks of
16 (the --verify change for bitcoin's SwapBase64 shape); any other loop is left alone.
The rewritten code's behaviour is checked by compiling it (integration
test_aliasing_verify.py); here, what is recognised and what the text says."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfsleuth.static_analysis.byte_map import BLOCK, BLOCK_NAME, KEY, blocked

EXAMPLE = (Path(__file__).resolve().parents[2] / "examples" / "aliasing" / "swap64.cc").read_text()
# swap_alphabet's loop: from its `for` to the end of its last line.
SWAP = EXAMPLE[
    EXAMPLE.index("for (std::size_t i = 0; i < from.size()") : EXAMPLE.index("    return to;")
]


def test_the_swapbase64_shape_becomes_a_branch_free_block_loop_and_the_rest() -> None:
    text = blocked(SWAP)
    assert text is not None
    blocks, rest = text.split("for (; i < from.size(); ++i) ", 1)
    assert blocks.startswith("{ std::size_t i = 0; for (; i + 16 <= (from.size()); i += 16)")
    assert "switch" not in blocks and "?" not in blocks  # no branch in the block loop
    assert f"__typeof__(to[i]) {BLOCK_NAME}[{BLOCK}];" in blocks
    assert f"{KEY} = from[i + perfsleuth_j];" in blocks
    # the key is the default's value; each case's term turns it into the case's value
    assert f"({KEY} ^ (({KEY} == '-') * ('-' ^ '+')) ^ (({KEY} == '~') * ('~' ^ '/'))" in blocks
    copied = f"__builtin_memcpy(&to[i], {BLOCK_NAME}, sizeof {BLOCK_NAME}); }}"
    assert blocks.rstrip().endswith(copied)
    # the bytes left over go through the loop's own body, and the scope closes after it
    assert rest == SWAP[SWAP.index("{") : SWAP.rindex("}") + 1] + " }\n"
    assert text.count("\n") == SWAP.count("\n")  # the lines after the loop keep their numbers


def test_grouped_labels_and_a_constant_default() -> None:
    loop = (
        "for (int k = 0; k < n; k++) switch (in[k]) {\n"
        "  case 'a': case 'b': out[k] = 'x'; break;\n"
        "  case 0x20: out[k] = in[k]; break;\n"
        "  default: out[k] = '.';\n"
        "}\n"
    )
    text = blocked(loop)
    assert text is not None
    assert text.startswith("{ int k = 0; for (; k + 16 <= (n); k += 16)")
    # the base is the default, so every label's term is the default ^ its value,
    # and a case storing the key itself stores its own label
    for label, value in (("'a'", "'x'"), ("'b'", "'x'"), ("0x20", "0x20")):
        assert f"(({KEY} == {label}) * ('.' ^ {value}))" in text
    assert f"('.' ^ (({KEY} ==" in text


def test_an_index_declared_before_the_loop_is_assigned_not_declared() -> None:
    text = blocked(SWAP.replace("std::size_t i = 0", "i = 0"))
    assert text is not None and text.startswith("{ i = 0; for (; i + 16")


@pytest.mark.parametrize(
    "loop",
    [
        # a store that falls through into the next case's store
        SWAP.replace("to[i] = '+'; break;", "to[i] = '+';"),
        # no default: the other bytes are not stored at all
        SWAP.replace("default: to[i] = from[i]; break;", ""),
        # two destinations
        SWAP.replace("case '/': to[i]", "case '/': other[i]"),
        # a value that is not a constant
        SWAP.replace("to[i] = '+'", "to[i] = table[0]"),
        # the switch is not on the element at the loop's index
        SWAP.replace("switch (from[i])", "switch (from[i + 1])"),
        # more in the body than the switch
        SWAP.replace("        switch", "        ++count;\n        switch"),
        # not a counted loop
        SWAP.replace("for (std::size_t i = 0; i < from.size(); ++i)", "while (more())"),
        SWAP.replace("++i)", "i += 2)"),
    ],
)
def test_other_loops_are_not_rewritten(loop: str) -> None:
    assert blocked(loop) is None

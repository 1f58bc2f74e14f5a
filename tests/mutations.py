"""The mutation the fuzz tests draw: a real input with a few bytes changed."""

from __future__ import annotations

from hypothesis import strategies as st


@st.composite
def mutated(draw: st.DrawFn, seed: bytes, hot: int | None = None) -> bytes:
    """`seed` with a few bytes replaced, inserted or cut, or cut short. With `hot`, half
    the edits fall in its first `hot` bytes (a binary header, where a byte changes what
    the reader believes about the rest of the file)."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(0, 8))):
        span = len(data) if hot is None else draw(st.sampled_from([hot, len(data)]))
        pos = draw(st.integers(0, min(span, len(data))))
        edit = draw(st.sampled_from(["replace", "insert", "delete", "truncate"]))
        chunk = draw(st.binary(min_size=1, max_size=8))
        if edit == "replace":
            data[pos : pos + len(chunk)] = chunk
        elif edit == "insert":
            data[pos:pos] = chunk
        elif edit == "delete":
            del data[pos : pos + len(chunk)]
        else:
            del data[pos:]
    return bytes(data)

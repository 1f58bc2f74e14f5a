"""experiments/aliasing.py's counter kept in a local (glib's gstring->len): refused
where the write-back would not run on every path."""

from __future__ import annotations

from perfsleuth.experiments.aliasing import STRAIGHT_LINE, _counter_kept

GLIB = """static inline void append(GString *s, char c) {
  s->str[s->len++] = c;
  s->str[s->len] = 0;
}
"""
EARLY_RETURN = """static inline void append(GString *s, char c) {
  s->str[s->len++] = c;
  if (c == 0) return;
  s->str[s->len] = 0;
}
"""


def match(end_line: int) -> dict:
    return {"read": "s->len", "line": 2, "end_line": end_line, "pattern": STRAIGHT_LINE}


def test_the_counter_is_kept_and_written_back_after_the_last_store() -> None:
    kept = _counter_kept(GLIB, match(3))
    assert kept is not None
    text, _ = kept
    assert "s->len = " in text and "s->len++" not in text


def test_a_return_between_the_change_and_the_write_back_refuses_it() -> None:
    assert _counter_kept(EARLY_RETURN, match(4)) is None

"""A source file's text cut into its lines as a compiler numbers them (and so its debug
info, callgrind's counts and cg_annotate): ended by a newline, a carriage return and
newline, or a carriage return alone. str.splitlines also ends a line at a form feed, a
vertical tab, the file, group and record separators (0x1c-0x1e), NEL (0x85) and the
Unicode line and paragraph separators: GNU sources put a form feed (^L) on a line of its
own between their sections, and every line after one was shown a line off (GNU m4's
`expand_token` listed its prologue's count on the line above its `{`)."""


def source_lines(text: str) -> list[str]:
    """`text`'s lines, as str.splitlines gives them but for the line ends (the module's
    doc): no line end kept, and no empty line after a last line end."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines

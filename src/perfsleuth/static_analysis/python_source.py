"""What a line of Python source does, read from its syntax tree (the `ast` module).

A rule's `source_nodes` patterns are matched against the *shape* of a hot line: the
node types of the innermost statement at that line (`Assign`, `Subscript`, `Mult`, ...),
each parent-child pair in it as `Parent>Child` (`BinOp>Subscript`: an operand that
indexes), and the types of the statements around it (`For`, `While`, `FunctionDef`).
This reads syntax, not types: `s + parts[i]` on strings looks like arithmetic.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

# Larger source files are not parsed (a generated module, not a hot loop to rewrite).
MAX_SOURCE = 4 << 20


class PythonLines:
    """The shape of lines of Python files found by `find` (None: not readable), each file
    parsed once."""

    def __init__(self, find: Callable[[str], Path | None]) -> None:
        self.find = find
        self.statements: dict[str, list[ast.stmt] | None] = {}

    def shape(self, file: str, line: int) -> frozenset[str]:
        """The node types and `Parent>Child` pairs at `line` (empty when unknown)."""
        around = [stmt for stmt in self._statements(file) or [] if _spans(stmt, line)]
        if not around:
            return frozenset()
        innermost = around[-1]
        names = {type(stmt).__name__ for stmt in around}
        for parent in ast.walk(innermost):
            names.add(type(parent).__name__)
            for child in ast.iter_child_nodes(parent):
                names.add(f"{type(parent).__name__}>{type(child).__name__}")
        return frozenset(names)

    def _statements(self, file: str) -> list[ast.stmt] | None:
        if file not in self.statements:
            self.statements[file] = _parse(self.find(file))
        return self.statements[file]


def _parse(path: Path | None) -> list[ast.stmt] | None:
    """Every statement, each before the statements nested in it."""
    if path is None:
        return None
    try:
        if path.stat().st_size > MAX_SOURCE:
            return None
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError):
        return None
    return [node for node in _preorder(tree) if isinstance(node, ast.stmt)]


def _preorder(tree: ast.AST) -> list[ast.AST]:
    """The nodes of `tree`, each before its children (ast.walk goes breadth first)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def _spans(stmt: ast.stmt, line: int) -> bool:
    return stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)

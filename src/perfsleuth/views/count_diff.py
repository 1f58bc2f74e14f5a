"""What changed between two count runs (`record --mode count`): their numbers are exact,
so the counts themselves are compared: every function and line whose count changed,
with the change in instructions and as a share of run A's total. There is no noise to
filter.

Functions are paired by name alone, since a rebuilt binary may have another file name.
An edit moves the lines below it, so where both runs recorded their source files (count
runs do) lines are paired by their text as it was then, not by their number: inserting
a line does not make every line after it look changed, and a block moved past other
lines pairs by the texts found once in each run. A file that only one run counted
is paired with the other run's file of the same name in another directory (a build in
another checkout or worktree), when that file is the only one whose path ends alike.

Each run is read as its LineCounts (model/line_counts.py), and this module imports
nothing else of perfsleuth: `diff` of two count runs starts fast.
"""

from __future__ import annotations

from operator import itemgetter

from ..model.line_counts import FileLines, LineCounts

TYPE_CHECKING = False  # typing's, without importing typing (docs/counts.md)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def exact_diff(
    a: LineCounts,
    b: LineCounts,
    *,
    event: str = "Ir",
    n: int = 0,
    split_recursion: bool = False,
) -> dict:
    """Exact counts per function and per line, for two count runs."""
    if event not in a.events or event not in b.events:
        event = a.events[0]
    total_a, total_b = a.total(event), b.total(event)
    self_b = b.function_self(event, split_recursion=split_recursion)
    functions = changes(
        unnamed_paired(a.function_self(event, split_recursion=split_recursion), self_b),
        self_b,
        total_a,
    )
    files = paired_files(a.files.keys(), b.files.keys())
    lines = line_changes(a, b, event, total_a, files)
    inlining = inlining_changes(a, b, event, files)
    limit = n if n > 0 else None
    return {
        "event": event,
        "total_a": total_a,
        "total_b": total_b,
        "delta": total_b - total_a,
        "delta_share": (total_b - total_a) / total_a if total_a else 0.0,
        "functions": [{"function": key, **row} for key, row in functions[:limit]],
        "lines": lines[:limit],
        "functions_changed": len(functions),
        "lines_changed": len(lines),
        "files_moved": [
            [file_a, file_b] for file_a, file_b in files if file_a and file_b and file_a != file_b
        ],
        "inlining": inlining,
    }


def inlining_changes(a: LineCounts, b: LineCounts, event: str, files: list[FilePair]) -> list[dict]:
    """The functions counted on their own in one run only whose lines the other run counted
    too, inside other functions: inlined there (a function that stopped being inlined is
    a new function to the diff, and its callers' changes are its lost inlining). One
    that kept its name's stem in the other run (`f.part.0`, `f.isra.0`) is a clone, left
    out. Each: {"function", "inlined_in": "a"|"b", "file", "first", "last", "count"},
    count being the instructions the inlining run counted on its lines."""
    self_a, self_b = a.function_self(event), b.function_self(event)
    found = []
    for own, other, own_self, other_self, inlined_in, pairs in (
        (b, a, self_b, self_a, "a", [(fb, fa) for fa, fb in files]),
        (a, b, self_a, self_b, "b", files),
    ):
        stems = {name.split(".")[0] for name, count in other_self.items() if count}
        partner = {f: g for f, g in pairs if f and g}
        for name, count in own_self.items():
            span = own.spans.get(name)
            if not count or other_self.get(name) or span is None or name.split(".")[0] in stems:
                continue
            file, first, last = span
            other_file = partner.get(file, "")
            inlined = _counted_on(
                own.files[file],
                other.files.get(other_file),
                (first, last),
                other.column(event),
                [(lo, hi) for f, lo, hi in other.spans.values() if f == other_file],
            )
            if inlined:
                found.append(
                    {
                        "function": name,
                        "inlined_in": inlined_in,
                        "file": file,
                        "first": first,
                        "last": last,
                        "count": inlined,
                    }
                )
    return sorted(found, key=lambda row: -row["count"])


def _counted_on(
    own: FileLines,
    other: FileLines | None,
    span: tuple[int, int],
    column: int,
    functions: list[tuple[int, int]],
) -> int:
    """What `other` counted on the lines of `own` in `span`, paired by text, outside the
    `functions` spans of its own (a function split in two or renamed is not inlined)."""
    if other is None or not other.counts:
        return 0
    pairs = align_file(own, other)
    paired = [(i, i) for i in range(pairs)] if isinstance(pairs, int) else pairs
    counts, first, last = other.counts[column], *span
    return sum(
        counts[j]
        for i, j in paired
        if i is not None
        and j is not None
        and first <= own.lines[i] <= last
        and not any(lo <= other.lines[j] <= hi for lo, hi in functions)
    )


UNNAMED = "[unnamed code in "  # model/counts.py's name of an object's code without a symbol


def unnamed_paired(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    """`a` with its one object's unnamed code named as `b`'s when each run has one the
    other lacks: the program rebuilt under another name (yaml -> yaml-fast), its PLT
    stubs the same code (the diff said "3 functions changed" where one had)."""
    only_a = [name for name in a if name.startswith(UNNAMED) and name not in b]
    only_b = [name for name in b if name.startswith(UNNAMED) and name not in a]
    if len(only_a) != 1 or len(only_b) != 1:
        return a
    return {only_b[0] if name == only_a[0] else name: count for name, count in a.items()}


FilePair = tuple[str | None, str | None]  # a file's path in run A and in run B


def paired_files(in_a: Iterable[str], in_b: Iterable[str]) -> list[FilePair]:
    """Each counted file of either run with its counterpart in the other: the same path,
    else the one file of the other run whose path ends in the most of the same
    components (at least the file's name) when that is so both ways, else None."""
    only_a, only_b = set(in_a) - set(in_b), set(in_b) - set(in_a)
    named_a, named_b = _by_name(only_a), _by_name(only_b)
    best_a = {f: _closest(f, named_b) for f in only_a}
    best_b = {g: _closest(g, named_a) for g in only_b}
    moved = {f: g for f, g in best_a.items() if g is not None and best_b[g] == f}
    pairs: list[FilePair] = [(f, f) for f in set(in_a) & set(in_b)]
    pairs += [(f, moved.get(f)) for f in only_a]
    pairs += [(None, g) for g in only_b if g not in moved.values()]
    return sorted(pairs, key=lambda pair: (pair[1] or pair[0] or "", pair[0] or ""))


def _by_name(paths: set[str]) -> dict[str, list[str]]:
    named: dict[str, list[str]] = {}
    for path in paths:
        named.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    return named


def _closest(path: str, named: dict[str, list[str]]) -> str | None:
    """The one path of the same file name sharing the longest tail of components."""
    parts = path.split("/")
    shared = {other: _tail(parts, other.split("/")) for other in named.get(parts[-1], [])}
    longest = max(shared.values(), default=0)
    found = [other for other, n in shared.items() if n == longest]
    return found[0] if len(found) == 1 else None


def _tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def line_changes(
    a: LineCounts, b: LineCounts, event: str, total_a: int, files: list[FilePair]
) -> list[dict]:
    """A row for every counted line whose count changed, files paired by paired_files
    and their lines by align_file, the largest changes first."""
    column_a, column_b = a.column(event), b.column(event)
    # Each row behind its order: the largest change first, equal ones in the order of
    # str((file, line in A, line in B)), written here with the file's repr made once.
    ordered: list[tuple[int, str, dict[str, Any]]] = []
    for file_a, file_b in files:
        file = file_b or file_a or ""
        named = f"({file!r}, "
        in_a = a.files[file_a] if file_a else NO_LINES
        in_b = b.files[file_b] if file_b else NO_LINES
        lines_a, lines_b = in_a.lines, in_b.lines
        counts_a, counts_b = _column(in_a, column_a), _column(in_b, column_b)
        texts_a, texts_b = in_a.texts, in_b.texts
        for i, j in _changed(align_file(in_a, in_b), counts_a, counts_b):
            line_a = None if i is None else lines_a[i]
            line_b = None if j is None else lines_b[j]
            before = counts_a[i] if i is not None and line_a else 0
            after = counts_b[j] if j is not None and line_b else 0
            if before == after:  # unchanged, or line 0 (no line information) on both sides
                continue
            delta = after - before
            text = (texts_b[j] if j is not None and line_b and texts_b else None) or (
                texts_a[i] if i is not None and line_a and texts_a else None
            )
            row = {
                "file": file,
                "file_a": file_a,
                "line": line_b or line_a or 0,
                "line_a": line_a,
                "line_b": line_b,
                "source": text,
                "a": before,
                "b": after,
                "delta": delta,
                "delta_share": delta / total_a if total_a else 0.0,
            }
            ordered.append((-abs(delta), f"{named}{line_a}, {line_b})", row))
    ordered.sort(key=itemgetter(0, 1))
    return [row for _order, _key, row in ordered]


NO_LINES = FileLines([], [], None)
Pair = tuple[int | None, int | None]  # see align_file


def _column(lines: FileLines, column: int) -> list[int]:
    return lines.counts[column] if lines.counts else []


def _changed(pairs: list[Pair] | int, counts_a: list[int], counts_b: list[int]) -> list[Pair]:
    """The pairs whose counts may differ: of `n` lines paired with themselves, only
    those whose counts do (most lines of two runs of one build are paired so)."""
    if isinstance(pairs, list):
        return pairs
    return [(i, i) for i, (x, y) in enumerate(zip(counts_a, counts_b, strict=True)) if x != y]


def align_file(a: FileLines, b: FileLines) -> list[Pair] | int:
    """A file's counted lines of both runs paired, as (index in A's lines, index in B's),
    None for a line with no partner: by text where both runs kept the file's source and
    it changed, else by number. An int n when the n lines of both runs pair one to one,
    in order. The texts are those of the counted lines alone, so in a file that did not
    change, a line that only one run counted would pair with another of its text (mujs's
    jscompile.c: line 778 of one run with 757 of the other, both `label(J, F, end);`)."""
    la, lb = a.lines, b.lines
    same_file = a.digest is not None and a.digest == b.digest
    if a.texts is not None and b.texts is not None and not same_file:
        return _by_text(la, lb, a.texts, b.texts)
    if la == lb:
        return len(la)
    at_a = {n: i for i, n in enumerate(la)}
    at_b = {n: i for i, n in enumerate(lb)}
    return [(at_a.get(n), at_b.get(n)) for n in sorted(at_a.keys() | at_b.keys())]


def _by_text(
    la: list[int], lb: list[int], text_a: list[str | None], text_b: list[str | None]
) -> list[Pair] | int:
    # A blank line's text is "" (mawk's parse.y has counted ones: yacc's #line lines); a
    # line whose text is unknown (past the file's end) pairs only with the same number.
    # Indentation is left out: a line wrapped into a block keeps its text (bc's hot
    # `sum += *n1ptr-- * *n2ptr++;` under a new check was listed as gone and new).
    words_a = [
        f"\0{n}" if text is None else text.strip() for n, text in zip(la, text_a, strict=True)
    ]
    words_b = [
        f"\0{n}" if text is None else text.strip() for n, text in zip(lb, text_b, strict=True)
    ]
    if words_a == words_b:  # the same source: every line pairs with its own
        return len(la)
    paired_a = matching(words_a, words_b)
    paired_a |= _moved(words_a, words_b, paired_a)
    paired_b = set(paired_a.values())
    pairs: list[Pair] = [(i, paired_a.get(i)) for i in range(len(la))]
    return pairs + [(None, j) for j in range(len(lb)) if j not in paired_b]


def matching(a: list[str], b: list[str]) -> dict[int, int]:
    """The lines of `a` paired with those of `b` by difflib's SequenceMatcher(None, a, b,
    autojunk=False).get_matching_blocks(): the longest run of equal lines, then the same
    on each side of it. Written here because difflib imports re (with the enum it needs:
    a tenth of a count view's imports, docs/counts.md); tests/unit/test_views.py holds it
    to difflib's pairs. With nothing junk, difflib's widening of a run over junk lines
    does nothing, and blocks next to each other pair the same lines merged or not."""
    at: dict[str, list[int]] = {}
    for j, word in enumerate(b):
        at.setdefault(word, []).append(j)
    paired: dict[int, int] = {}
    spans = [(0, len(a), 0, len(b))]
    while spans:
        alo, ahi, blo, bhi = spans.pop()
        i, j, k = _longest(a, at, alo, ahi, blo, bhi)
        if k:
            for n in range(k):
                paired[i + n] = j + n
            if alo < i and blo < j:
                spans.append((alo, i, blo, j))
            if i + k < ahi and j + k < bhi:
                spans.append((i + k, ahi, j + k, bhi))
    return paired


def _longest(
    a: list[str], at: dict[str, list[int]], alo: int, ahi: int, blo: int, bhi: int
) -> tuple[int, int, int]:
    """difflib's find_longest_match without junk: (i, j, k), the longest a[i:i+k] ==
    b[j:j+k] in a[alo:ahi] and b[blo:bhi], the first such in a, then in b."""
    besti, bestj, bestsize = alo, blo, 0
    ending: dict[int, int] = {}  # j -> the length of the run of equal lines ending at j
    for i in range(alo, ahi):
        runs = {}
        for j in at.get(a[i], ()):
            if j < blo:
                continue
            if j >= bhi:
                break
            k = runs[j] = ending.get(j - 1, 0) + 1
            if k > bestsize:
                besti, bestj, bestsize = i - k + 1, j - k + 1, k
        ending = runs
    return besti, bestj, bestsize


def _moved(words_a: list[str], words_b: list[str], paired_a: dict[int, int]) -> dict[int, int]:
    """Lines of a block the edit moved past others, which the matching in order leaves
    unpaired on both sides: paired when their text is the text of one counted line of the
    file in each run. cJSON's `ensure` split into a fast path below a new `ensure_slow`
    showed its 5 fast-path lines as gone and new again (16 changed lines, 6 of them
    changed counts)."""
    once_a, once_b = _once(words_a), _once(words_b)
    paired_b = set(paired_a.values())
    left_b = {words_b[j]: j for j in range(len(words_b)) if j not in paired_b}
    return {
        i: left_b[word]
        for i, word in enumerate(words_a)
        if i not in paired_a and word in once_a and word in once_b and word in left_b
    }


def _once(words: list[str]) -> set[str]:
    """The words found once in `words` (collections.Counter's import: docs/counts.md)."""
    seen: dict[str, int] = {}
    for word in words:
        seen[word] = seen.get(word, 0) + 1
    return {word for word, n in seen.items() if n == 1}


def changes(a: dict, b: dict, total_a: int) -> list[tuple]:
    """(key, {"a", "b", "delta", "delta_share"}) for every key whose count changed."""
    rows = []
    for key in set(a) | set(b):
        before, after = a.get(key, 0), b.get(key, 0)
        if before != after:
            delta = after - before
            share = delta / total_a if total_a else 0.0
            rows.append((key, {"a": before, "b": after, "delta": delta, "delta_share": share}))
    rows.sort(key=lambda item: (-abs(item[1]["delta"]), str(item[0])))
    return rows

"""Planted: eval() of each expression's text for every row (the text compiled again on
every call, as a formula or template engine without a cache does). Fix (FIXED=1): each
expression compiled once, its code object evaluated per row."""

import os

FIXED = os.environ.get("FIXED") == "1"
EXPRS = [f"(price * qty + {i}) * (1 - discount) if qty > {i % 7} else price" for i in range(40)]
CODES = {text: compile(text, "<formula>", "eval") for text in EXPRS} if FIXED else {}


def render(rows):
    out = []
    for row in rows:
        for text in EXPRS:
            out.append(eval(CODES[text] if FIXED else text, {}, row))
    return out


rows = [{"price": i * 1.5, "qty": i % 11, "discount": 0.1} for i in range(300)]
print(round(sum(sum(render(rows)) for _ in range(8)), 1))

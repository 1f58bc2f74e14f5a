// Function names as people read them: a port of the CLI's shortener
// (src/perfsleuth/symbols/names.py `elide_templates`), so the UI and the CLI show
// the same `std::map<…>::find(…)`. tests/e2e checks both on tests/e2e/names.json.

import { h } from "./dom";

const CLONE = / \(\.[\w.]+\)$| \[clone [^\]]*\]$/;
const OPERATOR = /^operator\s*(\(\)|\[\]|<=>|<<=?|>>=?|->\*?|&&|\|\||\+\+|--|new(\[\])?|delete(\[\])?|[-+*/%^&|~!=<>,]=?)?/;
const ANONYMOUS = "(anonymous namespace)";

/** `std::map<int, X>::find(int const&) (.cold)` → `std::map<…>::find(…)`. */
export function shortName(full: string): string {
  const name = full.replace(CLONE, "");
  let out = "";
  let depth = 0;
  let afterToken = false; // `operator<< <T>` written `operator<<<T>`: template arguments
  for (let i = 0; i < name.length; ) {
    const token = tokenAt(name, i);
    if (token) {
      if (depth === 0) out += token;
      i += token.length;
      afterToken = true;
      continue;
    }
    const ch = name[i++];
    const opens = ch === "<" && (depth > 0 || afterToken || opensTemplate(name, i - 1));
    afterToken = false;
    if (ch === "(" || opens) {
      if (depth === 0) out += `${ch}…`;
      depth++;
    } else if ((ch === ">" || ch === ")") && depth) {
      depth--;
      if (depth === 0) out += ch;
    } else if (depth === 0) out += ch;
  }
  return out;
}

/**
 * Whether the `<` at i, outside any brackets, opens template arguments: it does unless it
 * starts the name or a word (Python's `<module>`, `<lambda>`, `f.<locals>.g`, names of their own).
 */
function opensTemplate(name: string, i: number): boolean {
  return i > 0 && !/[\s.]/.test(name[i - 1]);
}

/** An operator's name or `(anonymous namespace)` starting at i, else "". */
function tokenAt(name: string, i: number): string {
  if (name.startsWith(ANONYMOUS, i)) return ANONYMOUS;
  if (name.startsWith("operator", i) && !(i && /\w/.test(name[i - 1]))) return OPERATOR.exec(name.slice(i))?.[0] ?? "";
  return "";
}

/** A function's short name, the full one in its tooltip. */
export function nameLink(full: string, link?: string): HTMLElement {
  return link ? h("a", { href: link, class: "fn", title: full }, shortName(full)) : h("span", { class: "fn", title: full }, shortName(full));
}

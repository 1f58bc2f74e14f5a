// Every element is built with createElement and textContent: names from the
// profile (C++ templates full of <, > and &) are never parsed as HTML.

export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | EventListener | undefined | null>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === "function") el.addEventListener(key.replace(/^on/, ""), value);
    // Through the CSSOM: the server's Content-Security-Policy blocks style attributes.
    else if (key === "style") el.style.cssText = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function svg(tag: string, attrs: Record<string, string | number>, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  append(el, children);
  return el;
}

export function pct(fraction: number | null | undefined, digits = 2): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return "–";
  return `${(100 * fraction).toFixed(digits)}%`;
}

export function signedPct(fraction: number): string {
  return `${fraction >= 0 ? "+" : ""}${(100 * fraction).toFixed(2)}%`;
}

export function bar(fraction: number, cls = "bar"): HTMLElement {
  const width = Math.max(0, Math.min(1, fraction)) * 100;
  return h("span", { class: cls, style: `width:${width.toFixed(1)}%` });
}

export function shortDso(dso: string): string {
  return dso.split("/").pop() ?? dso;
}

export function location(file: string, line: number): string {
  if (!file) return "";
  return line > 0 ? `${file}:${line}` : file;
}

export function message(text: string, cls = "muted"): HTMLElement {
  return h("p", { class: cls }, text);
}

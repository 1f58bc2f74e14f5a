import { getJSON } from "../api";
import { h, message, pct, svg } from "../dom";
import { nameLink, shortName } from "../names";
import { href, type Route } from "../router";
import { type LayerNode, type Layers, layers } from "../callgraph";
import type { FlameData } from "../flame";
import { sandwichOf } from "../sandwich";
import type { CallGraphDoc, Neighbour, TopDoc } from "../types";
import { functionLinks } from "./common";
import { loadFlame } from "./flamepage";

const SHOWN = 12;
const BOX_W = 230;
const BOX_H = 34;
const GAP = 10;

function label(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function box(x: number, y: number, name: string, detail: string, link: string | null, cls: string): SVGElement {
  const group = svg(
    "g",
    { class: `cg-node ${cls}`, transform: `translate(${x},${y})` },
    svg("rect", { width: BOX_W, height: BOX_H, rx: 4 }),
    svg("text", { x: 8, y: 14 }, label(shortName(name), 34)),
    svg("text", { x: 8, y: 28, class: "cg-detail" }, detail),
    svg("title", {}, name),
  );
  if (!link) return group;
  const anchor = svg("a", { href: link });
  anchor.append(group);
  return anchor;
}

const COLUMN_GAP = 70;
const DEPTHS = [1, 2, 3, 4];
const MIN_SHARE = 0.005; // functions under 0.5% of the run are left out of the graph

/** One column of boxes, centred on the graph's height; returns their tops. */
function boxColumn(runId: string, nodes: LayerNode[], x: number, height: number, runTotal: number, depth: number): { boxes: SVGElement[]; ys: number[] } {
  const span = nodes.length * (BOX_H + GAP) - GAP;
  const ys = nodes.map((_, k) => (height - span) / 2 + k * (BOX_H + GAP));
  const boxes = nodes.map((n, k) => box(x, ys[k], n.name, `${pct(n.weight / runTotal)} of run`, href(`/run/${runId}/callgraph`, { function: n.name, depth }), ""));
  return { boxes, ys };
}

/** The columns up to the first empty one (no function of that level is shown). */
function nonEmpty(columns: LayerNode[][]): LayerNode[][] {
  const empty = columns.findIndex((c) => c.length === 0);
  return empty < 0 ? columns : columns.slice(0, empty);
}

/** Callers to the left (the farthest leftmost), the function in the middle, callees to the right. */
function drawGraph(runId: string, doc: CallGraphDoc, callers: Layers, callees: Layers, runTotal: number, depth: number): SVGElement {
  const left = nonEmpty(callers.columns.slice(1)).reverse();
  const right = nonEmpty(callees.columns.slice(1));
  const rows = Math.max(1, ...[...left, ...right].map((c) => c.length));
  const height = rows * (BOX_H + GAP) + 20;
  const x = (column: number) => column * (BOX_W + COLUMN_GAP); // column 0: the farthest caller
  const centre = left.length;
  const placed = [...left, [], ...right].map((nodes, c) => boxColumn(runId, nodes, x(c), height, runTotal, depth));
  const midY = (height - BOX_H) / 2;
  placed[centre] = { boxes: [box(x(centre), midY, doc.function, `self ${pct(doc.self)} · total ${pct(doc.total)}`, null, "centre")], ys: [midY] };
  const edge = (c1: number, y1: number, c2: number, y2: number, weight: number) => {
    const [x1, x2] = [x(c1) + BOX_W, x(c2)];
    return svg("path", { d: `M${x1},${y1} C${(x1 + x2) / 2},${y1} ${(x1 + x2) / 2},${y2} ${x2},${y2}`, class: "cg-edge", "stroke-width": 1 + 10 * (weight / runTotal) });
  };
  const mid = (c: number, k: number) => (c === centre ? midY : placed[c].ys[k]) + BOX_H / 2;
  const edges = [
    // a caller edge runs from the caller (farther left) to the function it called
    ...callers.edges.filter((e) => e.level <= left.length).map((e) => edge(centre - e.level, mid(centre - e.level, e.to), centre - e.level + 1, mid(centre - e.level + 1, e.from), e.weight)),
    ...callees.edges.filter((e) => e.level <= right.length).map((e) => edge(centre + e.level - 1, mid(centre + e.level - 1, e.from), centre + e.level, mid(centre + e.level, e.to), e.weight)),
  ];
  const width = x(placed.length - 1) + BOX_W;
  return svg("svg", { class: "callgraph", viewBox: `0 0 ${width} ${height}`, width, height }, ...edges, ...placed.flatMap((p) => p.boxes));
}

function neighbourTable(runId: string, title: string, rows: Neighbour[]): HTMLElement {
  return h(
    "div",
    { class: "half" },
    h("h2", null, title),
    h(
      "table",
      { class: "data" },
      h("thead", null, h("tr", null, h("th", { class: "num" }, "of calls"), h("th", { class: "num" }, "of run"), h("th", null, "function"))),
      h(
        "tbody",
        null,
        rows.map((r) =>
          h(
            "tr",
            null,
            h("td", { class: "num" }, pct(r.share)),
            h("td", { class: "num" }, pct(r.total)),
            h("td", null, nameLink(r.function, r.function.startsWith("[") ? undefined : href(`/run/${runId}/callgraph`, { function: r.function }))),
          ),
        ),
      ),
    ),
  );
}

export async function renderCallGraph(app: HTMLElement, runId: string, route: Route): Promise<void> {
  const fn = route.params.get("function");
  if (!fn) {
    const top = await getJSON<TopDoc>(`/api/runs/${runId}/top`, { by: "function" });
    app.append(
      h("h1", null, "Call graph"),
      message("Pick a function:"),
      h("ul", null, top.rows.slice(0, 30).map((r) => h("li", null, nameLink(r.function, href(`/run/${runId}/callgraph`, { function: r.function })), ` ${pct(r.total)} total`))),
    );
    return;
  }
  const depth = DEPTHS.includes(Number(route.params.get("depth"))) ? Number(route.params.get("depth")) : 2;
  const [doc, data] = await Promise.all([getJSON<CallGraphDoc>(`/api/runs/${runId}/callgraph`, { function: fn }), loadFlame(`/api/runs/${runId}/flame`, {})]);
  const runTotal = data.columns.total[0] || 1;
  const view = sandwichOf(data, doc.function);
  const levels = (tree: FlameData) => layers(tree, depth, MIN_SHARE * runTotal, SHOWN);
  app.append(
    h("h1", null, "Call graph", h("span", { class: "subtitle fn" }, doc.function)),
    h("p", null, `self ${pct(doc.self)} · total ${pct(doc.total)} of run ${runId} · `, functionLinks(runId, doc.function)),
    h(
      "p",
      { class: "toolbar" },
      "levels ",
      DEPTHS.map((d) => h("a", { href: href(`/run/${runId}/callgraph`, { function: doc.function, depth: d }), class: d === depth ? "chip active" : "chip" }, String(d))),
      h("span", { class: "muted" }, ` functions under ${pct(MIN_SHARE, 1)} of the run left out; click one to centre on it`),
    ),
    h("div", { class: "graph-holder" }, drawGraph(runId, doc, levels(view.callers), levels(view.callees), runTotal, depth)),
    h("div", { class: "columns" }, neighbourTable(runId, "Callers", doc.callers), neighbourTable(runId, "Callees", doc.callees)),
  );
}

import { getJSON } from "../api";
import { h, message, pct, svg } from "../dom";
import { nameLink, shortName } from "../names";
import { href, type Route } from "../router";
import type { CallGraphDoc, Neighbour, TopDoc } from "../types";
import { functionLinks } from "./common";

const SHOWN = 12;
const BOX_W = 300;
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
    svg("text", { x: 8, y: 14 }, label(shortName(name), 44)),
    svg("text", { x: 8, y: 28, class: "cg-detail" }, detail),
    svg("title", {}, name),
  );
  if (!link) return group;
  const anchor = svg("a", { href: link });
  anchor.append(group);
  return anchor;
}

function column(runId: string, rows: Neighbour[], x: number, height: number): { nodes: SVGElement[]; ys: number[] } {
  const shown = rows.slice(0, SHOWN);
  const span = shown.length * (BOX_H + GAP) - GAP;
  const top = (height - span) / 2;
  const ys = shown.map((_, k) => top + k * (BOX_H + GAP));
  const nodes = shown.map((r, k) => {
    const pseudo = r.function.startsWith("[");
    const link = pseudo ? null : href(`/run/${runId}/callgraph`, { function: r.function });
    return box(x, ys[k], r.function, `${pct(r.share)} of calls · ${pct(r.total)} of run`, link, pseudo ? "pseudo" : "");
  });
  return { nodes, ys };
}

function drawGraph(runId: string, doc: CallGraphDoc): SVGElement {
  const rows = Math.max(Math.min(doc.callers.length, SHOWN), Math.min(doc.callees.length, SHOWN), 1);
  const height = rows * (BOX_H + GAP) + 20;
  const width = 3 * BOX_W + 2 * 140;
  const midX = BOX_W + 140;
  const midY = (height - BOX_H) / 2;
  const callers = column(runId, doc.callers, 0, height);
  const callees = column(runId, doc.callees, midX + BOX_W + 140, height);
  const edges: SVGElement[] = [];
  const edge = (x1: number, y1: number, x2: number, y2: number, share: number) =>
    svg("path", {
      d: `M${x1},${y1} C${(x1 + x2) / 2},${y1} ${(x1 + x2) / 2},${y2} ${x2},${y2}`,
      class: "cg-edge",
      "stroke-width": 1 + 10 * share,
    });
  doc.callers.slice(0, SHOWN).forEach((r, k) => edges.push(edge(BOX_W, callers.ys[k] + BOX_H / 2, midX, midY + BOX_H / 2, r.share)));
  doc.callees.slice(0, SHOWN).forEach((r, k) => edges.push(edge(midX + BOX_W, midY + BOX_H / 2, midX + BOX_W + 140, callees.ys[k] + BOX_H / 2, r.share)));
  const centre = box(midX, midY, doc.function, `self ${pct(doc.self)} · total ${pct(doc.total)}`, null, "centre");
  return svg("svg", { class: "callgraph", viewBox: `0 0 ${width} ${height}`, width, height }, ...edges, ...callers.nodes, centre, ...callees.nodes);
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
  const doc = await getJSON<CallGraphDoc>(`/api/runs/${runId}/callgraph`, { function: fn });
  app.append(
    h("h1", null, "Call graph", h("span", { class: "subtitle fn" }, doc.function)),
    h("p", null, `self ${pct(doc.self)} · total ${pct(doc.total)} of run ${runId} · `, functionLinks(runId, doc.function)),
    h("div", { class: "graph-holder" }, drawGraph(runId, doc)),
    h("div", { class: "columns" }, neighbourTable(runId, "Callers", doc.callers), neighbourTable(runId, "Callees", doc.callees)),
  );
}

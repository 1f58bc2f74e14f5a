import { getJSON } from "../api";
import { h, location as where, message, pct, signedPct } from "../dom";
import { diffChange, FlameGraph } from "../flame";
import { nameLink } from "../names";
import { href, replaceParams, type Route } from "../router";
import type { DiffDoc, DiffRow, RunSummary } from "../types";
import { colourLegend, frameTitle, loadFlame } from "./flamepage";

function pickRuns(app: HTMLElement, runs: RunSummary[], a: string, b: string): void {
  const select = (label: string, chosen: string) =>
    h("select", { "aria-label": label }, runs.map((r) => h("option", { value: r.id, selected: r.id === chosen }, `run ${r.id}: ${r.command}`)));
  const before = select("before", a || runs[1]?.id || "");
  const after = select("after", b || runs[0]?.id || "");
  const go = h("button", { type: "button", class: "button" }, "Compare");
  go.addEventListener("click", () => {
    window.location.hash = href("/compare", { a: before.value, b: after.value });
  });
  app.append(h("h1", null, "Compare two runs"), h("p", { class: "toolbar" }, "before ", before, " after ", after, " ", go));
}

function changesTable(doc: DiffDoc, runB: string): HTMLElement {
  const link = (r: DiffRow) => (r.function && r.self_b + r.total_b > 0 ? href(`/run/${runB}/callgraph`, { function: r.function }) : undefined);
  return h(
    "table",
    { class: "data changes" },
    h("thead", null, h("tr", null, ["self before", "self after", "Δ self", "total before", "total after", "Δ total", doc.by].map((t) => h("th", null, t)))),
    h(
      "tbody",
      null,
      doc.rows.slice(0, 50).map((r) =>
        h(
          "tr",
          { class: r.delta_self > 0 ? "worse" : r.delta_self < 0 ? "better" : undefined },
          h("td", { class: "num" }, pct(r.self_a)),
          h("td", { class: "num" }, pct(r.self_b)),
          h("td", { class: "num delta" }, signedPct(r.delta_self)),
          h("td", { class: "num" }, pct(r.total_a)),
          h("td", { class: "num" }, pct(r.total_b)),
          h("td", { class: "num delta" }, signedPct(r.delta_total)),
          h("td", null, r.function ? nameLink(r.function, link(r)) : r.file || r.dso, doc.by === "line" ? ` ${where(r.file, r.line)}` : null),
        ),
      ),
    ),
  );
}

export async function renderCompare(app: HTMLElement, route: Route): Promise<void> {
  const params = route.params;
  const a = params.get("a") ?? "";
  const b = params.get("b") ?? "";
  if (!a || !b) {
    const runs = await getJSON<RunSummary[]>("/api/runs");
    if (runs.length < 2) {
      app.append(h("h1", null, "Compare two runs"), message("The store needs two runs to compare."));
      return;
    }
    pickRuns(app, runs, a, b);
    return;
  }
  const [doc, data] = await Promise.all([
    getJSON<DiffDoc>("/api/diff", { a, b, by: "function" }),
    loadFlame("/api/diff/flame", { a, b }),
  ]);
  const byBefore = params.get("width") === "before";
  const width = byBefore ? data.columns.a : data.columns.b;
  const ratio = doc.total_a ? doc.total_b / doc.total_a : 0;
  const graph = new FlameGraph(data, {
    width,
    colouring: "diff",
    icicle: false,
    heaviestFirst: false,
    onZoom: (node) => graph.zoomTo(node === graph.zoom ? data.parent[node] : node),
    tooltip: (node) => {
      const change = diffChange(data, node);
      return [
        frameTitle(data, node),
        `before ${pct(change.before)} · after ${pct(change.after)} of each run`,
        `change ${signedPct(change.after - change.before)}`,
      ];
    },
  });
  const widthToggle = h("input", { type: "checkbox", checked: byBefore });
  widthToggle.addEventListener("change", () => {
    if (widthToggle.checked) params.set("width", "before");
    else params.delete("width");
    replaceParams(params);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  });
  app.append(
    h("h1", null, `Run ${a} → run ${b}`, h("span", { class: "subtitle" }, `total ${doc.total_a.toLocaleString()} → ${doc.total_b.toLocaleString()} ${doc.unit} (${ratio.toFixed(3)}×)`)),
    h(
      "p",
      { class: "toolbar" },
      colourLegend("diff"),
      h("label", { class: "toggle" }, widthToggle, "frame widths from the run before"),
    ),
    h("div", { class: "flame-holder" }, graph.canvas, graph.tip),
    h("h2", null, "Largest changes (share of each run's total)"),
    changesTable(doc, b),
  );
  graph.draw();
}

import { embedded, getJSON } from "../api";
import { append, h, location as where, message, pct, signedPct } from "../dom";
import { nameLink } from "../names";
import { href, replaceParams, type Route } from "../router";
import { incomparable, newestPair } from "../comparable";
import type { DiffDoc, DiffRow, RunSummary } from "../types";
import { colourLegend } from "./common";
import { diffFlame } from "./diffflame";
import { loadFlame } from "./flamepage";

function runLabel(r: RunSummary): string {
  return `run ${r.id}: ${r.command || "(imported)"} (${r.mode}, ${r.unit})`;
}

/** The "before" choices for AFTER: the comparable runs, and the others disabled with why. */
function beforeOptions(runs: RunSummary[], after: RunSummary, chosen: string): HTMLOptionElement[] {
  const others = runs.filter((r) => r.id !== after.id);
  const first = others.find((r) => !incomparable(r, after));
  const selected = others.some((r) => r.id === chosen && !incomparable(r, after)) ? chosen : first?.id;
  return others.map((r) => {
    const why = incomparable(r, after);
    return h("option", { value: r.id, selected: r.id === selected, disabled: Boolean(why) }, why ? `${runLabel(r)}: not comparable, it ${why}` : runLabel(r));
  });
}

function pickRuns(app: HTMLElement, runs: RunSummary[], a: string, b: string): void {
  const pair = newestPair(runs);
  const after = h("select", { "aria-label": "after" }, runs.map((r) => h("option", { value: r.id, selected: r.id === (b || pair?.[1].id || runs[0].id) }, runLabel(r))));
  const before = h("select", { "aria-label": "before" });
  const note = h("p", { class: "warning compare-note" });
  const go = h("button", { type: "button", class: "button" }, "Compare");
  const refresh = (chosen: string) => {
    const run = runs.find((r) => r.id === after.value)!;
    before.replaceChildren(...beforeOptions(runs, run, chosen));
    const none = !runs.some((r) => r.id !== run.id && !incomparable(r, run));
    note.textContent = none ? `No other run is comparable with run ${run.id}: a comparison needs the same program, mode and unit.` : "";
    go.disabled = none;
  };
  after.addEventListener("change", () => refresh(before.value));
  go.addEventListener("click", () => {
    window.location.hash = href("/compare", { a: before.value, b: after.value });
  });
  refresh(a || pair?.[0].id || "");
  app.append(
    h("h1", null, "Compare two runs"),
    h("p", { class: "toolbar" }, "before ", before, " after ", after, " ", go),
    note,
    h("p", { class: "muted" }, "Only runs of the same program, recording mode and unit can be compared; the others are listed, disabled, with the reason."),
  );
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
      const why = embedded ? "This report holds one run: make it with `perfsleuth report RUN --compare OTHER` to compare two." : "The store needs two runs to compare.";
      app.append(h("h1", null, "Compare two runs"), message(why));
      return;
    }
    pickRuns(app, runs, a, b);
    return;
  }
  const [doc, data, runs] = await Promise.all([
    getJSON<DiffDoc>("/api/diff", { a, b, by: "function" }),
    loadFlame("/api/diff/flame", { a, b }),
    getJSON<RunSummary[]>("/api/runs"),
  ]);
  const runA = runs.find((r) => r.id === doc.a);
  const runB = runs.find((r) => r.id === doc.b);
  const why = runA && runB ? incomparable(runA, runB) : "";
  const byBefore = params.get("width") === "before";
  const ratio = doc.total_a ? doc.total_b / doc.total_a : 0;
  const graph = diffFlame(data, byBefore, ["before", "after", "each run"]);
  const widthToggle = h("input", { type: "checkbox", checked: byBefore });
  widthToggle.addEventListener("change", () => {
    if (widthToggle.checked) params.set("width", "before");
    else params.delete("width");
    replaceParams(params);
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  });
  append(app, [
    h("h1", null, `Run ${a} → run ${b}`, why ? null : h("span", { class: "subtitle" }, `total ${doc.total_a.toLocaleString()} → ${doc.total_b.toLocaleString()} ${doc.unit} (${ratio.toFixed(3)}×)`)),
    why ? h("p", { class: "warning compare-note" }, `Run ${runA!.id} and run ${runB!.id} are not comparable: run ${runA!.id} ${why}. The shares below compare different things.`) : null,
    h(
      "p",
      { class: "toolbar" },
      colourLegend("diff"),
      h("label", { class: "toggle" }, widthToggle, "frame widths from the run before"),
    ),
    h("div", { class: "flame-holder" }, graph.canvas, graph.tip),
    h("h2", null, "Largest changes (share of each run's total)"),
    changesTable(doc, b),
  ]);
  graph.drawFitted(false);
}

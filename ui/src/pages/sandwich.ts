// The sandwich view (`#/run/N/flame?sandwich=NAME`): one function's callers drawn above
// it and its callees below, each a flame graph of the samples through the function.

import { h, pct } from "../dom";
import { type FlameData, FlameGraph } from "../flame";
import { href } from "../router";
import { sandwichOf } from "../sandwich";
import { colourLegend, frameTitle } from "./common";

declare global {
  interface Window {
    perfsleuthSandwich?: { callers: FlameGraph; callees: FlameGraph; source: FlameData }; // source: for tests/e2e's check of the trees
  }
}

function treeGraph(tree: FlameData, icicle: boolean, runTotal: number): FlameGraph {
  const total = tree.columns.total;
  const graph: FlameGraph = new FlameGraph(tree, {
    width: total,
    colouring: "name",
    icicle,
    heaviestFirst: true,
    tooltip: (node) => [frameTitle(tree, node), `${pct(total[node] / runTotal)} of the run`],
    onZoom: (node) => graph.zoomTo(node === graph.zoom ? tree.parent[node] : node),
  });
  return graph;
}

export function renderSandwich(app: HTMLElement, runId: string, data: FlameData, fn: string, runTotal: number, back: URLSearchParams): void {
  const title = h("h1", null, "Sandwich", h("span", { class: "subtitle fn" }, fn));
  back.delete("sandwich");
  const backLink = h("a", { href: href(`/run/${runId}/flame`, Object.fromEntries(back)) }, "back to the flame graph");
  const view = sandwichOf(data, fn);
  if (!view.calls) {
    app.append(title, h("p", { class: "error" }, `No frame of this flame graph is named ${fn}. `, backLink));
    return;
  }
  const callers = treeGraph(view.callers, false, runTotal);
  const callees = treeGraph(view.callees, true, runTotal);
  window.perfsleuthSandwich = { callers, callees, source: data };
  app.append(
    title,
    h("p", { class: "toolbar sandwich-info" }, `total ${pct(view.callees.columns.total[0] / runTotal)} of the run · self ${pct(view.self / runTotal)} · `, backLink, colourLegend("name")),
    h("h2", null, "Callers", h("span", { class: "subtitle" }, "the function at the bottom, who called it above")),
    h("div", { class: "flame-holder" }, callers.canvas, callers.tip),
    h("h2", null, "Callees", h("span", { class: "subtitle" }, "the function on top, what it called below")),
    h("div", { class: "flame-holder" }, callees.canvas, callees.tip),
  );
  // One width for both (their holders are alike): reading it again after the first draw resized
  // its canvas would lay the page out a second time.
  const width = callers.canvas.parentElement!.clientWidth || undefined;
  callers.draw(width);
  callees.draw(width);
}

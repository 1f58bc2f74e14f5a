import { getBinary, getJSON, requestKey, type Params } from "../api";
import { h, pct } from "../dom";
import { decodeFlame, FlameGraph, hasPython, isProcess, matcher, selfWeight, type FlameData } from "../flame";
import { applyFilters, type FlameFilters } from "../flamefilter";
import { indexWhenIdle } from "../nameindex";
import { shortName } from "../names";
import { replaceParams, type Route } from "../router";
import type { RunDetail } from "../types";
import { colourLegend, frameTitle, functionLinks, stateThreadSelects } from "./common";
import { renderSandwich } from "./sandwich";
import { chartChoice, renderTimeOrder } from "./timeline";

const decoded = new Map<string, Promise<FlameData>>();
let shownGraph: FlameGraph | null = null; // the last graph this page drew; a render replaces it (render() took it off the page)
const CRUMBS_SHOWN = 14;
const KEPT_FLAMES = 4; // a million-frame graph takes ~30 MB

function remember(key: string, pending: Promise<FlameData>): void {
  decoded.set(key, pending);
  if (decoded.size > KEPT_FLAMES) decoded.delete(decoded.keys().next().value!);
}

export function loadFlame(path: string, params: Params): Promise<FlameData> {
  const key = requestKey(path, params);
  let pending = decoded.get(key);
  if (!pending) {
    pending = getBinary(path, params).then((buffer) => {
      performance.mark("flame-fetched");
      const data = decodeFlame(buffer);
      performance.measure("flame-decode", "flame-fetched");
      return data;
    });
    pending.catch(() => decoded.delete(key));
    remember(key, pending);
  }
  return pending;
}

declare global {
  interface Window {
    perfsleuthFlame?: { graph: FlameGraph; timings: Record<string, number[]> };
  }
}

const DATA_FILTERS: [keyof FlameFilters, string][] = [
  ["focus", "keep only the stacks through a frame matching this regular expression"],
  ["ignore", "drop the stacks through a frame matching this regular expression"],
  ["hide", "take the frames matching this regular expression out of every stack"],
];

/** The URL's focus / ignore / hide expressions, compiled, and an input for each (a bad one says why). */
function dataFilters(params: URLSearchParams): { filters: FlameFilters; inputs: HTMLElement[] } {
  const filters: FlameFilters = {};
  const inputs = DATA_FILTERS.map(([key, title]) => {
    const query = params.get(key) ?? "";
    const { test, error } = matcher(query);
    if (query && !error) filters[key] = test;
    const input = h("input", { type: "search", class: "filter narrow", placeholder: `${key} (regex)`, title, value: query, "aria-label": key, "aria-invalid": error ? "true" : undefined });
    input.addEventListener("change", () => {
      params.delete("zoom");
      if (input.value) params.set(key, input.value);
      else params.delete(key);
      replaceParams(params, true);
      rerender();
    });
    return h("label", { class: "data-filter" }, `${key} `, input, error ? h("span", { class: "error" }, ` ${key}: ${error}`) : null);
  });
  return { filters, inputs };
}

/** `/` anywhere on the page but in a field puts the cursor in the search box. */
function focusOnSlash(search: HTMLInputElement): void {
  const onKey = (e: KeyboardEvent) => {
    if (!search.isConnected) return window.removeEventListener("keydown", onKey);
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement || e.target instanceof HTMLTextAreaElement;
    if (e.key !== "/" || typing) return;
    e.preventDefault();
    search.focus();
  };
  window.addEventListener("keydown", onKey);
}

function rerender(): void {
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

function timed(name: string, action: () => void): void {
  const start = performance.now();
  action();
  const timings = window.perfsleuthFlame?.timings;
  if (timings) (timings[name] ??= []).push(performance.now() - start);
}

/** The last shown graph, if a render into `app` may take its layout: a stale render (app off the page, a newer one showing) must not retire the graph on screen. */
function shownOffPage(app: HTMLElement): FlameGraph | undefined {
  return app.isConnected && shownGraph && !shownGraph.canvas.isConnected ? shownGraph : undefined;
}

export async function renderFlame(app: HTMLElement, runId: string, route: Route): Promise<void> {
  const params = route.params;
  if (["time", "lanes"].includes(params.get("chart") ?? "")) return renderTimeOrder(app, runId, await getJSON<RunDetail>(`/api/runs/${runId}`), params, loadFlame);
  const filters = { state: params.getAll("state"), thread: params.getAll("thread") };
  const [run, fetched] = await Promise.all([
    getJSON<RunDetail>(`/api/runs/${runId}`),
    loadFlame(`/api/runs/${runId}/flame`, filters),
  ]);
  const narrowing = dataFilters(params);
  const narrowed = Object.keys(narrowing.filters).length > 0;
  let data = fetched;
  if (narrowed) timed("filter", () => (data = applyFilters(fetched, narrowing.filters)));
  indexWhenIdle(fetched); // for the next focus or ignore, once this view is painted
  const runTotal = fetched.columns.total[0] || 1; // shares stay shares of the whole run
  const sandwiched = params.get("sandwich");
  if (sandwiched) return renderSandwich(app, runId, data, sandwiched, runTotal, new URLSearchParams(params));
  const unit = String(data.meta.unit ?? run.unit);
  const total = data.columns.total;
  const hasOff = "off" in data.columns;
  const colouring = hasOff && params.get("colour") !== "name" ? "offcpu" : "name";

  const crumbs = h("nav", { class: "breadcrumb", "aria-label": "zoom path" });
  const details = h("div", { class: "frame-details", "aria-live": "polite" });
  const searchInfo = h("span", { class: "search-info" });
  const describe = (node: number): string[] => {
    const lines = [
      frameTitle(data, node),
      `total ${pct(total[node] / runTotal)}  (${total[node].toLocaleString()} ${unit})`,
      `self ${pct(selfWeight(data, total, node) / runTotal)}`,
    ];
    if (hasOff && total[node]) lines.push(`off-CPU ${pct(data.columns.off[node] / total[node])} of this frame`);
    if (graph.zoom && node !== graph.zoom) lines.push(`${pct(total[node] / total[graph.zoom])} of the zoomed frame`);
    return lines;
  };
  const graph = new FlameGraph(data, {
    width: total,
    colouring,
    icicle: params.get("view") === "icicle",
    heaviestFirst: params.get("order") === "heavy",
    tooltip: describe,
    onZoom: (node) => timed("zoom", () => zoom(node, true)),
    onSelect: (node) => showDetails(node),
    replacing: shownOffPage(app),
  });
  if (app.isConnected) {
    shownGraph = graph;
    window.perfsleuthFlame = window.perfsleuthFlame ?? { graph, timings: {} };
    window.perfsleuthFlame.graph = graph;
  }

  const showDetails = (node: number) => {
    const fn = data.names[data.name[node]];
    details.replaceChildren(
      h(
        "div",
        null,
        h("strong", { class: "fn" }, frameTitle(data, node)),
        " ",
        describe(node).slice(1).join(" · "),
        node === 0 || isProcess(data, node) ? null : h("div", null, functionLinks(runId, fn)),
      ),
    );
  };
  const zoom = (node: number, push: boolean) => {
    graph.zoomTo(node);
    if (node) params.set("zoom", String(node));
    else params.delete("zoom");
    replaceParams(params, push);
    showZoomPath();
  };
  const showZoomPath = () => {
    const path = graph.path(graph.zoom);
    const crumb = (n: number) =>
      h("button", { type: "button", class: "crumb", title: frameTitle(data, n), onclick: () => timed("zoom", () => zoom(n, true)) }, n === 0 ? "all" : isProcess(data, n) ? data.names[data.name[n]] : shortName(data.names[data.name[n]]));
    // Deep recursion makes paths of thousands of frames: show both ends.
    const shown =
      path.length > CRUMBS_SHOWN
        ? [...path.slice(0, 3).map(crumb), h("span", { class: "crumb-gap" }, `… ${path.length - CRUMBS_SHOWN + 2} more …`), ...path.slice(-(CRUMBS_SHOWN - 4)).map(crumb)]
        : path.map(crumb);
    crumbs.replaceChildren(...shown);
    showDetails(graph.zoom);
  };
  const search = h("input", { type: "search", placeholder: "search frames (regex)", value: params.get("q") ?? "", class: "filter", "aria-label": "search" });
  const runSearch = (redraw = true) => {
    const query = search.value;
    const found = graph.search(query, redraw);
    const frames = found.matches === 1 ? "frame matches" : "frames match";
    const share = (found.share * total[0]) / runTotal;
    searchInfo.textContent = found.error ?? (query ? `${found.matches.toLocaleString()} ${frames} · ${pct(share)} of the run` : "");
    searchInfo.classList.toggle("error", Boolean(found.error));
    search.setAttribute("aria-invalid", String(Boolean(found.error)));
    if (query) params.set("q", query);
    else params.delete("q");
    replaceParams(params);
  };
  search.addEventListener("input", () => timed("search", () => runSearch()));
  // Enter / Shift+Enter in the search box, or the arrows beside it: the next / previous match.
  const step = (forward: boolean) => timed("zoom", () => graph.nextMatch(forward));
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter") step(!e.shiftKey);
  });
  const stepButton = (forward: boolean) =>
    h("button", { type: "button", class: "crumb match-step", title: forward ? "next match (Enter)" : "previous match (Shift+Enter)", "aria-label": forward ? "next match" : "previous match", onclick: () => step(forward) }, forward ? "▶" : "◀");
  focusOnSlash(search);

  const toggle = (label: string, key: string, on: string, checked: boolean, apply: (v: boolean) => void) => {
    const box = h("input", { type: "checkbox", checked });
    box.addEventListener("change", () => {
      if (box.checked) params.set(key, on);
      else params.delete(key);
      replaceParams(params);
      apply(box.checked);
    });
    return h("label", { class: "toggle" }, box, label);
  };

  const icicle = toggle("icicle", "view", "icicle", params.get("view") === "icicle", (v) => {
    if (!v) params.set("view", "flame"); // the user's choice, kept over the deep-profile default
    replaceParams(params);
    timed("redraw", () => graph.setIcicle(v));
  });
  app.append(
    h("h1", null, "Flame graph", h("span", { class: "subtitle" }, `run ${runId} · ${run.command}`)),
    h(
      "div",
      { class: "toolbar" },
      chartChoice(runId, params),
      " ",
      search,
      " ",
      icicle,
      toggle("left-heavy", "order", "heavy", params.get("order") === "heavy", (v) => timed("redraw", () => graph.setOrder(v))),
      stateThreadSelects(run, params, "flame"),
      hasOff ? toggle("colour by frame kind", "colour", "name", colouring === "name", rerender) : null,
      colourLegend(colouring, hasPython(fetched)),
      " ",
      searchInfo,
      stepButton(false),
      stepButton(true),
    ),
    h("div", { class: "toolbar" }, narrowing.inputs, narrowed ? h("span", { class: "muted filter-info" }, `showing ${pct(total[0] / runTotal)} of the run`) : null),
    crumbs,
    h("div", { class: "flame-holder" }, graph.canvas, graph.tip),
    h("p", { class: "muted keys" }, "keys: Tab to the graph, arrows move between frames, Enter zooms, Esc zooms out, + and − zoom the view, / searches (Enter: next match) · mouse: click zooms, drag pans, Ctrl+wheel or pinch zooms, Shift+wheel pans"),
    details,
  );
  // The path, details and search first (they move the canvas or colour it), then the one draw.
  graph.zoomTo(Number(params.get("zoom")) || 0, false);
  showZoomPath();
  if (search.value) runSearch(false);
  if (graph.drawFitted(params.has("view"))) icicle.querySelector("input")!.checked = true;
  performance.mark("flame-interactive");
}

// The Fleet page: TopN, flame graph, the selected function over time, diffs and
// findings over the fleet store, for a time range and label filter. Every choice
// lives in the URL (#/fleet/VIEW?range=1h&where=service=api&fn=malloc), so a view
// can be shared; a relative range ("the last hour") is turned into unix seconds
// when the page is drawn.
import { getBinary, getJSON } from "../api";
import { append, bar, h, location, message, pct, shortDso } from "../dom";
import { decodeFlame, FlameGraph, selfWeight } from "../flame";
import { href, type Route } from "../router";
import type { FleetLabels, FleetTopDoc, TopRow } from "../types";
import { type Column, escapeRegex, sortRows, sortableTable } from "./common";

const RANGES: Record<string, number> = { "15m": 900, "1h": 3600, "6h": 21600, "24h": 86400 };
const DEFAULT_RANGE = "1h";
const GROUPINGS = ["function", "line", "file", "dso"];
const VIEWS: Record<string, string> = { "": "Top", flame: "Flame graph" };

interface Scope {
  view: string;
  params: URLSearchParams;
  from: number;
  to: number;
  where: string;
}

/** The page's state from the URL: the view, and the range in unix seconds. */
function scopeOf(route: Route): Scope {
  const params = route.params;
  const custom = params.has("from") && params.has("to");
  const to = custom ? Number(params.get("to")) : Math.floor(Date.now() / 1000);
  const from = custom ? Number(params.get("from")) : to - (RANGES[params.get("range") ?? ""] ?? RANGES[DEFAULT_RANGE]);
  return { view: route.parts[1] ?? "", params, from, to, where: params.get("where") ?? "" };
}

/** The URL of this page with some parameters changed ("" or null removes one). */
function link(scope: Scope, changes: Record<string, string | null>, view = scope.view): string {
  const next: Record<string, string> = Object.fromEntries(scope.params);
  for (const [k, v] of Object.entries(changes)) {
    if (v) next[k] = v;
    else delete next[k];
  }
  return href(`/fleet${view ? `/${view}` : ""}`, next);
}

function go(scope: Scope, changes: Record<string, string | null>): void {
  window.location.hash = link(scope, changes);
}

function query(scope: Scope): Record<string, string> {
  return { from: String(scope.from), to: String(scope.to), where: scope.where };
}

function when(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ");
}

function viewTabs(scope: Scope): HTMLElement {
  return h(
    "p",
    { class: "toolbar fleet-views" },
    Object.entries(VIEWS).map(([view, label]) => h("a", { href: link(scope, {}, view), class: view === scope.view ? "chip active" : "chip" }, label)),
  );
}

/** Last 15 min / 1 h / 6 h / 24 h, or a custom [from, to) in UTC. */
function rangePicker(scope: Scope): HTMLElement {
  const custom = scope.params.has("from");
  const chosen = custom ? "" : scope.params.get("range") ?? DEFAULT_RANGE;
  const chips = Object.keys(RANGES).map((r) =>
    h("a", { href: link(scope, { range: r, from: null, to: null }), class: r === chosen ? "chip active" : "chip", "data-range": r }, `last ${r}`),
  );
  const input = (label: string, seconds: number) =>
    h("input", { type: "datetime-local", "aria-label": label, value: new Date(seconds * 1000).toISOString().slice(0, 16), class: "fleet-time" });
  const from = input("from (UTC)", scope.from);
  const to = input("to (UTC)", scope.to);
  const apply = h("button", { type: "button", class: "button" }, "custom range");
  apply.addEventListener("click", () => {
    const seconds = (el: HTMLInputElement) => String(Math.floor(Date.parse(`${el.value}Z`) / 1000));
    go(scope, { range: null, from: seconds(from), to: seconds(to) });
  });
  return h("p", { class: "toolbar fleet-range" }, chips, " ", from, "–", to, " UTC ", apply, h("span", { class: "muted" }, custom ? `${when(scope.from)} – ${when(scope.to)} UTC` : ""));
}

function conditions(where: string): string[] {
  return where.split(",").map((c) => c.trim()).filter(Boolean);
}

/** One picker per label key; choosing a value adds key=value to --where, "any" drops the key's condition. */
function labelFilters(scope: Scope, labels: FleetLabels): HTMLElement {
  const current = conditions(scope.where);
  const pickers = Object.entries(labels.labels).map(([key, values]) => {
    const chosen = current.find((c) => c.startsWith(`${key}=`) && !c.startsWith(`${key}=~`))?.slice(key.length + 1) ?? "";
    const select = h("select", { "aria-label": key, "data-label": key }, h("option", { value: "" }, `${key}: any`), values.map((v) => h("option", { value: v, selected: v === chosen }, `${key}=${v}`)));
    select.addEventListener("change", () => {
      const others = current.filter((c) => !c.startsWith(`${key}=`) || c.startsWith(`${key}=~`));
      go(scope, { where: [...others, ...(select.value ? [`${key}=${select.value}`] : [])].join(",") });
    });
    return select;
  });
  const text = h("input", { type: "search", value: scope.where, placeholder: "where: k=v,k!=v,k=~regex", class: "filter", "aria-label": "where" });
  text.addEventListener("change", () => go(scope, { where: text.value.trim() }));
  return h("p", { class: "toolbar fleet-filters" }, pickers, " ", text);
}

function functionCell(scope: Scope, row: TopRow): HTMLElement {
  const selected = row.function === scope.params.get("fn");
  return h("a", { href: link(scope, { fn: row.function }), class: selected ? "fn selected" : "fn" }, row.function);
}

function topColumns(scope: Scope, by: string): Column<TopRow>[] {
  const name = (r: TopRow) => (by === "dso" ? r.dso : by === "file" ? r.file : r.function);
  const columns: Column<TopRow>[] = [
    { label: "self", key: "self", numeric: true, value: (r) => r.self, cell: (r) => h("span", { class: "cost" }, bar(r.self), pct(r.self)) },
    { label: "total", key: "total", numeric: true, value: (r) => r.total, cell: (r) => h("span", { class: "cost" }, bar(r.total, "bar total"), pct(r.total)) },
    { label: by === "dso" ? "DSO" : by, key: "name", value: name, cell: (r) => (by === "function" || by === "line" ? functionCell(scope, r) : name(r)) },
  ];
  if (by === "function" || by === "line") {
    columns.push(
      { label: "DSO", key: "dso", value: (r) => r.dso, cell: (r) => shortDso(r.dso) },
      { label: "file:line", key: "file", value: (r) => location(r.file, r.line), cell: (r) => location(r.file, r.line) },
    );
  }
  return columns;
}

/** The function picked in the TopN: its share, and a link to its frames in the flame graph. */
function selectedFunction(scope: Scope, rows: TopRow[]): HTMLElement | null {
  const fn = scope.params.get("fn");
  const row = rows.find((r) => r.function === fn);
  if (!fn) return null;
  const share = row ? `self ${pct(row.self)} · total ${pct(row.total)} of the fleet's CPU time` : "";
  return h(
    "section",
    { class: "fleet-selected" },
    h("h2", null, h("span", { class: "fn" }, fn), h("span", { class: "subtitle" }, share)),
    h("a", { href: link(scope, { fn: null, q: `^${escapeRegex(fn)}$` }, "flame") }, "in the flame graph"),
  );
}

async function renderTopView(app: HTMLElement, scope: Scope): Promise<void> {
  const by = GROUPINGS.includes(scope.params.get("by") ?? "") ? scope.params.get("by")! : "function";
  const sortKey = scope.params.get("sort") ?? "self";
  const doc = await getJSON<FleetTopDoc>("/api/fleet/top", { ...query(scope), by, n: "0" });
  const columns = topColumns(scope, by);
  const seconds = doc.total / 1e9;
  append(app, [
    h(
      "p",
      { class: "toolbar" },
      "by ",
      GROUPINGS.map((g) => h("a", { href: link(scope, { by: g }), class: g === by ? "chip active" : "chip" }, g)),
      h("span", { class: "muted fleet-total" }, `${doc.samples.toLocaleString()} samples · ${seconds.toFixed(1)} CPU s · ${(seconds / (scope.to - scope.from)).toFixed(3)} cores on average`),
    ),
    selectedFunction(scope, doc.rows),
    doc.rows.length ? h("div", { class: "fleet-top" }, sortableTable(columns, sortRows(columns, doc.rows, sortKey), sortKey, (key) => go(scope, { sort: key }))) : message("No samples in this range and filter: widen the range or relax the filter."),
  ]);
}

async function renderFlameView(app: HTMLElement, scope: Scope): Promise<void> {
  const data = decodeFlame(await getBinary("/api/fleet/flame", query(scope)));
  const total = data.columns.total;
  if (!total[0]) {
    app.append(message("No samples in this range and filter: widen the range or relax the filter."));
    return;
  }
  const label = (node: number) => (node === 0 ? "all" : data.names[data.name[node]]);
  const graph: FlameGraph = new FlameGraph(data, {
    width: total,
    colouring: "name",
    icicle: false,
    heaviestFirst: false,
    tooltip: (node) => [label(node), `total ${pct(total[node] / total[0])} · self ${pct(selfWeight(data, total, node) / total[0])} of the fleet's CPU time`],
    onZoom: (node) => {
      graph.zoomTo(node);
      zoomed.textContent = node ? `zoomed into ${label(node)}` : "";
    },
  });
  const zoomed = h("span", { class: "muted" });
  const search = h("input", { type: "search", placeholder: "search frames (regex)", value: scope.params.get("q") ?? "", class: "filter", "aria-label": "search" });
  const found = h("span", { class: "search-info" });
  const runSearch = () => {
    const result = graph.search(search.value);
    found.textContent = search.value ? `${result.matches} frames · ${pct(result.share)} of the fleet` : "";
  };
  search.addEventListener("change", () => go(scope, { q: search.value }));
  const reset = h("button", { type: "button", class: "crumb" }, "all");
  reset.addEventListener("click", () => graph.zoomTo(0));
  window.perfsleuthFlame = { graph, timings: {} };
  app.append(h("p", { class: "toolbar" }, search, " ", found, " ", reset, " ", zoomed), h("div", { class: "flame-holder" }, graph.canvas, graph.tip));
  graph.draw();
  if (search.value) runSearch();
}

const RENDERERS: Record<string, (app: HTMLElement, scope: Scope) => Promise<void>> = {
  "": renderTopView,
  flame: renderFlameView,
};

export async function renderFleet(app: HTMLElement, route: Route): Promise<void> {
  const scope = scopeOf(route);
  const render = RENDERERS[scope.view];
  if (!render || !Number.isFinite(scope.from) || !Number.isFinite(scope.to)) {
    app.append(message(`No such fleet view: ${window.location.hash}`, "error"));
    return;
  }
  const labels = await getJSON<FleetLabels>("/api/fleet/labels", { from: String(scope.from), to: String(scope.to) });
  const where = scope.where ? ` · where ${scope.where}` : "";
  app.append(
    h("h1", null, "Fleet", h("span", { class: "subtitle" }, `${when(scope.from)} – ${when(scope.to)} UTC${where}`)),
    viewTabs(scope),
    rangePicker(scope),
    labelFilters(scope, labels),
  );
  await render(app, scope);
}

// The Fleet page: TopN, flame graph, the selected function over time, diffs and
// findings over the fleet store, for a time range and label filter. Every choice
// lives in the URL (#/fleet/VIEW?range=1h&where=service=api&fn=malloc), so a view
// can be shared; a relative range ("the last hour") is turned into unix seconds
// when the page is drawn.
import { ApiError, getBinary, getJSON } from "../api";
import { append, bar, h, location, message, pct, shortDso, signedPct, svg } from "../dom";
import { decodeFlame, FlameGraph, selfWeight } from "../flame";
import { href, type Route } from "../router";
import type { Choices, DiffRow, FleetAdviceDoc, FleetCpuDoc, FleetDiffDoc, FleetFinding, FleetLabels, FleetPlace, FleetPoint, FleetSeriesDoc, FleetTopDoc, TopRow } from "../types";
import { shortName } from "../names";
import { diffFlame } from "./diffflame";
import { type Column, escapeRegex, sortRows, sortableTable } from "./common";

const RANGES: Record<string, number> = { "15m": 900, "1h": 3600, "6h": 21600, "24h": 86400 };
const DEFAULT_RANGE = "1h";
const VIEWS: Record<string, string> = { "": "Top", flame: "Flame graph", diff: "Diff", findings: "Findings" };
const CHART = { width: 640, height: 180, left: 56, right: 12, top: 12, bottom: 30 };
const DIFF_ROWS = 50;
const LABEL_PREFIX = "label:"; // fleet top --by label:NAME

interface Scope {
  view: string;
  groupings: string[]; // the API's choice lists (/api/choices)
  labelGroupings: string[];
  topGroupings: string[]; // the TopN's: also by library and by label
  labelKeys: string[]; // every label of the range (/api/fleet/labels): the TopN can break down by each
  params: URLSearchParams;
  from: number;
  to: number;
  where: string;
}

/** The page's state from the URL: the view, and the range in unix seconds. */
function scopeOf(route: Route, choices: Choices): Scope {
  const params = route.params;
  const custom = params.has("from") && params.has("to");
  const to = custom ? Number(params.get("to")) : Math.floor(Date.now() / 1000);
  const from = custom ? Number(params.get("from")) : to - (RANGES[params.get("range") ?? ""] ?? RANGES[DEFAULT_RANGE]);
  const { groupings, label_groupings: labelGroupings, fleet_top_groupings: topGroupings } = choices;
  return { view: route.parts[1] ?? "", groupings, labelGroupings, topGroupings, labelKeys: [], params, from, to, where: params.get("where") ?? "" };
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
    // Without a type condition the fleet reads CPU profiles: "type: any" would say otherwise.
    const none = key === "type" ? "type: cpu" : `${key}: any`;
    const listed = key === "type" ? values.filter((v) => v !== "cpu") : values;
    const select = h("select", { "aria-label": key, "data-label": key }, h("option", { value: "" }, none), listed.map((v) => h("option", { value: v, selected: v === chosen }, `${key}=${v}`)));
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
  return h("a", { href: link(scope, { fn: row.function }), class: selected ? "fn selected" : "fn", title: row.function }, shortName(row.function));
}

/** The label a TopN grouping breaks the time down by (service, host, label:NAME), or null. */
function groupedLabel(scope: Scope, by: string): string | null {
  return scope.labelGroupings.includes(by) ? by : by.startsWith(LABEL_PREFIX) ? by.slice(LABEL_PREFIX.length) : null;
}

function topColumns(scope: Scope, by: string): Column<TopRow>[] {
  const label = groupedLabel(scope, by);
  const name = (r: TopRow) => (label ? String((r as unknown as Record<string, unknown>)[label] ?? "") : by === "dso" || by === "library" ? r.dso : by === "file" ? r.file : r.function);
  const nameCell = (r: TopRow) => (by === "function" || by === "line" ? functionCell(scope, r) : label ? labelCell(scope, label, name(r)) : name(r));
  const columns: Column<TopRow>[] = [
    { label: "self", key: "self", numeric: true, value: (r) => r.self, cell: (r) => h("span", { class: "cost" }, bar(r.self), pct(r.self)) },
    { label: "total", key: "total", numeric: true, value: (r) => r.total, cell: (r) => h("span", { class: "cost" }, bar(r.total, "bar total"), pct(r.total)) },
    { label: by === "dso" ? "DSO" : (label ?? by), key: "name", value: name, cell: nameCell },
  ];
  if (by === "function" || by === "line") {
    columns.push(
      { label: "DSO", key: "dso", value: (r) => r.dso, cell: (r) => shortDso(r.dso) },
      { label: "file:line", key: "file", value: (r) => location(r.file, r.line), cell: (r) => location(r.file, r.line) },
    );
  }
  return columns;
}

/** The function picked in the TopN: its share, its share over the range, and a link to its frames in the flame graph. */
async function selectedFunction(scope: Scope, rows: TopRow[]): Promise<HTMLElement | null> {
  const fn = scope.params.get("fn");
  const row = rows.find((r) => r.function === fn);
  if (!fn) return null;
  const share = row ? `self ${pct(row.self)} · total ${pct(row.total)} of the fleet's CPU time` : "";
  return h(
    "section",
    { class: "fleet-selected" },
    h("h2", null, h("span", { class: "fn", title: fn }, shortName(fn)), h("span", { class: "subtitle" }, share)),
    await seriesPanel(scope, fn),
    h("a", { href: link(scope, { fn: null, q: `^${escapeRegex(fn)}$` }, "flame") }, "in the flame graph"),
  );
}

/** `fleet series FN` over the range as a chart, or why there is none. */
async function seriesPanel(scope: Scope, fn: string): Promise<HTMLElement> {
  try {
    const doc = await getJSON<FleetSeriesDoc>("/api/fleet/series", { ...query(scope), function: fn });
    const legend = `its share of the fleet's CPU time per ${doc.step / 60}-minute bucket: total (line), self (dashed)`;
    return h("div", { class: "fleet-series" }, h("p", { class: "muted" }, legend), seriesChart(doc));
  } catch (e) {
    if (e instanceof ApiError) return message(e.message);
    throw e;
  }
}

/** One dot per bucket at its total share, the total joined by a line and the self share dashed. */
function seriesChart(doc: FleetSeriesDoc): SVGElement {
  const highest = Math.max(...doc.points.map((p) => p.total));
  const bottom = CHART.height - CHART.bottom;
  const x = (p: FleetPoint) => CHART.left + (((p.from + p.to) / 2 - doc.from) / (doc.to - doc.from)) * (CHART.width - CHART.left - CHART.right);
  const y = (share: number) => bottom - (share / highest) * (bottom - CHART.top);
  const line = (key: "self" | "total", dash: string) =>
    svg("polyline", { points: doc.points.map((p) => `${x(p)},${y(p[key])}`).join(" "), fill: "none", stroke: "#c62828", "stroke-width": 1.5, "stroke-dasharray": dash });
  const dot = (p: FleetPoint) => {
    const said = p.samples ? `total ${pct(p.total)} · self ${pct(p.self)} of ${p.samples.toLocaleString()} samples` : "no samples";
    return svg("circle", { cx: x(p), cy: y(p.total), r: 3.5, class: "plot-dot series-point" }, svg("title", {}, `${when(p.from)} – ${when(p.to)} UTC: ${said}`));
  };
  return svg(
    "svg",
    { class: "plot fleet-series-chart", width: CHART.width, height: CHART.height, viewBox: `0 0 ${CHART.width} ${CHART.height}`, "data-from": doc.from, "data-to": doc.to },
    svg("line", { x1: CHART.left, x2: CHART.width - CHART.right, y1: bottom, y2: bottom, class: "plot-axis" }),
    svg("line", { x1: CHART.left, x2: CHART.left, y1: CHART.top, y2: bottom, class: "plot-axis" }),
    svg("text", { x: 0, y: CHART.top + 8, class: "plot-label" }, pct(highest, 1)),
    svg("text", { x: 0, y: bottom, class: "plot-label" }, "0%"),
    svg("text", { x: CHART.left, y: CHART.height - 8, class: "plot-label" }, when(doc.from)),
    svg("text", { x: CHART.width - CHART.right, y: CHART.height - 8, class: "plot-label", "text-anchor": "end" }, `${when(doc.to)} UTC`),
    line("self", "4 3"),
    line("total", ""),
    doc.points.map(dot),
  );
}

/** The groupings of a view: the TopN also breaks the range down by library and by every label. */
function groupings(scope: Scope, top = false): string[] {
  const others = scope.labelKeys.filter((k) => !scope.labelGroupings.includes(k) && k !== "type").map((k) => `${LABEL_PREFIX}${k}`);
  return top ? [...scope.topGroupings, ...others] : scope.groupings;
}

/**
 * The range's CPU time as cores per bucket (bars); a drag across the chart makes the
 * dragged span the range, as Pyroscope's and Grafana's timelines do.
 */
async function cpuTimeline(scope: Scope): Promise<HTMLElement> {
  const doc = await getJSON<FleetCpuDoc>("/api/fleet/cpu", query(scope));
  const cores = (p: FleetPoint) => p.cpu_ns / 1e9 / Math.max(p.to - p.from, 1e-9);
  const highest = Math.max(...doc.points.map(cores), 1e-9);
  const bottom = CHART.height - CHART.bottom;
  const span = CHART.width - CHART.left - CHART.right;
  const x = (t: number) => CHART.left + ((t - doc.from) / (doc.to - doc.from)) * span;
  const time = (px: number) => doc.from + ((Math.min(Math.max(px, CHART.left), CHART.left + span) - CHART.left) / span) * (doc.to - doc.from);
  const bars = doc.points.map((p) => {
    const height = (cores(p) / highest) * (bottom - CHART.top);
    const said = `${when(p.from)} – ${when(p.to)} UTC: ${cores(p).toFixed(3)} cores, ${p.samples.toLocaleString()} samples`;
    return svg("rect", { x: x(p.from), y: bottom - height, width: Math.max(x(p.to) - x(p.from) - 1, 1), height, class: "cpu-bar" }, svg("title", {}, said));
  });
  const selection = svg("rect", { x: 0, y: CHART.top, width: 0, height: bottom - CHART.top, class: "cpu-selection", visibility: "hidden" });
  const chart = svg(
    "svg",
    { class: "plot fleet-cpu-chart", width: CHART.width, height: CHART.height, viewBox: `0 0 ${CHART.width} ${CHART.height}`, "data-from": doc.from, "data-to": doc.to, role: "img", "aria-label": "CPU cores over the range; drag to choose a range" },
    svg("line", { x1: CHART.left, x2: CHART.width - CHART.right, y1: bottom, y2: bottom, class: "plot-axis" }),
    svg("text", { x: 0, y: CHART.top + 8, class: "plot-label" }, `${highest.toFixed(2)} cores`),
    svg("text", { x: 0, y: bottom, class: "plot-label" }, "0"),
    svg("text", { x: CHART.left, y: CHART.height - 8, class: "plot-label" }, when(doc.from)),
    svg("text", { x: CHART.width - CHART.right, y: CHART.height - 8, class: "plot-label", "text-anchor": "end" }, `${when(doc.to)} UTC`),
    bars,
    selection,
  );
  let start: number | null = null;
  const local = (e: MouseEvent) => ((e.clientX - chart.getBoundingClientRect().left) / chart.getBoundingClientRect().width) * CHART.width;
  chart.addEventListener("mousedown", (e) => {
    start = local(e);
    e.preventDefault();
  });
  chart.addEventListener("mousemove", (e) => {
    if (start === null) return;
    const [a, b] = [start, local(e)].sort((p, q) => p - q);
    selection.setAttribute("x", String(a));
    selection.setAttribute("width", String(b - a));
    selection.setAttribute("visibility", "visible");
  });
  chart.addEventListener("mouseup", (e) => {
    if (start === null) return;
    const [a, b] = [time(start), time(local(e))].sort((p, q) => p - q);
    start = null;
    if (b - a >= 1) go(scope, { range: null, from: String(Math.floor(a)), to: String(Math.ceil(b)) });
  });
  return h("div", { class: "fleet-cpu" }, h("p", { class: "muted" }, `CPU cores per ${doc.step / 60}-minute bucket; drag across the chart to look at that span`), chart);
}

function grouping(scope: Scope, top = false): string {
  const by = scope.params.get("by") ?? "";
  return groupings(scope, top).includes(by) ? by : "function";
}

function byChips(scope: Scope, by: string, top = false): HTMLElement[] {
  return groupings(scope, top).map((g) => h("a", { href: link(scope, { by: g }), class: g === by ? "chip active" : "chip" }, g));
}

/** A label's value in the TopN by label: a link that adds it to the filter (the tag explorer). */
function labelCell(scope: Scope, by: string, value: string): HTMLElement {
  const where = [scope.where, `${by}=${value}`].filter(Boolean).join(",");
  return h("a", { href: link(scope, { where, by: null }), title: `only ${by}=${value}` }, value);
}

async function renderTopView(app: HTMLElement, scope: Scope): Promise<void> {
  const by = grouping(scope, true);
  const sortKey = scope.params.get("sort") ?? "self";
  const doc = await getJSON<FleetTopDoc>("/api/fleet/top", { ...query(scope), by, n: "0" });
  const columns = topColumns(scope, by);
  const seconds = doc.total / 1e9;
  append(app, [
    h(
      "p",
      { class: "toolbar" },
      "by ",
      byChips(scope, by, true),
      h("span", { class: "muted fleet-total" }, `${doc.samples.toLocaleString()} samples · ${seconds.toFixed(1)} CPU s · ${(seconds / (scope.to - scope.from)).toFixed(3)} cores on average`),
    ),
    await cpuTimeline(scope),
    await selectedFunction(scope, doc.rows),
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
  graph.drawFitted(false);
  if (search.value) runSearch();
}

/**
 * A diff side as `fleet diff --a/--b` takes it: FROM..TO in unix seconds, or labels
 * added to the filter over the range; none: the range itself (side A: the one before).
 */
function side(spec: string, scope: Scope, previous: boolean): Record<string, string> {
  const [first, last] = spec.split("..");
  if (last !== undefined) return { from: first, to: last, where: scope.where };
  const where = [scope.where, spec].filter(Boolean).join(",");
  if (spec || !previous) return { from: String(scope.from), to: String(scope.to), where };
  return { from: String(2 * scope.from - scope.to), to: String(scope.from), where };
}

function diffQuery(scope: Scope): Record<string, string> {
  const sides = { a: side(scope.params.get("a") ?? "", scope, true), b: side(scope.params.get("b") ?? "", scope, false) };
  return Object.fromEntries(Object.entries(sides).flatMap(([name, got]) => Object.entries(got).map(([k, v]) => [`${name}_${k}`, v])));
}

/** The two sides' inputs (URL a= and b=), as `fleet diff --a/--b` takes them. */
function sidePicker(scope: Scope): HTMLElement {
  const input = (name: string) =>
    h("input", { type: "search", value: scope.params.get(name) ?? "", placeholder: "k=v,… or FROM..TO (unix s)", class: "filter", "aria-label": name, "data-side": name });
  const a = input("a");
  const b = input("b");
  const compare = h("button", { type: "button", class: "button" }, "compare");
  compare.addEventListener("click", () => go(scope, { a: a.value.trim(), b: b.value.trim() }));
  const reset = h("a", { href: link(scope, { a: null, b: null }), class: "chip" }, "the range before vs the range");
  const middle = Math.floor((scope.from + scope.to) / 2);
  const halves = h("a", { href: link(scope, { a: `${scope.from}..${middle}`, b: `${middle}..${scope.to}` }), class: "chip" }, "first half vs second half");
  return h("p", { class: "toolbar fleet-sides" }, "A ", a, " B ", b, " ", compare, " ", reset, " ", halves);
}

/** A side of a diff: its range, filter and how much it holds (CPU seconds, or its unit). */
function sideText(name: string, s: FleetDiffDoc["a"], total: number, unit: string): string {
  const amount = unit === "ns" ? `${(total / 1e9).toFixed(1)} CPU s` : `${total.toLocaleString()} ${unit}`;
  return `${name}: ${when(s.from)} – ${when(s.to)} UTC${s.where ? ` where ${s.where}` : ""} (${amount})`;
}

/** Each row tinted by how much its self share grew (red) or shrank (blue), against the largest change. */
function diffTable(scope: Scope, doc: FleetDiffDoc): HTMLElement {
  const largest = Math.max(...doc.rows.map((r) => Math.abs(r.delta_self)), 1e-12);
  const name = (r: DiffRow) => (doc.by === "line" ? `${shortName(r.function)} ${location(r.file, r.line)}` : r.function ? shortName(r.function) : r.file || r.dso);
  const row = (r: DiffRow) => {
    const alpha = (0.15 * Math.abs(r.delta_self)) / largest; // light enough for the text to keep its contrast
    const tint = r.delta_self > 0 ? `rgba(230,60,50,${alpha.toFixed(3)})` : `rgba(60,110,230,${alpha.toFixed(3)})`;
    const fn = r.function ? h("a", { href: link(scope, { fn: r.function, a: null, b: null }, ""), class: "fn", title: r.function }, name(r)) : name(r);
    return h(
      "tr",
      { class: r.delta_self > 0 ? "worse" : r.delta_self < 0 ? "better" : undefined, style: `background:${tint}` },
      [r.self_a, r.self_b].map((v) => h("td", { class: "num" }, pct(v))),
      h("td", { class: "num delta" }, signedPct(r.delta_self)),
      [r.total_a, r.total_b].map((v) => h("td", { class: "num" }, pct(v))),
      h("td", { class: "num delta" }, signedPct(r.delta_total)),
      h("td", null, fn),
    );
  };
  const heads = ["self A", "self B", "Δ self", "total A", "total B", "Δ total", doc.by];
  return h("table", { class: "data changes fleet-diff" }, h("thead", null, h("tr", null, heads.map((t) => h("th", null, t)))), h("tbody", null, doc.rows.map(row)));
}

async function renderDiffView(app: HTMLElement, scope: Scope): Promise<void> {
  const by = grouping(scope);
  app.append(sidePicker(scope));
  let doc: FleetDiffDoc;
  try {
    doc = await getJSON<FleetDiffDoc>("/api/fleet/diff", { ...diffQuery(scope), by, n: String(DIFF_ROWS) });
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    // A side without samples is a choice to change, with the picker above, not a failure.
    app.append(message(e.status === 400 && /has no samples/.test(e.message) ? `${e.message}. Pick the two sides above (a FROM..TO range or labels each), or compare the range's two halves.` : e.message, e.status === 400 ? "warning" : "error"));
    return;
  }
  const data = decodeFlame(await getBinary("/api/fleet/diff/flame", diffQuery(scope)));
  const graph = diffFlame(data, false, ["A", "B", "each side's CPU time"]);
  window.perfsleuthFlame = { graph, timings: {} };
  append(app, [
    h("p", { class: "toolbar" }, "by ", byChips(scope, by), h("span", { class: "muted fleet-total" }, `${sideText("A", doc.a, doc.total_a, doc.unit)} → ${sideText("B", doc.b, doc.total_b, doc.unit)}`)),
    h("p", { class: "legend" }, h("i", { class: "grew" }), "share grew ", h("i", { class: "shrank" }), "share shrank (each side's share of its own CPU time; frames as wide as side B)"),
    h("div", { class: "flame-holder" }, graph.canvas, graph.tip),
    diffTable(scope, doc),
  ]);
  graph.drawFitted(false);
}

function places(label: "service" | "host", list: FleetPlace[], count = list.length): HTMLElement {
  const named = list.map((p) => `${p[label]} (${pct(p.share, 1)} of its CPU, ${p.cores.toFixed(2)} cores)`);
  const more = count > list.length ? ` and ${count - list.length} more` : "";
  return h("li", { class: `fleet-${label}s` }, `${label}s: ${named.join(", ") || "none above 1%"}${more}`);
}

/** A fleet finding: what fixing it saves, where its code runs, and the fix. */
function fleetFindingCard(f: FleetFinding, rank: number): HTMLElement {
  const fix = f.fix ?? {};
  const commands = [fix.command, fix.experiment].filter((c): c is string => typeof c === "string");
  const money = f.money_per_month === undefined ? "" : ` · ${f.money_per_month.toFixed(2)} per month`;
  return h(
    "article",
    { class: "finding fleet-finding", "data-kind": f.kind, "data-rule": f.rule ?? "" },
    h(
      "header",
      null,
      h("span", { class: "gain" }, `#${rank}`),
      h("span", { class: "cores-saved" }, `${f.cores_saved.toFixed(3)} cores saved${money}`),
      h("span", { class: "kind" }, f.kind),
      h("strong", { class: "finding-title" }, f.title),
    ),
    h("div", { class: "finding-meta" }, `fleet share ${pct(f.share ?? 0, 1)} · confidence ${pct(f.confidence ?? 0, 0)}`, f.same_hot_spot ? ` · same hot spot as ${f.same_hot_spot}` : ""),
    h("ul", { class: "evidence" }, places("service", f.services), places("host", f.hosts, f.hosts_count), (f.evidence ?? []).map((e) => h("li", null, e))),
    f.suggestion ? h("p", { class: "suggestion" }, f.suggestion) : null,
    commands.map((c) => h("pre", { class: "fix" }, c)),
  );
}

async function renderFindingsView(app: HTMLElement, scope: Scope): Promise<void> {
  const cost = h("input", { type: "number", min: "0", value: scope.params.get("core_cost") ?? "", placeholder: "cost of a core per month", class: "filter", "aria-label": "core cost" });
  cost.addEventListener("change", () => go(scope, { core_cost: cost.value }));
  const doc = await getJSON<FleetAdviceDoc>("/api/fleet/advise", { ...query(scope), core_cost: scope.params.get("core_cost") ?? "" });
  const hidden = doc.hidden ? ` · ${doc.hidden} below the noise floor not shown` : "";
  append(app, [
    h("p", { class: "toolbar" }, "cost of a core per month ", cost, h("span", { class: "muted fleet-total" }, `ranked by CPU cores saved, of ${doc.cores.toFixed(3)} cores busy on average${hidden}`)),
    doc.findings.length ? h("div", { class: "fleet-findings" }, doc.findings.map((f, i) => fleetFindingCard(f, i + 1))) : message("No findings in this range and filter."),
    h("ul", { class: "muted fleet-notes" }, doc.notes.map((n) => h("li", null, n))),
  ]);
}

const RENDERERS: Record<string, (app: HTMLElement, scope: Scope) => Promise<void>> = {
  "": renderTopView,
  flame: renderFlameView,
  diff: renderDiffView,
  findings: renderFindingsView,
};

export async function renderFleet(app: HTMLElement, route: Route): Promise<void> {
  const choices = await getJSON<Choices>("/api/choices");
  const scope = scopeOf(route, choices);
  const render = RENDERERS[scope.view];
  if (!render || !Number.isFinite(scope.from) || !Number.isFinite(scope.to)) {
    app.append(message(`No such fleet view: ${window.location.hash}`, "error"));
    return;
  }
  let labels: FleetLabels;
  try {
    labels = await getJSON<FleetLabels>("/api/fleet/labels", { from: String(scope.from), to: String(scope.to) });
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) throw e;
    app.append(h("h1", null, "Fleet"), message(e.message)); // no fleet store yet: how to make one
    return;
  }
  scope.labelKeys = Object.keys(labels.labels);
  const where = scope.where ? ` · where ${scope.where}` : "";
  app.append(
    h("h1", null, "Fleet", h("span", { class: "subtitle" }, `${when(scope.from)} – ${when(scope.to)} UTC${where}`)),
    viewTabs(scope),
    rangePicker(scope),
    labelFilters(scope, labels),
  );
  await render(app, scope);
}

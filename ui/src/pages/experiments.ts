import { getJSON } from "../api";
import { h, message, svg } from "../dom";
import type { Experiment } from "../types";

interface Series {
  label: string;
  values: number[];
}

const PLOT_W = 640;
const ROW_H = 36;
const LABEL_W = 200;
const IGNORED_FIELDS = new Set(["exit_status", "signal"]);

/**
 * The per-run measurements of an experiment's document: lists of numbers, and the lists
 * of measured runs (`raw.SIDE.runs`). Summaries (the variants' ratio, runs, p_value) and
 * warm-up runs are not measurements of the program.
 */
function findSeries(value: unknown, label: string, out: Series[], depth = 0): Series[] {
  if (Array.isArray(value) && value.length > 2 && value.every((v) => typeof v === "number")) {
    out.push({ label, values: value as number[] });
  } else if (Array.isArray(value) && /(^|\.)runs$/.test(label) && value.length > 1 && value.every((v) => v && typeof v === "object")) {
    // A list of measured runs: one series per numeric field they all have.
    const rows = value as Record<string, unknown>[];
    for (const key of Object.keys(rows[0])) {
      if (!IGNORED_FIELDS.has(key) && rows.every((r) => typeof r[key] === "number")) {
        out.push({ label: `${label}.${key}`, values: rows.map((r) => r[key] as number) });
      }
    }
  } else if (value && typeof value === "object" && depth < 4) {
    for (const [key, inner] of Object.entries(value)) findSeries(inner, label ? `${label}.${key}` : key, out, depth + 1);
  }
  return out;
}

/** Series grouped by what they measure (their last key), each group on its own axis. */
function byMetric(series: Series[]): Map<string, Series[]> {
  const groups = new Map<string, Series[]>();
  for (const s of series) {
    const cut = s.label.lastIndexOf(".");
    const metric = cut < 0 ? s.label : s.label.slice(cut + 1);
    const side = cut < 0 ? s.label : s.label.slice(0, cut).replace(/^raw\./, "").replace(/\.runs$/, "");
    groups.set(metric, [...(groups.get(metric) ?? []), { label: side, values: s.values }]);
  }
  return groups;
}

function cell(value: unknown): string {
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  if (Array.isArray(value) && value.every((v) => typeof v === "number")) return value.map((v) => cell(v)).join(" – ");
  return value === null || value === undefined ? "–" : String(value);
}

/** A table of the comparisons (`variants`: name, verdict, ratio, ci95, p_value, runs). */
function variantsTable(data: unknown): HTMLElement | null {
  const variants = (data as { variants?: unknown })?.variants;
  if (!Array.isArray(variants) || !variants.length) return null;
  const rows = variants.filter((v): v is Record<string, unknown> => Boolean(v) && typeof v === "object");
  const columns = Object.keys(rows[0]).filter((k) => rows.every((r) => typeof r[k] !== "object" || Array.isArray(r[k])));
  return h(
    "table",
    { class: "data variants" },
    h("thead", null, h("tr", null, columns.map((c) => h("th", null, c)))),
    h("tbody", null, rows.map((r) => h("tr", null, columns.map((c) => h("td", null, cell(r[c])))))),
  );
}

function summaryFacts(data: unknown): [string, string][] {
  if (!data || typeof data !== "object") return [];
  return Object.entries(data as Record<string, unknown>)
    .filter(([, v]) => ["string", "number", "boolean"].includes(typeof v) || (Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "number")))
    .map(([k, v]) => [k, Array.isArray(v) ? `${v[0]} – ${v[1]}` : String(v)]);
}

/** The unit a metric's name carries (`wall_s`, `max_rss_kb`), for the plot's axis. */
function unitOf(metric: string): string {
  const suffix = /_(s|ms|us|ns|kb|mb|bytes)$/.exec(metric)?.[1];
  const units: Record<string, string> = { s: "s", ms: "ms", us: "µs", ns: "ns", kb: "KiB", mb: "MiB", bytes: "bytes" };
  if (suffix) return units[suffix];
  return /instructions|cycles|samples|misses|count/.test(metric) ? metric.replace(/_/g, " ") : "";
}

function plot(series: Series[], unit: string): SVGElement {
  const all = series.flatMap((s) => s.values);
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  const span = hi - lo || Math.abs(hi) || 1;
  const x = (v: number) => LABEL_W + ((v - lo) / span) * (PLOT_W - LABEL_W - 20) + 10;
  const height = series.length * ROW_H + 30;
  const parts: SVGElement[] = [];
  series.forEach((s, k) => {
    const y = 20 + k * ROW_H;
    const mean = s.values.reduce((a, b) => a + b, 0) / s.values.length;
    parts.push(svg("text", { x: 0, y: y + 4, class: "plot-label" }, s.label.length > 28 ? `…${s.label.slice(-27)}` : s.label));
    parts.push(svg("line", { x1: LABEL_W, x2: PLOT_W - 10, y1: y, y2: y, class: "plot-axis" }));
    for (const v of s.values) parts.push(svg("circle", { cx: x(v), cy: y, r: 3.5, class: "plot-dot" }, svg("title", {}, `${v} ${unit}`)));
    parts.push(svg("line", { x1: x(mean), x2: x(mean), y1: y - 10, y2: y + 10, class: "plot-mean" }, svg("title", {}, `mean ${mean} ${unit}`)));
  });
  const withUnit = (v: number) => (unit ? `${v.toPrecision(4)} ${unit}` : v.toPrecision(4));
  parts.push(svg("text", { x: LABEL_W, y: height - 4, class: "plot-label" }, withUnit(lo)));
  parts.push(svg("text", { x: PLOT_W - 10, y: height - 4, class: "plot-label", "text-anchor": "end" }, withUnit(hi)));
  return svg("svg", { class: "plot", width: PLOT_W, height, viewBox: `0 0 ${PLOT_W} ${height}` }, ...parts);
}

/** A run's experiments; without a run, those `perfsleuth try` and `compare` keep apart. */
export async function renderExperiments(app: HTMLElement, runId?: string): Promise<void> {
  const path = runId ? `/api/runs/${runId}/experiments` : "/api/experiments";
  const { experiments } = await getJSON<{ experiments: Experiment[] }>(path);
  app.append(h("h1", null, "Experiments", h("span", { class: "subtitle" }, runId ? `run ${runId}` : "A/B measurements")));
  if (!experiments.length) {
    app.append(message("No experiments stored: `perfsleuth try …` and `perfsleuth compare` add them."));
    return;
  }
  for (const exp of experiments) {
    const groups = byMetric(findSeries(exp.data, "", []));
    app.append(
      h(
        "section",
        { class: "experiment" },
        h("h2", null, exp.name),
        exp.verdicts.length ? h("ul", { class: "verdicts" }, exp.verdicts.map((v) => h("li", { class: "verdict" }, v))) : null,
        h("table", { class: "facts" }, summaryFacts(exp.data).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
        variantsTable(exp.data),
        groups.size
          ? [...groups].map(([metric, series]) => {
              const unit = unitOf(metric);
              const title = unit && unit !== metric.replace(/_/g, " ") ? `${metric} (${unit}, one dot per run, bar: mean)` : `${metric} (one dot per run, bar: mean)`;
              return h("div", { class: "metric-plot" }, h("h3", null, title), plot(series, unit));
            })
          : message("No per-run numbers in this experiment."),
        h("details", null, h("summary", null, "raw data"), h("pre", null, JSON.stringify(exp.data, null, 1))),
      ),
    );
  }
}

import { embedded, pollJSON, postJSON } from "../api";
import { h, location, message, pct } from "../dom";
import { type Colouring, type FlameData, KIND_LABEL, legend } from "../flame";
import { nameLink } from "../names";
import { href } from "../router";
import type { PlacedFinding, RunDetail } from "../types";

/**
 * What a run (or part of it) recorded, in its own unit: "905 samples", "1,000 samples ·
 * 9,029,117,580 ns" for a timed run, "12,345 instructions" for a count run (no samples),
 * memory accesses for a cache run.
 */
export function recorded(unit: string, samples: number, total: number): string {
  if (unit === "samples") return `${samples.toLocaleString()} samples`;
  if (unit === "ns") return `${samples.toLocaleString()} samples · ${total.toLocaleString()} ns`;
  if (unit === "accesses") return `${total.toLocaleString()} memory accesses of the traced calls`; // a cache run
  return `${total.toLocaleString()} ${unit}`;
}

/** Why a run has no findings: not advised yet, or advised and nothing found. */
function noFindings(advised: boolean, runId: string): string {
  return advised
    ? "No findings: `perfsleuth advise` ran on this run and found nothing to suggest."
    : `No findings stored for this run: \`perfsleuth advise ${runId}\` (with the same --store) analyzes it and keeps them; reload this page after it.`;
}

interface AdviseState {
  state: "idle" | "running" | "done" | "failed";
  error: string;
}

const POLL_MS = 1000;

/**
 * Why a run has no findings, and for a run not advised yet (outside the single-file
 * report) a button that advises it on the server and shows the page again once the
 * findings are stored; a failure is one line beside the button.
 */
export function noFindingsBlock(advised: boolean, runId: string): HTMLElement {
  const why = message(noFindings(advised, runId));
  if (advised || embedded) return why;
  const status = h("span", { class: "advise-status", role: "status" });
  const button = h("button", { type: "button", class: "advise-now" }, "Analyze this run now");
  const fail = (text: string) => {
    status.textContent = text;
    status.classList.add("error");
    button.disabled = false;
  };
  const poll = async (): Promise<void> => {
    const now = await pollJSON<AdviseState>(`/api/runs/${runId}/advise`);
    if (now.state === "running") {
      setTimeout(() => void poll().catch((e: Error) => fail(e.message)), POLL_MS);
      return;
    }
    if (now.state === "done") window.dispatchEvent(new HashChangeEvent("hashchange"));
    else fail(now.error || "the advisor stopped without storing findings");
  };
  button.addEventListener("click", () => {
    button.disabled = true;
    status.classList.remove("error");
    status.textContent = "analyzing… (as `perfsleuth advise` does; this page reloads when the findings are stored)";
    void postJSON<AdviseState>(`/api/runs/${runId}/advise`)
      .then(() => poll())
      .catch((e: Error) => fail(e.message));
  });
  return h("div", { class: "advise" }, why, h("p", null, button, " ", status));
}

export function sourceLink(runId: string, f: { function?: string; file?: string; line?: number }): string {
  if (f.file) return href(`/run/${runId}/source`, { file: f.file, line: f.line || undefined, function: f.function });
  return href(`/run/${runId}/source`, { function: f.function });
}

export function functionLinks(runId: string, name: string): HTMLElement {
  return h(
    "span",
    { class: "links" },
    h("a", { href: href(`/run/${runId}/callgraph`, { function: name }) }, "callers/callees"),
    " · ",
    h("a", { href: href(`/run/${runId}/source`, { function: name }) }, "source"),
    " · ",
    h("a", { href: href(`/run/${runId}/flame`, { q: `^${escapeRegex(name)}$` }) }, "in flame graph"),
    " · ",
    h("a", { href: href(`/run/${runId}/flame`, { sandwich: name }) }, "sandwich"),
  );
}

export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** What the analyzers' detail keys mean; other keys are shown with spaces for underscores. */
const DETAIL_LABELS: Record<string, string> = {
  self_share: "self share of the run",
  saving: "expected saving",
  saving_range: "expected saving, range",
  saving_source: "saving measured by",
  rule_origin: "rule defined in",
  code_change: "needs a code change",
  blind_share: "share without a call stack",
  flags: "compiler flags",
  flags_origin: "flags read from",
  remark: "compiler remark",
  machine_code: "machine code",
  instructions_saved: "instructions saved",
  instructions_saved_per_call: "instructions saved per call",
  save_restore_instructions: "save/restore instructions",
  confirmed_by: "confirmed by",
  slow_calls: "slow calls",
  installed: "installed libraries",
  reorder: "field order that saves lines",
};
const FRACTIONS = new Set(["self_share", "saving", "blind_share"]);

function detailLabel(key: string): string {
  return DETAIL_LABELS[key] ?? key.replace(/_/g, " ");
}

/** A detail as one short line, or null when it needs a block of its own. */
function detailText(key: string, value: unknown): string | null {
  if (typeof value === "number") return FRACTIONS.has(key) ? pct(value, 1) : value.toLocaleString();
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (key === "saving_range" && Array.isArray(value) && value.length === 2) return `${pct(value[0], 0)} – ${pct(value[1], 0)}`;
  if (typeof value === "string" && value.length <= 120 && !value.includes("\n")) return value;
  return null;
}

/** A finding's details: short ones as a table of labelled values, long ones folded. */
function detailBlocks(details: Record<string, unknown> | undefined): HTMLElement[] {
  if (!details) return [];
  const entries = Object.entries(details);
  const short = entries.filter(([k, v]) => detailText(k, v) !== null);
  const long = entries.filter(([k, v]) => detailText(k, v) === null);
  return [
    ...(short.length ? [h("table", { class: "facts detail-facts" }, short.map(([k, v]) => h("tr", null, h("th", null, detailLabel(k)), h("td", null, detailText(k, v)))))] : []),
    ...long.map(([key, value]) =>
      h("details", { class: "evidence-detail" }, h("summary", null, detailLabel(key)), h("pre", null, typeof value === "string" ? value : JSON.stringify(value, null, 1))),
    ),
  ];
}

export function findingCard(runId: string, f: PlacedFinding, compact = false): HTMLElement {
  const where = location(f.file ?? "", f.line ?? 0);
  // An experiment's result (experiments/verify.py); the Finding types it as a free dict.
  const measured = f.verified as { ratio?: number; ci95?: [number, number]; runs?: number } | null | undefined;
  const verified = measured
    ? h(
        "span",
        { class: "verified" },
        `measured ${measured.ratio?.toFixed(2) ?? "?"}×`,
        measured.ci95 ? ` (95% CI ${measured.ci95[0].toFixed(2)}–${measured.ci95[1].toFixed(2)})` : "",
        measured.runs ? `, ${measured.runs} runs` : "",
      )
    : null;
  // The fix and the command that proves it (`perfsleuth try …`): on the overview's short cards too.
  const commands = [f.fix?.command, f.fix?.experiment].filter((c): c is string => typeof c === "string" && c !== "");
  return h(
    "article",
    { class: "finding", "data-kind": f.kind },
    h(
      "header",
      null,
      h("span", { class: "gain", title: f.gain_measured ? "measured by an A/B experiment" : "estimated" }, `−${pct(f.gain, 1)}${f.gain_measured ? "*" : ""}`),
      h("span", { class: "kind" }, f.kind),
      h("strong", { class: "finding-title" }, f.title),
    ),
    h(
      "div",
      { class: "finding-meta" },
      `share ${pct(f.share ?? 0, 1)} · confidence ${pct(f.confidence ?? 0, 0)}`,
      f.function ? [" · ", nameLink(f.function, href(`/run/${runId}/callgraph`, { function: f.function }))] : null,
      where ? [" · ", h("a", { href: sourceLink(runId, f), class: "source-link" }, where)] : null,
      verified ? [" · ", verified] : null,
    ),
    compact ? null : h("ul", { class: "evidence" }, (f.evidence ?? []).map((e) => h("li", null, e))),
    f.suggestion ? h("p", { class: "suggestion" }, f.suggestion) : null,
    commands.map((c) => h("pre", { class: "fix" }, c)),
    compact ? null : detailBlocks(f.details),
  );
}

/**
 * A select of one URL parameter (`state`, `thread`); "all …" removes it. Options with a
 * group (a thread's process) are listed under it. Null when there is nothing to choose.
 */
function paramSelect(params: URLSearchParams, key: string, label: string, options: [string, string, string?][], onChange: () => void): HTMLSelectElement | null {
  if (options.length < 2) return null;
  const option = ([v, t]: [string, string, string?]) => h("option", { value: v, selected: params.get(key) === v }, t);
  const groups = [...new Set(options.map((o) => o[2] ?? ""))];
  const listed = groups.length > 1 ? groups.map((g) => h("optgroup", { label: g }, options.filter((o) => (o[2] ?? "") === g).map(option))) : options.map(option);
  const select = h("select", { "aria-label": label }, h("option", { value: "" }, `all ${label}`), listed);
  select.addEventListener("change", () => {
    params.delete(key);
    if (select.value) params.set(key, select.value);
    onChange();
  });
  return select;
}

/** A process's name: its main thread's, else its first thread's. */
function processName(run: RunDetail, pid: number): string {
  const threads = run.threads.filter((t) => t.pid === pid);
  return (threads.find((t) => t.tid === pid) ?? threads[0])?.name || "?";
}

/** The state and thread pickers of a run's page; a choice reloads PAGE with it. */
export function stateThreadSelects(run: RunDetail, params: URLSearchParams, page: string): (HTMLSelectElement | null)[] {
  if (embedded) return []; // a report holds the unfiltered pages only: no picker that fails offline
  const reload = () => {
    params.delete("zoom");
    window.location.hash = href(`/run/${run.id}/${page}`, Object.fromEntries(params));
  };
  return [
    paramSelect(params, "state", "states", run.states.map((s) => [s, s]), reload),
    paramSelect(params, "thread", "threads", run.threads.map((t) => [String(t.tid), `${t.tid} ${t.name}`, `process ${processName(run, t.pid)} (${t.pid})`]), reload),
  ];
}

/** The meaning of every colour the graph paints with `colouring`. */
export function colourLegend(colouring: Colouring, python = false): HTMLElement {
  return h(
    "span",
    { class: "legend", "aria-label": "colours" },
    legend(colouring, python).map(([label, colour]) => h("span", { class: "legend-item" }, h("i", { style: `background:${colour}` }), label)),
  );
}

/** A frame's name and, for inlined and kernel frames, what it is. */
export function frameTitle(data: FlameData, node: number): string {
  if (node === 0) return "all";
  const kind = KIND_LABEL[data.kind[data.name[node]]];
  return kind ? `${data.names[data.name[node]]} (${kind})` : data.names[data.name[node]];
}

export interface Column<T> {
  label: string;
  key: string;
  value: (row: T) => string | number;
  cell: (row: T) => HTMLElement | string;
  numeric?: boolean;
}

/** A sort as the URL keeps it: `total` is the column's own order, `-total` the reverse. */
function parseSort(sort: string): { key: string; reversed: boolean } {
  return sort.startsWith("-") ? { key: sort.slice(1), reversed: true } : { key: sort, reversed: false };
}

/** Rows ordered by one column: numbers largest first, text in alphabetical order; `-key` reverses. */
export function sortRows<T>(columns: Column<T>[], rows: T[], sort: string): T[] {
  const { key, reversed } = parseSort(sort);
  const column = columns.find((c) => c.key === key) ?? columns[0];
  const keyed = rows.map((row) => ({ row, value: column.value(row) }));
  keyed.sort((a, b) =>
    typeof a.value === "number" && typeof b.value === "number" ? b.value - a.value : String(a.value).localeCompare(String(b.value)),
  );
  if (reversed) keyed.reverse();
  return keyed.map((k) => k.row);
}

/** aria-sort of a column: numbers go down, text goes up, unless reversed. */
function ariaSort<T>(column: Column<T>, sort: string): string | undefined {
  const { key, reversed } = parseSort(sort);
  if (column.key !== key) return undefined;
  return Boolean(column.numeric) !== reversed ? "descending" : "ascending";
}

/**
 * A table of rows already in order; only the first `limit` become DOM rows. Each header
 * is a button: it sorts by its column, and again reverses the order (`onSort("-key")`).
 */
export function sortableTable<T>(columns: Column<T>[], sorted: T[], sort: string, onSort: (sort: string) => void, limit = 200): HTMLElement {
  const current = parseSort(sort);
  const head = h(
    "tr",
    null,
    columns.map((c) => {
      const next = c.key === current.key && !current.reversed ? `-${c.key}` : c.key;
      return h(
        "th",
        { class: `${c.numeric ? "num" : ""} sortable`, "aria-sort": ariaSort(c, sort) },
        h("button", { type: "button", class: "sort", onclick: () => onSort(next) }, c.label),
      );
    }),
  );
  const body = sorted.slice(0, limit).map((row) => h("tr", null, columns.map((c) => h("td", { class: c.numeric ? "num" : undefined }, c.cell(row)))));
  return h(
    "div",
    null,
    h("table", { class: "data" }, h("thead", null, head), h("tbody", null, body)),
    sorted.length > limit ? h("p", { class: "muted" }, `${sorted.length - limit} more rows; refine the filter`) : null,
  );
}

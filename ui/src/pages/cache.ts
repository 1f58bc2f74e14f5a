// The projections of a `--mode cache` run (what `perfsleuth cache show` prints):
// footprint, the struct layout as rows of cache lines, the cache model and the
// scaling cliffs, one section per traced function.
import { ApiError, getJSON } from "../api";
import { h, message, pct, svg } from "../dom";
import { href } from "../router";
import type { CacheDoc, CacheFunction, Cliff, CacheModelDoc, Footprint, Layout, LayoutField, LayoutLine, NoTlbCliff, Sampling, Scaling, Spread, StructLayout, TlbCliff } from "../types";

const SOURCE_ROWS = 10;
/** Below this share of a level usable by the working set's sets, the capacity says so (as `cache show`). */
const USABLE_SHOWN = 0.995;
const SPREADS: [keyof Footprint["per_call"], string][] = [
  ["data_lines", "data cache lines"],
  ["private_data_lines", "… particular to the call"],
  ["code_lines", "code cache lines"],
  ["data_bytes", "distinct data bytes"],
  ["instructions", "instructions"],
  ["loads", "loads"],
  ["stores", "stores"],
];

export async function renderCache(app: HTMLElement, runId: string): Promise<void> {
  let doc: CacheDoc;
  try {
    doc = await getJSON<CacheDoc>(`/api/runs/${runId}/cache`);
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 404) throw e;
    app.append(h("h1", null, "Cache", h("span", { class: "subtitle" }, `run ${runId}`)), message(`No cache data for this run: ${e.message}`, "muted no-cache-data"));
    return;
  }
  const names = doc.functions.map((f) => f.function).join(", ");
  app.append(h("h1", null, "Cache", h("span", { class: "subtitle" }, `run ${runId} · ${names}`)), ...doc.functions.map((f) => functionSection(runId, f)));
}

function functionSection(runId: string, f: CacheFunction): HTMLElement {
  return h(
    "section",
    { class: "cache-function", "data-function": f.function },
    h("h2", null, h("span", { class: "fn" }, f.function), h("span", { class: "subtitle" }, f.executable)),
    samplingNote(f.sampling),
    footprintBlock(runId, f.footprint),
    (f.layouts.length ? f.layouts : [f.layout]).map(layoutBlock),
    modelBlock(runId, f.model, f.footprint.calls_recorded),
    f.scaling ? scalingBlock(f.scaling) : null,
    f.constant_time ? constantTimeBlock(f.constant_time) : null,
  );
}

/** Which calls were traced, as `cache show` says it (model/cpu_cache.py sampling_text). */
function samplingNote(sampling: Sampling | undefined): HTMLElement | null {
  if (!sampling || sampling.chosen === "first") return null;
  const where = sampling.out_of_time ? "up to the time budget" : "over the whole run";
  return message(
    `1 in ${sampling.every.toLocaleString()} calls traced (${sampling.calls_traced.toLocaleString()} of ` +
      `${sampling.calls_seen.toLocaleString()}, ${where}); the whole-run totals are the traced calls'`,
  );
}

function byteSize(bytes: number): string {
  if (bytes >= 1 << 20) return `${number(bytes / (1 << 20), 1)} MiB`;
  return bytes >= 1024 ? `${number(bytes / 1024, 1)} KiB` : `${bytes} B`;
}

function number(value: number, digits = 2): string {
  return Number.isInteger(value) ? value.toLocaleString() : value.toFixed(digits);
}

/** `file:line` as a link to the source view at that line; other places as text. */
function sourceCell(runId: string, source: string): HTMLElement | string {
  const match = /^(.+):(\d+)$/.exec(source);
  if (!match) return source;
  return h("a", { href: href(`/run/${runId}/source`, { file: match[1], line: match[2] }), class: "fn" }, source);
}

function footprintBlock(runId: string, fp: Footprint): HTMLElement {
  const facts: [string, string][] = [
    ["calls recorded", `${fp.calls_recorded.toLocaleString()} of ${fp.calls_total.toLocaleString()}`],
    ["cache line", `${fp.line_size} B`],
    ["lines shared by most calls", fp.shared_data_lines.toLocaleString()],
    ["whole run", `${fp.whole_run.data_lines.toLocaleString()} distinct data lines, ${fp.whole_run.code_lines.toLocaleString()} code lines`],
  ];
  const spread = (s: Spread) => [s.min, s.median, s.mean, s.max].map((v) => h("td", { class: "num" }, number(v)));
  return h(
    "div",
    { class: "cache-footprint" },
    h("h3", null, "Footprint per call"),
    h("table", { class: "facts" }, facts.map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
    h(
      "table",
      { class: "data narrow" },
      h("thead", null, h("tr", null, h("th", null, ""), ["min", "median", "mean", "max"].map((t) => h("th", { class: "num" }, t)))),
      h("tbody", null, SPREADS.map(([key, label]) => h("tr", null, h("th", null, label), spread(fp.per_call[key])))),
    ),
    fp.by_source.length
      ? h(
          "table",
          { class: "data narrow" },
          h("thead", null, h("tr", null, h("th", null, "source line"), h("th", { class: "num" }, "accesses/call"), h("th", { class: "num" }, "lines/call"))),
          h(
            "tbody",
            null,
            fp.by_source.slice(0, SOURCE_ROWS).map((row) =>
              h(
                "tr",
                null,
                h("td", null, sourceCell(runId, row.source)),
                h("td", { class: "num" }, number(row.accesses_per_call)),
                h("td", { class: "num" }, number(row.data_lines_per_call)),
              ),
            ),
          ),
        )
      : null,
  );
}

/** A struct being drawn; `per` is what a touch share counts: calls, or for an array the
 * visits of its elements (one call's work on one element). */
interface Drawing {
  fields: LayoutField[];
  lineSize: number;
  size: number;
  per: string;
}

/** The bytes [start, end) a field occupies: a bitfield's bits, rounded out to bytes. */
function span(f: LayoutField): [number, number] {
  if (f.bit_size == null) return [f.offset, f.offset + f.size];
  const first = f.offset * 8 + (f.bit_offset ?? 0);
  return [Math.floor(first / 8), Math.ceil((first + f.bit_size) / 8)];
}

function placeText(f: LayoutField): [string, string] {
  return f.bit_size == null ? [String(f.offset), `${f.size} B`] : [`${f.offset}:${f.bit_offset ?? 0}`, `${f.bit_size} bits`];
}

function fieldTitle(f: LayoutField, per: string): string {
  const [offset, size] = placeText(f);
  return `${f.type} ${f.name}: offset ${offset}, ${size}, touched in ${pct(f.touched, 0)} of ${per} (${f.hot ? "hot" : "cold"})`;
}

/** One cache line of the struct drawn as 64 byte cells: each field's bytes on it, and the holes. */
function lineStrip(d: Drawing, fields: LayoutField[], start: number): HTMLElement {
  const { lineSize, size } = d;
  const end = Math.min(start + lineSize, size);
  const strip = h("div", { class: "line-strip" });
  let at = start;
  const hole = (from: number, to: number) => h("span", { class: "seg hole", title: `hole: ${to - from} B at ${from}`, style: `width:${(100 * (to - from)) / lineSize}%` });
  for (const f of fields) {
    const [first, last] = span(f);
    // bitfields sharing a byte: the byte is drawn once, for the first of them
    const from = Math.max(first, start, at);
    const to = Math.min(last, end);
    if (to <= from) continue;
    if (from > at) strip.append(hole(at, from));
    const cls = `seg ${f.hot ? "hot" : "cold"}${from > first ? " continued" : ""}`;
    strip.append(h("span", { class: cls, title: fieldTitle(f, d.per), style: `width:${(100 * (to - from)) / lineSize}%;--heat:${f.touched}` }, f.name));
    at = to;
  }
  if (end > at) strip.append(hole(at, end));
  return strip;
}

function fieldRow(f: LayoutField): HTMLElement {
  return h(
    "tr",
    { class: `field ${f.hot ? "hot" : "cold"}`, "data-field": f.name, style: `--heat:${f.touched}` },
    h("td", { class: "fn" }, f.type),
    h("td", { class: "fn field-name" }, f.name),
    ...placeText(f).map((text) => h("td", { class: "num" }, text)),
    h("td", { class: "num" }, pct(f.touched, 0)),
    h("td", { class: "heat-label" }, f.hot ? "hot" : "cold"),
  );
}

function cacheLine(d: Drawing, row: LayoutLine): HTMLElement {
  const { fields, lineSize, size } = d;
  const start = row.line * lineSize;
  const overlapping = fields.filter((f) => span(f)[0] < start + lineSize && span(f)[1] > start);
  const hot = overlapping.filter((f) => f.hot).map((f) => f.name);
  const state = hot.length ? `hot: ${hot.join(", ")}` : "cold";
  return h(
    "div",
    { class: `cache-line ${hot.length ? "hot" : "cold"}`, "data-line": row.line },
    h(
      "div",
      { class: "line-head" },
      h("strong", null, `cache line ${row.line}`),
      h("span", { class: "muted" }, ` bytes ${start}–${Math.min(start + lineSize, size) - 1} · `),
      h("span", { class: "line-state" }, state),
      h("span", { class: "muted" }, ` · touched in ${pct(row.touched, 0)} of ${d.per}`),
    ),
    lineStrip(d, overlapping, start),
    h("table", { class: "data fields" }, h("tbody", null, fields.filter((f) => f.line === row.line).map(fieldRow))),
  );
}

/** Whose struct it is: `*c`, `*f`, `*s->peer`, `static table[4096]`, `global config`. */
function layoutOwner(layout: StructLayout): string {
  const kind = layout.variable_kind;
  if (kind === "parameter" || kind === "local" || kind === "member") return `*${layout.variable}`;
  const elements = layout.elements ?? 1;
  return elements > 1 ? `${kind} ${layout.variable}[${elements.toLocaleString()}]` : `${kind} ${layout.variable}`;
}

function layoutBlock(layout: Layout): HTMLElement {
  if (!layout.available) {
    return h("div", { class: "cache-layout" }, h("h3", null, "Struct layout"), message(`Not available: ${layout.reason}`));
  }
  const { lines, size } = layout;
  const array = (layout.elements ?? 1) > 1;
  const drawing: Drawing = { fields: layout.fields, lineSize: layout.line_size, size, per: array ? "element visits" : "calls" };
  const reorder = layout.reorder;
  return h(
    "div",
    { class: "cache-layout" },
    h(
      "h3",
      null,
      `Struct layout of ${layoutOwner(layout)}: struct ${layout.struct}, ${size} B, ${lines.length} cache lines${array ? " per element" : ""}`,
      h(
        "span",
        { class: "subtitle" },
        `${number(layout.lines_touched_per_call)} of its lines touched per call${array ? ` and element, ${(layout.elements_touched ?? 0).toLocaleString()} elements reached` : ""}`,
      ),
    ),
    h("p", { class: "legend" }, h("i", { class: "hot" }), `hot field (touched in ≥ 25% of ${drawing.per})`, h("i", { class: "cold" }), "cold field", h("i", { class: "hole" }), "hole", " · cold lines are greyed"),
    layout.object_misalignment ? message(`The objects start ${layout.object_misalignment} B into a cache line: their lines do not fall on these boundaries.`, "warning") : null,
    h("div", { class: "struct-lines" }, lines.map((row) => cacheLine(drawing, row))),
    reorder
      ? h(
          "p",
          { class: "suggestion reorder" },
          `Reorder: move ${reorder.move.join(", ")} from line ${reorder.from_line} to line ${reorder.to_line} ` +
            `(swap out ${reorder.swap_out.join(", ")}): ${reorder.lines_per_object_before} → ${reorder.lines_per_object_after} lines per object.`,
        )
      : null,
    h("details", null, h("summary", null, "pahole-style text"), h("pre", null, layout.pahole)),
  );
}

/**
 * Demand lookups, hits and misses per level: a level is asked what the one above missed.
 * A sampled trace's misses are expected values (fractions): the table rounds them.
 */
function levelRows(model: CacheModelDoc, calls: number): HTMLElement[] {
  const count = (x: number) => Math.round(x).toLocaleString();
  let lookups = model.accesses;
  return model.geometry.levels.map((level) => {
    const misses = model.misses[level.name] ?? 0;
    const row = h(
      "tr",
      { "data-level": level.name },
      h("th", null, level.name),
      h("td", { class: "num" }, `${byteSize(level.size)}, ${level.ways}-way`),
      h("td", { class: "num" }, count(lookups)),
      h("td", { class: "num" }, count(lookups - misses)),
      h("td", { class: "num" }, count(misses)),
      h("td", { class: "num" }, number(misses / Math.max(calls, 1))),
      h("td", { class: "num" }, pct(lookups ? (lookups - misses) / lookups : 0, 1)),
    );
    lookups = misses;
    return row;
  });
}

function modelBlock(runId: string, model: CacheModelDoc, calls: number): HTMLElement {
  const names = model.geometry.levels.map((l) => l.name);
  const last = names[names.length - 1];
  const sources = Object.entries(model.by_source).sort(([, a], [, b]) => (b[last] ?? 0) - (a[last] ?? 0) || (b[names[0]] ?? 0) - (a[names[0]] ?? 0));
  return h(
    "div",
    { class: "cache-model" },
    h("h3", null, "Cache model", h("span", { class: "subtitle" }, model.describe)),
    h(
      "table",
      { class: "data narrow levels" },
      h("thead", null, h("tr", null, ["level", "size", "lookups", "hits", "misses", "misses/call", "hit rate"].map((t, k) => h("th", { class: k ? "num" : undefined }, t)))),
      h("tbody", null, levelRows(model, calls)),
    ),
    h("p", { class: "muted" }, `${model.accesses.toLocaleString()} data line accesses over ${calls.toLocaleString()} recorded calls, the cache warm across calls; prefetches are not counted.`),
    h(
      "table",
      { class: "data narrow model-sources" },
      h("thead", null, h("tr", null, h("th", null, "source line"), h("th", { class: "num" }, "accesses"), names.map((n) => h("th", { class: "num" }, `${n} misses`)))),
      h(
        "tbody",
        null,
        sources.slice(0, SOURCE_ROWS).map(([source, counts]) =>
          h("tr", null, h("td", null, sourceCell(runId, source)), h("td", { class: "num" }, (counts.accesses ?? 0).toLocaleString()), names.map((n) => h("td", { class: "num" }, (counts[n] ?? 0).toLocaleString()))),
        ),
      ),
    ),
    sources.length > SOURCE_ROWS ? message(`${sources.length - SOURCE_ROWS} more source lines`) : null,
  );
}

const PLOT = { width: 680, height: 260, left: 70, right: 150, top: 12, bottom: 34 };

/** Log-log plot: the fitted working set against n, the measured points, each level's
 * capacity and the n where the fit crosses it; dashed, the lines touched, when a
 * level's cliff comes from them (the L1d, which the prefetcher does not fill). */
function scalingPlot(scale: Scaling): SVGElement {
  const { fit } = scale;
  const working = (n: number) => fit.intercept_lines + fit.lines_per_n * n;
  const touched = (n: number) => fit.touched_intercept_lines + fit.touched_lines_per_n * n;
  const byTouched = fit.of !== "data_lines" && scale.cliffs.some((c) => c.working_set === "data_lines");
  const measured = scale.runs.map((r) => [r.n, fit.of === "data_lines" ? r.data_lines : r.cached_lines] as const);
  const cliffNs = scale.cliffs.flatMap((c) => (c.n ? [c.n] : []));
  const [x0, x1] = [Math.min(scale.range[0], ...cliffNs) / 2, Math.max(scale.range[1], ...cliffNs) * 2];
  const ys = [...measured.map(([, y]) => y), ...scale.cliffs.map((c) => c.usable_lines)].filter((y) => y > 0);
  const [y0, y1] = [Math.min(...ys) / 2, Math.max(...ys) * 2];
  const x = (n: number) => PLOT.left + ((Math.log(n) - Math.log(x0)) / (Math.log(x1) - Math.log(x0))) * (PLOT.width - PLOT.left - PLOT.right);
  const y = (lines: number) => PLOT.height - PLOT.bottom - ((Math.log(lines) - Math.log(y0)) / (Math.log(y1) - Math.log(y0))) * (PLOT.height - PLOT.top - PLOT.bottom);
  const right = PLOT.width - PLOT.right;
  const steps = Array.from({ length: 60 }, (_, k) => x0 * (x1 / x0) ** (k / 59)).filter((n) => working(n) >= y0 && working(n) <= y1);
  const parts: SVGElement[] = [
    svg("rect", { x: x(scale.range[0]), y: PLOT.top, width: Math.max(2, x(scale.range[1]) - x(scale.range[0])), height: PLOT.height - PLOT.top - PLOT.bottom, class: "scale-range" }, svg("title", {}, "the measured range of n")),
    svg("line", { x1: PLOT.left, x2: right, y1: PLOT.height - PLOT.bottom, y2: PLOT.height - PLOT.bottom, class: "plot-axis" }),
    svg("line", { x1: PLOT.left, x2: PLOT.left, y1: PLOT.top, y2: PLOT.height - PLOT.bottom, class: "plot-axis" }),
  ];
  for (const c of scale.cliffs) {
    const held = c.usable_lines;
    parts.push(svg("line", { x1: PLOT.left, x2: right, y1: y(held), y2: y(held), class: "scale-capacity" }));
    parts.push(svg("text", { x: right + 6, y: y(held) + 4, class: "plot-label" }, `${c.level} ${held.toLocaleString()} lines`));
    if (c.n) {
      parts.push(svg("line", { x1: x(c.n), x2: x(c.n), y1: y(held), y2: PLOT.height - PLOT.bottom, class: `scale-cliff${c.in_range ? " in-range" : ""}` }));
      parts.push(svg("text", { x: x(c.n) + 3, y: PLOT.height - PLOT.bottom - 4, class: "plot-label" }, c.n.toLocaleString()));
    }
  }
  if (steps.length > 1) parts.push(svg("polyline", { points: steps.map((n) => `${x(n)},${y(working(n))}`).join(" "), class: "scale-fit" }));
  const touchedSteps = Array.from({ length: 60 }, (_, k) => x0 * (x1 / x0) ** (k / 59)).filter((n) => touched(n) >= y0 && touched(n) <= y1);
  if (byTouched && touchedSteps.length > 1) {
    parts.push(svg("polyline", { points: touchedSteps.map((n) => `${x(n)},${y(touched(n))}`).join(" "), class: "scale-fit scale-fit-touched" }, svg("title", {}, "lines touched by the code: what the L1d must hold")));
  }
  for (const [n, lines] of measured) parts.push(svg("circle", { cx: x(n), cy: y(lines), r: 4, class: "plot-dot" }, svg("title", {}, `n = ${n.toLocaleString()}: ${lines.toLocaleString()} lines`)));
  parts.push(svg("text", { x: PLOT.left, y: PLOT.height - 6, class: "plot-label" }, `n (log scale, ${Math.round(x0).toLocaleString()} to ${Math.round(x1).toLocaleString()})`));
  parts.push(svg("text", { x: 0, y: PLOT.top + 8, class: "plot-label" }, "lines (log)"));
  return svg("svg", { class: "plot scaling-plot", width: PLOT.width, height: PLOT.height, viewBox: `0 0 ${PLOT.width} ${PLOT.height}` }, ...parts);
}

/** A level's capacity; the LLC's, when measured, with the size sysfs gives beside it;
 * the room a prefetched line takes there, when less than a line's (the L2); and the
 * part of it the working set's lines can use when they leave sets empty. */
function capacityText(c: Cliff): string {
  let held = `${c.capacity_lines.toLocaleString()} lines`;
  if (c.capacity_source === "measured" && c.nominal_capacity_lines !== undefined) held = `${held} measured (sysfs: ${c.nominal_capacity_lines.toLocaleString()})`;
  if (c.prefetched_room !== undefined) held = `${held}; a prefetched line nobody touched takes ${Math.round(c.prefetched_room * 100)}% of a line's room`;
  if (c.usable_share >= USABLE_SHOWN) return held;
  return `${held}, ${c.usable_lines.toLocaleString()} usable by its sets`;
}

/** Where a cliff's n falls; below the measured range it is an extrapolation, if any. */
function cliffAt(c: { n: number | null; below_range?: boolean }): string {
  if (c.below_range) return c.n == null ? "below the range" : `n ≈ ${c.n.toLocaleString()}`;
  return c.n == null ? "never" : `n = ${c.n.toLocaleString()}`;
}

function cliffFlag(c: { in_range: boolean; below_range?: boolean }): HTMLElement | string {
  if (c.below_range) return h("strong", { class: "cliff-flag" }, "below the measured range: already over at its smallest n");
  return c.in_range ? h("strong", { class: "cliff-flag" }, "inside the measured range") : "";
}

/** The TLB's row of the cliffs table: its reach is in pages, measured on this machine. */
function tlbRow(tlb: TlbCliff | NoTlbCliff): HTMLElement {
  if (!tlb.available) {
    return h("tr", { class: "tlb-cliff", "data-level": "TLB" }, h("th", null, "TLB"), h("td", { class: "muted", colspan: "3" }, `not predicted: ${tlb.reason}`));
  }
  const perN = `${number(tlb.intercept_pages, 0)} + ${tlb.pages_per_n.toFixed(4)} · n pages touched`;
  return h(
    "tr",
    { class: `tlb-cliff${tlb.in_range ? " in-range" : ""}`, "data-level": "TLB", title: `${perN}; ${tlb.evidence}` },
    h("th", null, "TLB"),
    h("td", { class: "num" }, `${tlb.reach_pages?.toLocaleString() ?? "?"} pages (measured)`),
    h("td", { class: "num" }, cliffAt(tlb)),
    h("td", null, cliffFlag(tlb)),
  );
}

function scalingBlock(scale: Scaling): HTMLElement {
  const fit = scale.fit;
  const levels = Object.keys(scale.runs[0]?.misses_per_call ?? {});
  return h(
    "div",
    { class: "cache-scaling" },
    h("h3", null, "Scaling", h("span", { class: "subtitle" }, `n from ${scale.range[0].toLocaleString()} to ${scale.range[1].toLocaleString()}`)),
    h(
      "p",
      null,
      `Working set ≈ ${number(fit.intercept_lines, 0)} + ${fit.lines_per_n.toFixed(3)} · n lines (${fit.bytes_per_n.toFixed(1)} B per n, ${fit.of.replace(/_/g, " ")}; ` +
        `the code touches ${fit.touched_lines_per_n.toFixed(3)} lines per n).`,
    ),
    scale.runs.length ? scalingPlot(scale) : null,
    h(
      "table",
      { class: "data narrow cliffs" },
      h("thead", null, h("tr", null, ["level", "capacity", "working set exceeds it at", ""].map((t, k) => h("th", { class: k === 1 || k === 2 ? "num" : undefined }, t)))),
      h(
        "tbody",
        null,
        scale.cliffs.map((c) =>
          h(
            "tr",
            { class: c.in_range ? "in-range" : undefined, "data-level": c.level },
            h("th", null, c.level),
            h("td", { class: "num" }, capacityText(c)),
            h("td", { class: "num" }, cliffAt(c)),
            h("td", null, cliffFlag(c)),
          ),
        ),
        tlbRow(scale.tlb),
      ),
    ),
    h(
      "table",
      { class: "data narrow scaling-runs" },
      h("thead", null, h("tr", null, ["n", "lines touched", "lines cached", ...levels.map((l) => `${l} misses/call`)].map((t) => h("th", { class: "num" }, t)))),
      h(
        "tbody",
        null,
        scale.runs.map((r) =>
          h(
            "tr",
            null,
            h("td", { class: "num" }, r.n.toLocaleString()),
            h("td", { class: "num" }, r.data_lines.toLocaleString()),
            h("td", { class: "num" }, r.cached_lines.toLocaleString()),
            levels.map((l) => h("td", { class: "num" }, number(r.misses_per_call[l] ?? 0))),
          ),
        ),
      ),
    ),
  );
}

/** Where the secrets' runs part; none when the function ran a different number of times. */
function partingPlace(source: string): string {
  return source ? `, first at ${source}` : ": its callers' branches decide it; trace the caller";
}

function constantTimeBlock(ct: NonNullable<CacheFunction["constant_time"]>): HTMLElement {
  const lines = ct.constant_time
    ? [`Yes: ${ct.variants} secrets ran identical instructions and touched the same lines.`]
    : ct.differences.map((d) => `No: secret #${d.variant + 1} differs from #1 in ${d.what}${partingPlace(d.first_source)}`);
  return h("div", { class: "cache-constant-time" }, h("h3", null, "Constant time"), lines.map((t) => h("p", { class: ct.constant_time ? undefined : "warning" }, t)));
}

// Where an interaction's latency goes: focus, hide and sandwich on one build of the web UI,
// in a detailed Chromium trace, split per interaction (URL changed → painted, as
// bench/ui_ab.mjs times it) into the renderer main thread's self time by kind (scripting,
// GC, style and layout, paint, canvas, commit, other), the other threads' busy time
// (compositor, raster, GPU / viz, browser), and the main thread's idle time (waiting for a
// frame, or for a core on a loaded machine).
// Usage: node bench/ui_trace.mjs UI_URL RUN_ID DIR[,DIR2…] [ROUNDS] [QUERIES_JSON] [TRACE_FILE]
//   DIR: a `vite build --outDir DIR` of ui/ (several: interleaved round by round, as
//   bench/ui_ab.mjs does); QUERIES_JSON as for bench/ui_ab.mjs;
//   TRACE_FILE: the last round's trace, to open in chrome://tracing or Perfetto.
import { writeFileSync } from "node:fs";
import { chromium, filterLatency, heavyNames, openFrom, summary } from "./ui_bench_page.mjs";

const [ui, runId, dir, rounds = "3", queriesJson, traceFile] = process.argv.slice(2);
const QUERIES = queriesJson ? JSON.parse(queriesJson) : ["op_17", "Widget<3>", "ns1::", "^ns2.*op_4$"];
const CATEGORIES = [
  "toplevel",
  "blink.user_timing",
  "devtools.timeline",
  "disabled-by-default-devtools.timeline",
  "disabled-by-default-devtools.timeline.frame",
  "v8",
  "v8.execute",
  "blink",
  "blink.console",
  "cc",
  "gpu",
  "viz",
  "benchmark",
  "disabled-by-default-v8.gc",
];

/** What a main-thread trace event's own time is spent on. */
function kindOf(name) {
  if (/GC|Scavenge|Mark|Sweep|Compact|Heap/.test(name) && !/Paint/.test(name)) return "gc";
  if (/FinalizeFrame|Raster|DrawOp|PaintRecord/.test(name)) return "canvas raster";
  if (/ProduceCanvasResource|PrepareTransferableResource|CanvasResource|SharedImage|VerifyFlush/.test(name)) return "canvas to compositor";
  if (/UpdateLayoutTree|RecalcStyle|ParseAuthorStyleSheet|StyleRecalc/.test(name)) return "style";
  if (/^Layout|UpdateLayerTree|PrePaint|Layerize|IntersectionObserver|ResizeObserver|HitTest/.test(name)) return "layout";
  if (/Paint/.test(name)) return "paint";
  if (/Commit|ProxyMain|BeginMainFrame|Activate/.test(name)) return "commit";
  if (/V8|v8|Function|Script|Microtask|Compile|Parse|Optimize|Event|Timer|Animation|Callback/.test(name)) return "scripting";
  return "other";
}

/** Own (self) wall and CPU time per event name of the complete events of one thread inside [from, to). */
function selfTimes(events, from, to) {
  const inside = events.filter((e) => e.ts < to && e.ts + e.dur > from).sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const own = new Map();
  const open = [];
  const share = (e) => (Math.min(e.ts + e.dur, to) - Math.max(e.ts, from)) / (e.dur || 1); // of an event cut by the window
  const add = (name, wall, cpu) => {
    const sums = own.get(name) ?? { wall: 0, cpu: 0 };
    sums.wall += wall;
    sums.cpu += cpu;
    own.set(name, sums);
  };
  for (const e of inside) {
    while (open.length && open[open.length - 1].ts + open[open.length - 1].dur <= e.ts) open.pop();
    const parent = open[open.length - 1];
    const [wall, cpu] = [e.dur * share(e), (e.tdur ?? 0) * share(e)];
    add(e.name, wall, cpu);
    if (parent) add(parent.name, -wall, -cpu);
    open.push(e);
  }
  return own;
}

/** Busy time (outermost events only) of one thread inside [from, to). */
function busy(events, from, to) {
  let sum = 0;
  let reach = -Infinity;
  for (const e of events) {
    const start = Math.max(e.ts, from, reach);
    const end = Math.min(e.ts + e.dur, to);
    if (end > start) sum += end - start;
    reach = Math.max(reach, e.ts + e.dur);
  }
  return sum;
}

function analyse(trace) {
  const events = JSON.parse(trace).traceEvents;
  const names = new Map();
  const processNames = new Map();
  for (const e of events) {
    if (e.ph === "M" && e.name === "thread_name") names.set(`${e.pid}.${e.tid}`, e.args.name);
    if (e.ph === "M" && e.name === "process_name") processNames.set(e.pid, e.args.name);
  }
  const byThread = new Map();
  for (const e of events) {
    if (e.ph !== "X" || e.dur === undefined) continue;
    const key = `${e.pid}.${e.tid}`;
    if (!byThread.has(key)) byThread.set(key, []);
    byThread.get(key).push(e);
  }
  for (const list of byThread.values()) list.sort((a, b) => a.ts - b.ts);
  const renderers = [...byThread.keys()].filter((k) => names.get(k) === "CrRendererMain");
  const main = renderers.sort((a, b) => byThread.get(b).length - byThread.get(a).length)[0];
  const rendererPid = main.split(".")[0];
  const marks = events.filter((e) => e.cat?.includes("blink.user_timing") && e.name.startsWith("filter-") && (e.ph === "R" || e.ph === "I" || e.ph === "n" || e.ph === "b")).sort((a, b) => a.ts - b.ts);
  const windows = [];
  for (let k = 0; k < marks.length; k++) {
    if (marks[k].name !== "filter-start") continue;
    const window = { from: marks[k].ts };
    for (let j = k + 1; j < marks.length && marks[j].name !== "filter-start"; j++) window[marks[j].name.slice(7)] = marks[j].ts;
    if (window.end) windows.push(window);
  }
  const group = (key) => {
    const [pid] = key.split(".");
    const thread = names.get(key) ?? "?";
    if (key === main) return "main";
    if (pid === rendererPid) return /Compositor$/.test(thread) ? "compositor" : /Raster|TileWorker/.test(thread) ? "raster" : "renderer other";
    const process = processNames.get(Number(pid)) ?? "";
    if (/GPU/i.test(process) || /Viz|Gpu/.test(thread)) return "gpu/viz";
    if (/Browser/i.test(process)) return "browser";
    return "other processes";
  };
  return windows.map((w) => {
    const mainOwn = selfTimes(byThread.get(main), w.from, w.end);
    const cpu = {};
    for (const [name, { cpu: us }] of mainOwn) cpu[kindOf(name)] = (cpu[kindOf(name)] ?? 0) + us / 1000;
    const threads = {};
    for (const [key, list] of byThread) {
      if (key === main) continue;
      const g = group(key);
      threads[g] = (threads[g] ?? 0) + busy(list, w.from, w.end) / 1000;
    }
    const latency = (w.end - w.from) / 1000;
    const mainWall = busy(byThread.get(main), w.from, w.end) / 1000;
    const mainCpu = Object.values(cpu).reduce((a, b) => a + b, 0);
    const top = [...mainOwn].map(([n, { cpu: us }]) => [n, us / 1000]);
    return {
      latency,
      drawn: w.drawn ? (w.drawn - w.from) / 1000 : null,
      main_cpu: mainCpu,
      main_waiting_for_a_core: mainWall - mainCpu, // busy on the main thread, but not running
      main_idle: latency - mainWall,
      cpu,
      threads,
      top,
    };
  });
}

const [KINDS, ASPECTS] = [["focus", "hide", "sandwich"], ["latency", "drawn", "main_cpu", "main_waiting_for_a_core", "main_idle"]];
const dirs = dir.split(",");
const result = Object.fromEntries(dirs.map((d) => [d, Object.fromEntries(KINDS.map((k) => [k, []]))]));
let lastTrace = null;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"] });
for (let r = 0; r < Number(rounds); r++) {
  for (const build of dirs) {
    const { context, page } = await openFrom(browser, ui, runId, build);
    const names = await heavyNames(page, [1, 2, 3, 5, 8]);
    const steps = [...["focus", "hide"].flatMap((kind) => QUERIES.flatMap((q) => [[kind, q], ["back", ""]])), ...names.flatMap((n) => [["sandwich", n], ["back", ""]])];
    await browser.startTracing(page, { categories: CATEGORIES });
    for (const [kind, q] of steps) await filterLatency(page, kind === "back" ? "" : `${kind}=${encodeURIComponent(q)}`);
    lastTrace = (await browser.stopTracing()).toString();
    analyse(lastTrace).forEach((w, k) => steps[k][0] !== "back" && result[build][steps[k][0]].push(w));
    await context.close();
  }
}
await browser.close();
if (traceFile) writeFileSync(traceFile, lastTrace);

const round1 = (v) => Math.round(v * 10) / 10;
const stats = (values) => {
  const { median, p95 } = summary(values.filter((v) => v !== null));
  return { median: round1(median), p95: round1(p95) };
};
const out = { load_average: (await import("node:os")).loadavg() };
for (const build of dirs) {
  out[build] = {};
  for (const kind of KINDS) {
    const list = result[build][kind];
    const of = (pick) => stats(list.map(pick));
    const named = (field) => [...new Set(list.flatMap((w) => Object.keys(w[field])))];
    const topNames = new Map();
    for (const w of list) for (const [n, ms] of w.top) topNames.set(n, (topNames.get(n) ?? 0) + ms / list.length);
    out[build][kind] = {
      n: list.length,
      ...Object.fromEntries(ASPECTS.map((a) => [a, of((w) => w[a])])),
      main_cpu_by_kind: Object.fromEntries(named("cpu").map((k) => [k, of((w) => w.cpu[k] ?? 0)])),
      other_threads_busy: Object.fromEntries(named("threads").map((k) => [k, of((w) => w.threads[k] ?? 0)])),
      main_cpu_top_mean: [...topNames].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([n, ms]) => [n, round1(ms)]),
    };
  }
}
console.log(JSON.stringify(out));

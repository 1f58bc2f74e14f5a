// Two builds of the web UI timed against each other in one Chromium, interleaved: the
// focus, ignore, hide and sandwich latency of bench/ui_bench.mjs (URL changed → the new graph painted),
// each sandwich followed by a user's toggling: back to the flame graph ("back") and to the
// same sandwich again ("sandwich_again"), for build A, then B, then A … on the same server, so load changes hit both alike; and
// whether both builds drew the same trees (a digest of every node's name, depth and weights);
// and the renderer main thread's CPU time per interaction (from a Chromium trace), which the
// machine's load stretches far less than the latency; and the CPU of all the renderer's threads
// (V8's background compiles and GC marking, raster) in the same windows.
// Usage: node bench/ui_ab.mjs UI_URL RUN_ID DIR_A DIR_B [ROUNDS] [QUERIES_JSON]
//   DIR_*: a `vite build --outDir DIR` of ui/ (e.g. the last commit's and the work tree's).
//   QUERIES_JSON: the focus / ignore / hide / search expressions (bench/ui_deep_bench.json's
//   "queries" for the deep profile); default: the synthetic profile's names.
import { chromium, filterLatency, heavyNames, openFrom, summary, threadCpu } from "./ui_bench_page.mjs";

const [ui, runId, dirA, dirB, rounds = "4", queriesJson] = process.argv.slice(2);
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const QUERIES = queriesJson ? JSON.parse(queriesJson) : ["op_17", "Widget<3>", "ns1::", "^ns2.*op_4$"];
const KINDS = ["focus", "ignore", "hide", "search", "sandwich", "back", "sandwich_again"];
const PARAM = { search: "q", sandwich_again: "sandwich" }; // the URL parameter of a kind, where not its name
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: FLAGS });

/** A digest of the graph(s) the page shows now: every node's name, depth and weights, in order. */
function shownDigest(page) {
  return page.evaluate(() => {
    const sandwich = location.hash.includes("sandwich=") ? window.perfsleuthSandwich : null;
    const trees = sandwich ? [sandwich.callers.data, sandwich.callees.data] : [window.perfsleuthFlame.graph.data];
    let hash = 2166136261;
    const mix = (v) => (hash = Math.imul(hash ^ v, 16777619));
    for (const tree of trees) {
      mix(tree.nodes);
      for (let i = 0; i < tree.nodes; i++) {
        mix(tree.name[i]);
        mix(tree.depth[i]);
        for (const key in tree.columns) mix(tree.columns[key][i] | 0);
      }
    }
    return hash >>> 0;
  });
}

const times = { A: {}, B: {} };
const polled = { A: {}, B: {} }; // as timed before (bench/ui_bench_page.mjs filterLatency)
const cpu = { A: {}, B: {} };
const rendererCpu = { A: {}, B: {} };
for (const kinds of [times, polled, cpu, rendererCpu].flatMap(Object.values)) for (const kind of KINDS) kinds[kind] = [];
const digests = { A: [], B: [] };
for (let r = 0; r < Number(rounds); r++) {
  for (const [label, dir] of [["A", dirA], ["B", dirB]]) {
    const { context, page } = await openFrom(browser, ui, runId, dir);
    const names = await heavyNames(page, [1, 2, 3, 5, 8]);
    const filters = ["focus", "ignore", "hide", "search"].flatMap((kind) => QUERIES.map((q) => [kind, q]));
    const sandwiches = names.flatMap((n) => [["sandwich", n], ["back", ""], ["sandwich_again", n]]);
    const queries = [...filters, ...sandwiches];
    await browser.startTracing(page, { categories: ["toplevel", "blink.user_timing"] });
    for (const [kind, q] of queries) {
      const latency = await filterLatency(page, kind === "back" ? "" : `${PARAM[kind] ?? kind}=${encodeURIComponent(q)}`);
      times[label][kind].push(latency.painted);
      polled[label][kind].push(latency.polled);
      if (r === 0) digests[label].push(await shownDigest(page));
    }
    const used = threadCpu((await browser.stopTracing()).toString());
    queries.forEach(([kind], k) => {
      cpu[label][kind].push(used.main[k]);
      rendererCpu[label][kind].push(used.renderer[k]);
    });
    await context.close();
  }
}
await browser.close();
const out = { same_trees: String(digests.A) === String(digests.B) };
for (const [label, kinds] of Object.entries(times)) out[label] = Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, summary(v)]));
for (const [label, kinds] of Object.entries(polled)) out[`${label}_polled`] = Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, summary(v)]));
for (const [label, kinds] of Object.entries(cpu)) out[`${label}_main_thread_cpu`] = Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, summary(v)]));
for (const [label, kinds] of Object.entries(rendererCpu)) out[`${label}_renderer_cpu`] = Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, summary(v)]));
// Each interaction's CPU, in the order run (round by round; the filters in QUERIES' order): one slow query shows.
out.main_thread_cpu_each = Object.fromEntries(Object.entries(cpu).map(([label, kinds]) => [label, Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, v.map((ms) => Math.round(ms * 10) / 10)]))]));
out.load_average = (await import("node:os")).loadavg();
console.log(JSON.stringify(out));

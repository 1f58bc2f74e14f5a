// Browser half of bench/ui_bench.py: times the web UI's flame graph (and speedscope's)
// in Debian's Chromium through Playwright. Prints one JSON document.
// Usage: node ui_bench.mjs UI_URL RUN_ID [SPEEDSCOPE_URL] [REPORT_FILE] [QUERIES_JSON]
//        (QUERIES_JSON: the search / focus / ignore / hide expressions; default: the
//        synthetic profile's names)
//        node ui_bench.mjs --open-once UI_URL RUN_ID   (one first open, for a fresh server)
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { filterLatency, heavyNames, summary } from "./ui_bench_page.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../ui/package.json"));
const { chromium } = require("playwright-core");

const openOnce = process.argv[2] === "--open-once";
const [ui, runId, speedscopeUrl, reportFile, queriesJson] = process.argv.slice(openOnce ? 3 : 2);
const REPEATS = 3;
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: FLAGS });

async function freshPage() {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  return { context, page: await context.newPage() };
}

/** ms from navigation start to the flame graph drawn and answering input. */
async function openFlame(url) {
  const { context, page } = await freshPage();
  await page.goto(url);
  await page.waitForFunction(() => performance.getEntriesByName("flame-interactive").length > 0, null, { timeout: 120000 });
  const ms = await page.evaluate(() => performance.getEntriesByName("flame-interactive")[0].startTime);
  return { context, page, ms };
}

/** Click a frame (by depth rank) and time until the next frame is painted. */
async function zoomLatency(page, depth) {
  return page.evaluate(
    (wanted) =>
      new Promise((resolve) => {
        const g = window.perfsleuthFlame.graph;
        const d = g.drawn;
        let best = -1;
        for (let k = 0; k < d.count; k++) {
          if (g.data.depth[d.node[k]] === wanted && (best < 0 || d.w[k] > d.w[best])) best = k;
        }
        const rect = g.canvas.getBoundingClientRect();
        const start = performance.now();
        g.canvas.dispatchEvent(new MouseEvent("click", { clientX: rect.left + d.x[best] + d.w[best] / 2, clientY: rect.top + d.y[best] + 8, bubbles: true }));
        requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - start)));
      }),
    depth,
  );
}

async function searchLatency(page, query) {
  return page.evaluate(
    (q) =>
      new Promise((resolve) => {
        const input = document.querySelector("input[aria-label=search]");
        const start = performance.now();
        input.value = q;
        input.dispatchEvent(new Event("input"));
        requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - start)));
      }),
    query,
  );
}

if (openOnce) {
  const { ms } = await openFlame(`${ui}#/run/${runId}/flame`);
  await browser.close();
  console.log(JSON.stringify({ open_ms: ms }));
  process.exit(0);
}

const result = { ui: {}, speedscope: null, report: null };
const opens = [];
const zooms = [];
const searches = [];
const handlers = { zoom: [], search: [], filter: [] };
const filters = { focus: [], ignore: [], hide: [], sandwich: [] };
const polled = { focus: [], ignore: [], hide: [], sandwich: [] }; // as timed before (ui_bench_page.mjs filterLatency)
const QUERIES = queriesJson ? JSON.parse(queriesJson) : ["op_17", "Widget<3>", "ns1::", "^ns2.*op_4$"];
const FILTER_QUERIES = { focus: QUERIES, ignore: QUERIES, hide: QUERIES };
function timeFilter(kind, { painted, polled: late }) {
  filters[kind].push(painted);
  polled[kind].push(late);
}
for (let r = 0; r < REPEATS; r++) {
  const { context, page, ms } = await openFlame(`${ui}#/run/${runId}/flame`);
  opens.push(ms);
  for (const depth of [2, 4, 6, 8, 0]) zooms.push(await zoomLatency(page, depth));
  for (const q of [...QUERIES, ""]) searches.push(await searchLatency(page, q));
  result.ui.nodes = await page.evaluate(() => window.perfsleuthFlame.graph.data.nodes);
  result.ui.heap_mb = await page.evaluate(() => performance.memory?.usedJSHeapSize / 1e6);
  const sandwiches = await heavyNames(page, [1, 2, 3, 5, 8]);
  for (const [kind, queries] of Object.entries(FILTER_QUERIES)) {
    for (const q of queries) timeFilter(kind, await filterLatency(page, `${kind}=${encodeURIComponent(q)}`));
  }
  for (const name of sandwiches) timeFilter("sandwich", await filterLatency(page, `sandwich=${encodeURIComponent(name)}`));
  const timings = await page.evaluate(() => window.perfsleuthFlame.timings);
  handlers.zoom.push(...(timings.zoom ?? []));
  handlers.search.push(...(timings.search ?? []));
  handlers.filter.push(...(timings.filter ?? []));
  await context.close();
}
result.ui.open_ms = summary(opens);
result.ui.zoom_ms = summary(zooms);
result.ui.search_ms = summary(searches);
// The same interactions, counting only the JavaScript that handles them (no paint wait).
result.ui.zoom_handler_ms = summary(handlers.zoom);
result.ui.search_handler_ms = summary(handlers.search);
// focus / ignore / hide / sandwich: URL changed → the new graph painted; and the filter alone.
for (const [kind, times] of Object.entries(filters)) result.ui[`${kind}_ms`] = summary(times);
for (const [kind, times] of Object.entries(polled)) result.ui[`${kind}_polled_ms`] = summary(times);
result.ui.filter_handler_ms = summary(handlers.filter);

if (reportFile && reportFile !== "-") {
  const times = [];
  for (let r = 0; r < REPEATS; r++) {
    const { context, ms } = await openFlame(`file://${reportFile}#/run/${runId}/flame`);
    times.push(ms);
    await context.close();
  }
  result.report = { open_ms: summary(times) };
}

if (speedscopeUrl) {
  const times = [];
  for (let r = 0; r < REPEATS; r++) {
    const { context, page } = await freshPage();
    await page.goto(speedscopeUrl);
    // speedscope names the page after the profile once it is loaded and drawn.
    await page.waitForFunction(() => document.title.includes(" - speedscope") && document.querySelector("canvas"), null, { timeout: 180000, polling: 10 });
    times.push(await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())))));
    await context.close();
  }
  result.speedscope = { open_ms: summary(times) };
}

await browser.close();
console.log(JSON.stringify(result));

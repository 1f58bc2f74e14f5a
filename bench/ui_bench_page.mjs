// In-page measurements shared by bench/ui_bench.mjs, bench/ui_ab.mjs and bench/ui_trace.mjs.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const { chromium } = createRequire(path.join(here, "../ui/package.json"))("playwright-core");
const TYPES = { ".js": "text/javascript", ".css": "text/css", ".html": "text/html" };

/** A page of BROWSER whose UI files come from DIR (a `vite build --outDir DIR`) and whose API calls go to the server at UI, on RUN_ID's flame graph. */
export async function openFrom(browser, ui, runId, dir) {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  await context.route(`${ui}**`, (route) => {
    const file = new URL(route.request().url()).pathname.replace(/^\/$/, "/index.html");
    if (file.startsWith("/api/")) return route.continue();
    return route.fulfill({ body: readFileSync(path.join(dir, file)), contentType: TYPES[path.extname(file)] });
  });
  const page = await context.newPage();
  await page.goto(`${ui}#/run/${runId}/flame`);
  await page.waitForFunction(() => performance.getEntriesByName("flame-interactive").length > 0, null, { timeout: 120000 });
  return { context, page };
}

/**
 * Put focus / ignore / hide / sandwich QUERY in the URL and time until the new graph is
 * painted: after the page's flame-interactive mark (or the sandwich's graphs replaced).
 * Marks filter-start, filter-drawn (the page's JavaScript has drawn the graph) and
 * filter-end, for a trace to find the interaction by.
 */
export async function filterLatency(page, query) {
  return page.evaluate(
    (q) =>
      new Promise((resolve) => {
        const marks = performance.getEntriesByName("flame-interactive").length;
        const sandwich = window.perfsleuthSandwich;
        performance.mark("filter-start");
        const start = performance.now();
        location.hash = `${location.hash.split("?")[0]}?${q}`;
        const poll = () => {
          const drawn = performance.getEntriesByName("flame-interactive").length > marks || window.perfsleuthSandwich !== sandwich;
          const painted = () => {
            const ms = performance.now() - start;
            performance.mark("filter-end");
            resolve(ms);
          };
          if (drawn) {
            performance.mark("filter-drawn");
            requestAnimationFrame(() => requestAnimationFrame(painted));
          }
          else setTimeout(poll, 1);
        };
        poll();
      }),
    query,
  );
}

/** The names of the heaviest frame at each of DEPTHS (sandwich targets a user would pick). */
export async function heavyNames(page, depths) {
  return page.evaluate((wanted) => {
    const { data } = window.perfsleuthFlame.graph;
    return wanted.map((d) => {
      let best = -1;
      for (let i = 1; i < data.nodes; i++) if (data.depth[i] === d && (best < 0 || data.columns.total[i] > data.columns.total[best])) best = i;
      return data.names[data.name[best]];
    });
  }, depths);
}

/**
 * CPU time of the page's main thread (the renderer's) in each filter-start … filter-end
 * window of a Chromium trace, in ms: the work an interaction costs, which the machine's
 * load stretches far less than the latency.
 */
export function mainThreadCpu(trace) {
  const events = JSON.parse(trace).traceEvents;
  const threadOf = (e) => `${e.pid}.${e.tid}`;
  const counts = new Map();
  for (const e of events) {
    if (e.ph === "M" && e.name === "thread_name" && e.args.name === "CrRendererMain") counts.set(threadOf(e), 0);
  }
  for (const e of events) if (counts.has(threadOf(e))) counts.set(threadOf(e), counts.get(threadOf(e)) + 1);
  const main = [...counts].sort((a, b) => b[1] - a[1])[0][0];
  const tasks = events.filter((e) => e.ph === "X" && threadOf(e) === main && e.name === "ThreadControllerImpl::RunTask").sort((a, b) => a.ts - b.ts);
  const marks = events.filter((e) => e.name === "filter-start" || e.name === "filter-end").sort((a, b) => a.ts - b.ts);
  const windows = [];
  for (let k = 0; k + 1 < marks.length; k++) if (marks[k].name === "filter-start" && marks[k + 1].name === "filter-end") windows.push([marks[k].ts, marks[k + 1].ts]);
  return windows.map(([from, to]) => {
    let cpu = 0;
    for (const t of tasks) if (t.ts >= from && t.ts < to) cpu += t.tdur ?? t.dur;
    return cpu / 1000;
  });
}

export function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { n: values.length, median: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

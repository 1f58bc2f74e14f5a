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
 * painted, two ways, in ms:
 * - painted: two animation frames after the task that drew it (as zoom and search are timed:
 *   the first runs before the frame that shows the drawing, the second after it), counted
 *   from the page's flame-interactive mark (or the sandwich's graphs replaced) as it is made;
 * - polled: two animation frames after a 1 ms poll first sees the mark, as this bench timed
 *   it before: up to a frame late when the poll runs after the frame that showed the
 *   drawing, and later still when a loaded machine delays the poll's timer.
 * Marks filter-start, filter-drawn (the poll saw the drawing) and filter-end (both done),
 * for a trace to find the interaction by.
 */
export async function filterLatency(page, query) {
  return page.evaluate(
    (q) =>
      new Promise((resolve) => {
        if (!window.benchDrawHook) {
          // Called in the task that drew: the page's mark, or its sandwich replaced.
          window.benchDrawHook = true;
          const mark = performance.mark.bind(performance);
          performance.mark = (name, options) => {
            const entry = mark(name, options);
            if (name === "flame-interactive") window.benchOnDrawn?.();
            return entry;
          };
          let sandwich = window.perfsleuthSandwich;
          Object.defineProperty(window, "perfsleuthSandwich", {
            configurable: true,
            get: () => sandwich,
            set: (value) => {
              sandwich = value;
              window.benchOnDrawn?.();
            },
          });
        }
        const times = { painted: null, polled: null };
        const finish = () => {
          if (times.painted === null || times.polled === null) return;
          window.benchOnDrawn = null;
          performance.mark("filter-end");
          resolve(times);
        };
        const marks = performance.getEntriesByName("flame-interactive").length;
        const sandwich = window.perfsleuthSandwich;
        performance.mark("filter-start");
        const start = performance.now();
        window.benchOnDrawn = () => {
          window.benchOnDrawn = null;
          requestAnimationFrame(() => requestAnimationFrame(() => {
            times.painted = performance.now() - start;
            finish();
          }));
        };
        location.hash = `${location.hash.split("?")[0]}?${q}`;
        const poll = () => {
          const drawn = performance.getEntriesByName("flame-interactive").length > marks || window.perfsleuthSandwich !== sandwich;
          if (!drawn) return setTimeout(poll, 1);
          performance.mark("filter-drawn");
          requestAnimationFrame(() => requestAnimationFrame(() => {
            times.polled = performance.now() - start;
            finish();
          }));
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
 * `main`: CPU time of the page's main thread (the renderer's) in each filter-start … filter-end
 * window of a Chromium trace, in ms: the work an interaction costs, which the machine's
 * load stretches far less than the latency. `renderer`: the CPU of all the renderer's
 * threads in the same windows (with V8's background compiles and GC marking, and raster),
 * which compete with the main thread for a loaded machine's cores.
 */
export function threadCpu(trace) {
  const events = JSON.parse(trace).traceEvents;
  const threadOf = (e) => `${e.pid}.${e.tid}`;
  const counts = new Map();
  for (const e of events) {
    if (e.ph === "M" && e.name === "thread_name" && e.args.name === "CrRendererMain") counts.set(threadOf(e), 0);
  }
  for (const e of events) if (counts.has(threadOf(e))) counts.set(threadOf(e), counts.get(threadOf(e)) + 1);
  const main = [...counts].sort((a, b) => b[1] - a[1])[0][0];
  const rendererPid = Number(main.split(".")[0]);
  const topLevel = (e) => e.ph === "X" && (e.name === "ThreadControllerImpl::RunTask" || e.name === "ThreadPool_RunTask");
  const tasks = events.filter((e) => topLevel(e) && threadOf(e) === main).sort((a, b) => a.ts - b.ts);
  const rendererTasks = events.filter((e) => topLevel(e) && e.pid === rendererPid);
  const marks = events.filter((e) => e.name === "filter-start" || e.name === "filter-end").sort((a, b) => a.ts - b.ts);
  const windows = [];
  for (let k = 0; k + 1 < marks.length; k++) if (marks[k].name === "filter-start" && marks[k + 1].name === "filter-end") windows.push([marks[k].ts, marks[k + 1].ts]);
  const cpuIn = (list, [from, to]) => {
    let cpu = 0;
    for (const t of list) if (t.ts >= from && t.ts < to) cpu += t.tdur ?? t.dur;
    return cpu / 1000;
  };
  return { main: windows.map((w) => cpuIn(tasks, w)), renderer: windows.map((w) => cpuIn(rendererTasks, w)) };
}

export function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { n: values.length, median: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

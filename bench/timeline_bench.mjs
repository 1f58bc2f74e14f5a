// Browser half of bench/timeline_bench.py: the flame page's time order (and speedscope's)
// in Debian's Chromium through Playwright. Prints one JSON document.
// Usage: node timeline_bench.mjs UI_URL RUN_ID SPEEDSCOPE_URL
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../ui/package.json"));
const { chromium } = require("playwright-core");

const [ui, runId, speedscopeUrl] = process.argv.slice(2);
const REPEATS = 3;
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: FLAGS });

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return { n: sorted.length, median: sorted[sorted.length >> 1], p95: sorted[Math.min(sorted.length - 1, Math.floor(0.95 * sorted.length))], max: sorted.at(-1) };
}

async function open(url) {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForFunction(() => performance.getEntriesByName("flame-interactive").length > 0, null, { timeout: 180000 });
  const ms = await page.evaluate(() => performance.getEntriesByName("flame-interactive")[0].startTime);
  return { context, page, ms };
}

/** ms from a key on the chart to the next frame painted. */
function keyLatency(page, key) {
  return page.evaluate(
    (k) =>
      new Promise((resolve) => {
        const canvas = window.perfsleuthTimeline.canvas;
        const start = performance.now();
        canvas.dispatchEvent(new KeyboardEvent("keydown", { key: k, bubbles: true }));
        requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - start)));
      }),
    key,
  );
}

const result = { time_order: {}, graph: {}, speedscope: {} };
const opens = [];
const zooms = [];
const outs = [];
const painted = [];
for (let r = 0; r < REPEATS; r++) {
  const { context, page, ms } = await open(`${ui}#/run/${runId}/flame?chart=time`);
  opens.push(ms);
  painted.push(await page.evaluate(() => window.perfsleuthTimeline.painted));
  for (let k = 0; k < 5; k++) {
    await keyLatency(page, "ArrowDown"); // the cursor one row deeper each time
    zooms.push(await keyLatency(page, "Enter"));
    outs.push(await keyLatency(page, "Escape"));
  }
  await context.close();
}
result.time_order = { open_ms: summary(opens), zoom_ms: summary(zooms), zoom_out_ms: summary(outs), bars_painted: painted[0] };
const graphOpens = [];
for (let r = 0; r < REPEATS; r++) {
  const { context, ms } = await open(`${ui}#/run/${runId}/flame`);
  graphOpens.push(ms);
  await context.close();
}
result.graph = { open_ms: summary(graphOpens) };
const times = [];
for (let r = 0; r < REPEATS; r++) {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const page = await context.newPage();
  await page.goto(speedscopeUrl);
  // speedscope names the page after the profile once it is loaded and drawn (time order first).
  await page.waitForFunction(() => document.title.includes(" - speedscope") && document.querySelector("canvas"), null, { timeout: 300000, polling: 10 });
  times.push(await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())))));
  await context.close();
}
result.speedscope = { open_ms: summary(times) };
await browser.close();
console.log(JSON.stringify(result));

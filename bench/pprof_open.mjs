// Browser half of bench/ui_deep_bench.py for `go tool pprof -http`: opens its flame graph
// page (/ui/flamegraph) in Debian's Chromium through Playwright, times navigation until the
// boxes are drawn, then a click on the widest frame of a few depths until painted.
// Usage: node pprof_open.mjs URL ROUNDS   Prints one JSON document.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { summary } from "./ui_bench_page.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../ui/package.json"));
const { chromium } = require("playwright-core");

const [url, rounds] = process.argv.slice(2);
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: FLAGS });

/** Click the widest box ROWS rows below the top (pprof draws the root on top) and wait two frames. */
async function zoomLatency(page, rows) {
  return page.evaluate(
    (wanted) =>
      new Promise((resolve) => {
        const boxes = [...document.querySelectorAll("#stack-holder .boxbg")];
        const ys = [...new Set(boxes.map((b) => b.getBoundingClientRect().top))].sort((a, b) => a - b);
        const row = boxes.filter((b) => b.getBoundingClientRect().top === ys[Math.min(wanted, ys.length - 1)]);
        const widest = row.reduce((a, b) => (b.getBoundingClientRect().width > a.getBoundingClientRect().width ? b : a));
        const start = performance.now();
        widest.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - start)));
      }),
    rows,
  );
}

const opens = [];
const zooms = [];
let boxes = 0;
for (let r = 0; r < Number(rounds); r++) {
  const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
  const page = await context.newPage();
  await page.goto(url, { timeout: 300000 });
  await page.waitForFunction(() => document.querySelectorAll("#stack-holder .boxbg").length > 0, null, { timeout: 300000, polling: 10 });
  opens.push(await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => resolve(performance.now())))));
  boxes = await page.evaluate(() => document.querySelectorAll("#stack-holder .boxbg").length);
  for (const rows of [2, 4, 6, 8]) zooms.push(await zoomLatency(page, rows));
  await context.close();
}
await browser.close();
console.log(JSON.stringify({ open_ms: summary(opens), zoom_ms: summary(zooms), boxes }));

// The Cache page in Debian's Chromium, driven by Playwright.
// Usage: node cache_flow.mjs BASE_URL ARTIFACT_DIR CACHE_RUN PLAIN_RUN SCALE_RUN REPORT_FILE
// Prints one JSON line per flow: {"flow", "ok", "error", "shown"}; `shown` is what the
// page drew, which tests/e2e/test_ui_cache.py compares with `perfsleuth cache show`.
import assert from "node:assert/strict";
import { runFlows, seriousViolations, urlMatching } from "./run_flows.mjs";

const [base, artifacts, cacheRun, plainRun, scaleRun, reportFile] = process.argv.slice(2);

/** [r, g, b] of a computed `rgb(...)`/`rgba(...)` colour. */
function channels(colour) {
  return colour.match(/[\d.]+/g).slice(0, 3).map(Number);
}

/** Line number, hot or cold, and the hot and cold fields of each drawn cache line of the first layout. */
function drawnLines(layout) {
  return layout.locator(".cache-line").evaluateAll((els) =>
    els.map((el) => ({
      line: Number(el.dataset.line),
      state: el.classList.contains("hot") ? "hot" : "cold",
      hot: [...el.querySelectorAll("tr.field.hot")].map((r) => r.dataset.field),
      cold: [...el.querySelectorAll("tr.field.cold")].map((r) => r.dataset.field),
      border: getComputedStyle(el).borderTopStyle,
    })),
  );
}

const flows = {
  async cache_layout(page) {
    await page.goto(`${base}#/run/${cacheRun}`);
    await page.locator("#nav a", { hasText: "Cache" }).click();
    // The first layout is the struct handle_packet's pointer parameter points to.
    const layout = page.locator(".cache-layout").first();
    await layout.locator(".cache-line").first().waitFor();
    await urlMatching(page, new RegExp(`#/run/${cacheRun}/cache$`));
    assert.match(await layout.locator("h3").innerText(), /^Struct layout of \*c: struct conn, 320 B, 5 cache lines/);
    const lines = await drawnLines(layout);
    const colour = async (selector) => channels(await layout.locator(selector).first().evaluate((el) => getComputedStyle(el).backgroundColor));
    const [hotR, , hotB] = await colour(".cache-line[data-line='4'] .seg.hot");
    const [coldR, , coldB] = await colour(".cache-line[data-line='4'] .seg.cold");
    assert.ok(hotR > hotB && coldB > coldR, `hot drawn warm, cold drawn cool: ${[hotR, hotB, coldR, coldB]}`);
    assert.match(await layout.locator(".cache-line[data-line='4'] .seg.hot").innerText(), /^last_ack$/);
    const model = await page.locator("table.levels tbody tr").evaluateAll((rows) =>
      rows.map((r) => [r.dataset.level, ...[...r.querySelectorAll("td")].map((td) => td.innerText)]),
    );

    await page.screenshot({ path: `${artifacts}/cache-layout.png`, fullPage: true });
    return { lines, model, reorder: await layout.locator(".reorder").innerText() };
  },

  async scaling(page) {
    await page.goto(`${base}#/run/${scaleRun}/cache`);
    await page.locator(".cache-scaling table.cliffs").waitFor();
    const tlb = await page.locator(".cache-scaling table.cliffs tr.tlb-cliff").innerText();
    const cliffs = await page.locator(".cache-scaling table.cliffs tbody tr:not(.tlb-cliff)").evaluateAll((rows) =>
      rows.map((r) => ({
        level: r.dataset.level,
        capacity: r.querySelectorAll("td")[0].innerText,
        at: r.querySelectorAll("td")[1].innerText,
        flagged: r.classList.contains("in-range"),
      })),
    );
    const runs = await page.locator(".cache-scaling table.scaling-runs tbody tr").count();
    await page.locator(".cache-scaling").screenshot({ path: `${artifacts}/cache-scaling.png` });
    const plot = { dots: await page.locator(".scaling-plot circle").count(), cliffs: await page.locator(".scaling-plot .scale-cliff").count() };
    return { cliffs, tlb, runs, plot };
  },

  async report(page) {
    const remote = [];
    page.on("request", (r) => {
      if (!/^(file|data|blob):/.test(r.url())) remote.push(r.url());
    });
    await page.goto(`file://${reportFile}#/run/${cacheRun}/cache`);
    const layout = page.locator(".cache-layout").first();
    await layout.locator(".cache-line").first().waitFor();
    assert.deepEqual(remote, []);
    return { lines: await drawnLines(layout) };
  },

  async no_cache_data(page) {
    await page.goto(`${base}#/run/${plainRun}`);
    await page.locator("h1", { hasText: `Run ${plainRun}` }).waitFor();
    await page.locator("#nav a", { hasText: "Findings" }).waitFor();
    const nav = await page.locator("#nav a").allInnerTexts();
    await page.goto(`${base}#/run/${plainRun}/cache`);
    const text = await page.locator(".no-cache-data").innerText();
    const api = await page.evaluate(async (run) => {
      const r = await fetch(`/api/runs/${run}/cache`);
      return { status: r.status, body: await r.json() };
    }, plainRun);
    await page.screenshot({ path: `${artifacts}/cache-none.png`, fullPage: true });
    return { nav, text, api };
  },
};

flows.cache_accessibility = async (page) => {
  const found = [];
  for (const run of [cacheRun, scaleRun]) found.push(...(await seriousViolations(page, `${base}#/run/${run}/cache`, ".cache-function")));
  return found;
};

await runFlows(flows, Object.keys(flows), artifacts);

// The flame page's time order, in Debian's Chromium (Playwright).
// Usage: node timeline_flow.mjs BASE_URL ARTIFACT_DIR RUN FOLDED_RUN
// Prints one JSON line per flow: {"flow", "ok", "error", "shown"}; `shown` is what the
// page drew, which tests/e2e/test_ui_timeline.py compares with the stored run.
import assert from "node:assert/strict";
import { runFlows, seriousViolations, urlMatching, urlNotMatching } from "./run_flows.mjs";

const [base, artifacts, run, foldedRun] = process.argv.slice(2);
const RANGE = /range=(\d+)-(\d+)/;

const info = (page) => page.locator(".time-info").innerText();
const chart = (page) => page.evaluate(() => ({ v0: window.perfsleuthTimeline.v0, v1: window.perfsleuthTimeline.v1, painted: window.perfsleuthTimeline.painted, depth: window.perfsleuthTimeline.depth, width: window.perfsleuthTimeline.canvas.getBoundingClientRect().width }));

const flows = {
  async time_order(page) {
    await page.goto(`${base}#/run/${run}/flame`);
    await page.locator("a.chip", { hasText: "time order" }).click();
    await page.locator("canvas.time-chart").waitFor();
    await urlMatching(page, /chart=time/);
    const whole = { info: await info(page), chart: await chart(page) };
    assert.ok(whole.chart.painted > 0 && whole.chart.depth > 2, `bars painted: ${JSON.stringify(whole.chart)}`);
    await page.screenshot({ path: `${artifacts}/flame-time-order.png`, fullPage: false });

    // The mouse: a tooltip on a bar of the top row, then a click zooms to it.
    const canvas = page.locator("canvas.time-chart");
    await canvas.hover({ position: { x: 40, y: 27 } }); // the top row, under the time axis
    const tip = await page.locator(".flame-tip").innerText();
    assert.match(tip, /samples in a row \([\d.]+% of the run\)\nfrom [\d.]+ (s|ms|µs) after the first sample/);

    // The keyboard: the first arrow puts the cursor on the top row; down one row, along
    // it, and Enter zooms to that frame.
    await canvas.focus();
    for (const key of ["ArrowDown", "ArrowDown", "ArrowRight", "Enter"]) await page.keyboard.press(key);
    const [, a, b] = (await urlMatching(page, RANGE)).match(RANGE);
    const zoomed = { info: await info(page), chart: await chart(page), details: await page.locator(".frame-details").innerText(), url: [Number(a), Number(b)] };
    assert.deepEqual(zoomed.url, [Math.round(zoomed.chart.v0), Math.round(zoomed.chart.v1)]);
    await page.screenshot({ path: `${artifacts}/flame-time-order-zoomed.png`, fullPage: false });

    await page.keyboard.press("Escape");
    await urlNotMatching(page, RANGE);
    const reset = await info(page);

    // A range in a shared URL is where the page opens; at 900 px the chart fits the window.
    await page.setViewportSize({ width: 900, height: 800 });
    await page.goto(`${base}#/run/${run}/flame?chart=time&range=10-50`);
    await page.locator("canvas.time-chart").waitFor();
    const shared = { info: await info(page), chart: await chart(page) };
    const api = await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}`)).json()).samples, run);
    return { whole, tip, zoomed, reset, shared, api };
  },

  /** The minimap: a drag across a fifth of it shows that fifth; a click then centres the span there. */
  async minimap(page) {
    await page.goto(`${base}#/run/${run}/flame?chart=time`);
    await page.locator("canvas.time-minimap").waitFor();
    // The whole run is shown: nothing is shaded, so what is drawn is the miniature's bars.
    const painted = await page.evaluate(() => {
      const c = window.perfsleuthMinimap.canvas;
      const pixels = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let opaque = 0;
      for (let k = 3; k < pixels.length; k += 4) if (pixels[k] > 0) opaque++;
      return opaque / (c.width * c.height);
    });
    const box = await page.locator("canvas.time-minimap").boundingBox();
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + 0.2 * box.width, y);
    await page.mouse.down();
    await page.mouse.move(box.x + 0.3 * box.width, y, { steps: 4 });
    await page.mouse.move(box.x + 0.4 * box.width, y, { steps: 4 });
    await page.mouse.up();
    const [, a, b] = (await urlMatching(page, RANGE)).match(RANGE);
    const dragged = { url: [Number(a), Number(b)], info: await info(page) };
    await page.mouse.click(box.x + 0.8 * box.width, y);
    await page.waitForFunction((before) => document.querySelector(".time-info")?.textContent !== before, dragged.info);
    const clicked = await info(page);
    return { width: box.width, dragged, clicked, painted };
  },

  async thread_filter(page) {
    await page.goto(`${base}#/run/${run}/flame?chart=time`);
    await page.locator("canvas.time-chart").waitFor();
    const all = await info(page);
    const options = await page.locator("select[aria-label='threads'] option").evaluateAll((os) => os.map((o) => o.value).filter(Boolean));
    await page.locator("select[aria-label='threads']").selectOption(options[0]);
    await page.waitForFunction((before) => document.querySelector(".time-info")?.textContent !== before, all);
    await urlMatching(page, new RegExp(`thread=${options[0]}`));
    await urlMatching(page, /chart=time/);
    return { thread: options[0], info: await info(page), all };
  },

  /** Per-thread lanes: one per thread, heaviest first, sharing the range; axe on them. */
  async lanes(page) {
    await page.goto(`${base}#/run/${run}/flame?chart=time`);
    await page.locator("a.chip", { hasText: "lanes" }).click();
    await urlMatching(page, /chart=lanes/);
    await page.locator("canvas.time-chart").first().waitFor();
    const lanes = await page.evaluate(() => window.perfsleuthLanes.map((c) => ({ samples: c.timeline.samples, painted: c.painted, depth: c.depth, v0: c.v0, v1: c.v1, extent: c.timeline.extent })));
    const labels = await page.locator(".lane-label").allInnerTexts();
    await page.screenshot({ path: `${artifacts}/flame-time-lanes.png`, fullPage: true });
    // The keyboard on the heaviest lane: its first bar of the top row, Enter zooms every lane to its time.
    await page.locator("canvas.time-chart").first().focus();
    for (const key of ["ArrowRight", "Enter"]) await page.keyboard.press(key);
    const [, a, b] = (await urlMatching(page, RANGE)).match(RANGE);
    const zoomed = await page.evaluate(() => window.perfsleuthLanes.map((c) => [c.v0, c.v1]));
    const found = await seriousViolations(page, `${base}#/run/${run}/flame?chart=lanes`, "canvas.time-chart");
    return { lanes, labels, info: await info(page), url: [Number(a), Number(b)], zoomed, accessibility: found };
  },

  async no_time_order(page) {
    await page.goto(`${base}#/run/${foldedRun}/flame`);
    await page.locator("a.chip", { hasText: "time order" }).click();
    const text = await page.locator(".no-timeline").innerText();
    await page.screenshot({ path: `${artifacts}/flame-time-order-none.png`, fullPage: false });
    return { text };
  },

  /** axe-core on the time order, light and dark: no serious violation. */
  async accessibility(page) {
    const found = await seriousViolations(page, `${base}#/run/${run}/flame?chart=time`, "canvas.time-chart");
    assert.deepEqual(found, [], "no serious or critical accessibility violation");
    return found;
  },

  /** Last, as it stores findings: the folded run, not advised, is advised from its findings page. */
  async advise_from_page(page) {
    await page.goto(`${base}#/run/${foldedRun}/findings`);
    const button = page.locator("button.advise-now");
    const before = await page.locator(".advise").innerText();
    const accessibility = await seriousViolations(page, `${base}#/run/${foldedRun}/findings`, "button.advise-now");
    await button.click();
    await page.locator("button.advise-now").waitFor({ state: "detached", timeout: 120000 });
    const after = await page.locator("main").innerText();
    await page.screenshot({ path: `${artifacts}/findings-advised-from-page.png`, fullPage: false });
    const api = await page.evaluate(async (id) => (await (await fetch(`/api/runs/${id}/findings`)).json()).advised, foldedRun);
    return { before, after, advised: api, accessibility };
  },
};

await runFlows(flows, Object.keys(flows), artifacts);

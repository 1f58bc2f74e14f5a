// The UI on a deep real profile (a g++ compile with DWARF stacks), in Debian's Chromium
// (Playwright). Usage: node real_profile_flow.mjs BASE_URL ARTIFACT_DIR RUN
// Prints one JSON line per flow: {"flow", "ok", "error", "shown"}.
import assert from "node:assert/strict";
import { runFlows, urlMatching } from "./run_flows.mjs";

const [base, artifacts, run] = process.argv.slice(2);
const ROW = 18;

/** Where the flame graph's root row is drawn, and how deep the profile is. */
const rootPlace = (page) =>
  page.evaluate(() => {
    const graph = window.perfsleuthFlame.graph;
    const box = graph.canvas.getBoundingClientRect();
    const icicle = document.querySelector("label.toggle input").checked;
    return { top: icicle ? box.top : box.bottom - 18, canvasHeight: box.height, viewport: window.innerHeight, maxDepth: graph.data.maxDepth, icicle };
  });

const flows = {
  async deep_flame_opens_on_its_root(page) {
    await page.goto(`${base}#/run/${run}/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    const opened = await rootPlace(page);
    await page.screenshot({ path: `${artifacts}/deep-flame-first-screen.png` });
    assert.ok(opened.maxDepth * ROW > opened.viewport, `a profile deeper than the screen: ${JSON.stringify(opened)}`);
    assert.ok(opened.icicle, "a deep graph opens root on top");
    assert.ok(opened.top >= 0 && opened.top + 6 * ROW <= opened.viewport, `the root and five levels under it on the first screen: ${JSON.stringify(opened)}`);
    // The user's choice wins over the default, and is kept in the URL.
    await page.locator("label.toggle", { hasText: "icicle" }).locator("input").uncheck();
    await urlMatching(page, /view=flame/);
    const flame = await rootPlace(page);
    assert.equal(flame.icicle, false);
    assert.ok(flame.canvasHeight <= (opened.maxDepth + 1) * ROW, "the canvas is no taller than the stacks drawn");
    await page.reload();
    await page.locator("canvas.flame-canvas").waitFor();
    assert.equal((await rootPlace(page)).icicle, false, "view=flame is kept on reload");
    return { opened, flame };
  },

  async phone_layout(page) {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}#/run/${run}/top`);
    await page.locator("table.data td a.fn").first().waitFor();
    await page.screenshot({ path: `${artifacts}/phone-top.png` });
    const shown = await page.evaluate(() => {
      const header = document.getElementById("top").getBoundingClientRect().height;
      const cells = [...document.querySelectorAll("table.data td a.fn")].slice(0, 20);
      const oneLine = cells.filter((a) => a.getClientRects().length === 1 && a.getBoundingClientRect().height < 24).length;
      return { header, pageWidth: document.documentElement.scrollWidth, cells: cells.length, oneLine };
    });
    assert.ok(shown.header < 90, `the header takes at most two lines: ${shown.header}px`);
    assert.ok(shown.pageWidth <= 390, `the page does not scroll sideways: ${shown.pageWidth}px`);
    assert.equal(shown.oneLine, shown.cells, "names are not broken mid-word");
    return shown;
  },
};

await runFlows(flows, Object.keys(flows), artifacts);

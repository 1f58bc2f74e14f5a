// The UI on a deep real profile (a g++ compile of two units with DWARF stacks), in Debian's Chromium
// (Playwright). Usage: node real_profile_flow.mjs BASE_URL ARTIFACT_DIR RUN PLAIN PRELOADED
// (PLAIN and PRELOADED: a program's run and its run under `env LD_PRELOAD=…`).
// Prints one JSON line per flow: {"flow", "ok", "error", "shown"}.
import assert from "node:assert/strict";
import { runFlows, urlMatching } from "./run_flows.mjs";

const [base, artifacts, run, plain, preloaded] = process.argv.slice(2);
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
    // g++ runs a cc1plus per unit: each process is a level of its own, and the thread picker
    // lists threads under their process.
    const processes = await page.evaluate(() => {
      const { data } = window.perfsleuthFlame.graph;
      const out = [];
      for (let i = 1; i < data.nodes; i++) if (data.depth[i] === 1) out.push({ name: data.names[data.name[i]], kind: data.kind[data.name[i]] });
      return out;
    });
    assert.ok(processes.length >= 2 && processes.every((p) => p.kind === 4), `processes under the root: ${JSON.stringify(processes)}`);
    assert.ok(processes.some((p) => /^cc1plus \(\d+\)$/.test(p.name)), JSON.stringify(processes));
    const groups = await page.locator("select[aria-label=threads] optgroup").evaluateAll((g) => g.map((x) => x.label));
    assert.ok(groups.some((g) => /^process cc1plus \(\d+\)$/.test(g)), JSON.stringify(groups));
    // The user's choice wins over the default, and is kept in the URL.
    await page.locator("label.toggle", { hasText: "icicle" }).locator("input").uncheck();
    await urlMatching(page, /view=flame/);
    const flame = await rootPlace(page);
    assert.equal(flame.icicle, false);
    assert.ok(flame.canvasHeight <= (opened.maxDepth + 1) * ROW, "the canvas is no taller than the stacks drawn");
    await page.reload();
    await page.locator("canvas.flame-canvas").waitFor();
    assert.equal((await rootPlace(page)).icicle, false, "view=flame is kept on reload");
    return { opened, flame, processes };
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

/** The weight range the canvas shows, from the graph's own drawing of the root. */
const viewOf = (page) => page.evaluate(() => ({ ...window.perfsleuthFlame.graph.extent(), total: window.perfsleuthFlame.graph.options.width[0] }));

flows.wheel_drag_and_matches = async (page) => {
  await page.goto(`${base}#/run/${run}/flame`);
  const canvas = page.locator("canvas.flame-canvas");
  await canvas.waitFor();
  const box = await canvas.boundingBox();
  const whole = await viewOf(page);
  // Ctrl+wheel zooms around the pointer: the weight under it stays under it.
  await page.mouse.move(box.x + box.width * 0.25, box.y + 10);
  await page.keyboard.down("Control");
  await page.mouse.wheel(0, -400);
  await page.keyboard.up("Control");
  const zoomed = await viewOf(page);
  assert.ok(zoomed.span < whole.span * 0.6, `zoomed in: ${JSON.stringify({ whole, zoomed })}`);
  const under = (v) => v.left + 0.25 * v.span;
  assert.ok(Math.abs(under(zoomed) - under(whole)) < whole.span * 0.01, "the pointer's weight stays under it");
  // Dragging pans without zooming into the frame under the pointer.
  await page.mouse.move(box.x + box.width * 0.5, box.y + 10);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.3, box.y + 10, { steps: 5 });
  await page.mouse.up();
  const panned = await viewOf(page);
  assert.ok(panned.left > zoomed.left && Math.abs(panned.span - zoomed.span) < 1e-6 * whole.span, `panned right: ${JSON.stringify({ zoomed, panned })}`);
  assert.doesNotMatch(page.url(), /zoom=/, "a drag is no click");
  // Enter in the search box steps through the matches, zooming to each.
  await page.fill("input[aria-label=search]", "malloc");
  await page.locator(".search-info", { hasText: "match" }).waitFor();
  await page.press("input[aria-label=search]", "Enter");
  const first = await urlMatching(page, /zoom=(\d+)/);
  await page.locator("button[aria-label='next match']").click();
  const firstNode = first.match(/zoom=(\d+)/)[1];
  const second = await urlMatching(page, new RegExp(`zoom=(?!${firstNode}\\b)\\d+`));
  const details = await page.locator(".frame-details strong").innerText();
  assert.match(details, /malloc/i, "the zoomed frame is a match");
  return { whole, zoomed, panned, steps: [first, second] };
};

flows.compare_the_proposed_ab = async (page) => {
  await page.goto(`${base}#/compare`);
  await page.locator("select[aria-label=before]").waitFor();
  const pair = { before: await page.inputValue("select[aria-label=before]"), after: await page.inputValue("select[aria-label=after]") };
  assert.deepEqual(pair, { before: plain, after: preloaded }, "the newest recorded pair, not the imports made after them");
  const options = await page.locator("select[aria-label=before] option").allInnerTexts();
  const gcc = options.find((o) => o.startsWith(`run ${run}:`));
  assert.match(gcc, /not comparable, it ran sh, run \d+ ran map_alloc$/);
  await page.locator("button", { hasText: "Compare" }).click();
  await page.locator("table.changes").waitFor();
  return { pair, gcc };
};

await runFlows(flows, Object.keys(flows), artifacts);

// Browser flows through the web UI, driven by Playwright in Debian's Chromium.
// Usage: node flows.mjs BASE_URL REPORT_FILE ARTIFACT_DIR TOKEN_SERVER_URL TOKEN SINGLE_RUN_REPORT
// Prints one JSON line per flow: {"flow", "ok", "error"}; tests/e2e/test_ui.py reads them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { inflateSync } from "node:zlib";
import { runFlows, urlMatching, urlNotMatching } from "./run_flows.mjs";

const [base, reportFile, artifacts, tokenBase, token, singleReport, flameFile] = process.argv.slice(2);
const HOSTILE = "operator<<<script>alert(1)</script>";
const NAMES = JSON.parse(readFileSync(new URL("./names.json", import.meta.url), "utf8"));
const AXE = createRequire(new URL("../../ui/package.json", import.meta.url)).resolve("axe-core/axe.min.js");
const A11Y_PAGES = [
  "#/",
  "#/run/2",
  "#/run/2/top",
  "#/run/2/flame",
  "#/run/2/flame?sandwich=compute_hot",
  "#/run/2/threads",
  "#/run/2/findings",
  "#/run/2/source?file=src/engine.cc",
  "#/run/2/callgraph?function=compute_hot",
  "#/compare",
  "#/compare?a=1&b=2",
  "#/experiments",
];

/** Centre of the drawn flame-graph frame named NAME, in page coordinates. */
async function framePoint(page, name) {
  const point = await page.evaluate((wanted) => {
    const g = window.perfsleuthFlame.graph;
    const d = g.drawn;
    for (let k = 0; k < d.count; k++) {
      const node = d.node[k];
      if (node > 0 && g.data.names[g.data.name[node]] === wanted) return { x: d.x[k] + d.w[k] / 2, y: d.y[k] + 8 };
    }
    return null;
  }, name);
  assert.ok(point, `frame ${name} is drawn`);
  const box = await page.locator("canvas.flame-canvas").boundingBox();
  return { x: box.x + point.x, y: box.y + point.y };
}

/** The colour painted at a page point of the flame-graph canvas, as [r, g, b]. */
async function pixelAt(page, point) {
  const box = await page.locator("canvas.flame-canvas").boundingBox();
  return page.evaluate(
    ([x, y]) => {
      const canvas = document.querySelector("canvas.flame-canvas");
      const dpr = window.devicePixelRatio || 1;
      return Array.from(canvas.getContext("2d").getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data.slice(0, 3));
    },
    [point.x - box.x, point.y - box.y],
  );
}

/**
 * The colour the screen shows near a frame's bottom-left corner (clear of its label) and
 * the colour the canvas's bitmap holds there: a canvas whose bitmap is taller than the graph must
 * show its top part at its own scale (style.css: object-fit).
 */
async function shownAndPainted(page, name) {
  const corner = await page.evaluate((wanted) => {
    const g = window.perfsleuthFlame.graph;
    const d = g.drawn;
    for (let k = 0; k < d.count; k++) if (d.node[k] > 0 && g.data.names[g.data.name[d.node[k]]] === wanted) return { x: d.x[k] + 1, y: d.y[k] + 15 };
    return null;
  }, name);
  assert.ok(corner, `frame ${name} is drawn`);
  const box = await page.locator("canvas.flame-canvas").boundingBox();
  const png = await page.screenshot({ clip: { x: box.x + corner.x, y: box.y + corner.y, width: 1, height: 1 } });
  return { shown: pngPixel(png), painted: await pixelAt(page, { x: box.x + corner.x, y: box.y + corner.y }) };
}

/** The [r, g, b] of a 1 × 1 PNG: its one row, after the filter byte (no filter changes a lone pixel). */
function pngPixel(png) {
  const chunks = [];
  for (let at = 8; at < png.length; at += 12 + png.readUInt32BE(at)) if (png.toString("latin1", at + 4, at + 8) === "IDAT") chunks.push(png.subarray(at + 8, at + 8 + png.readUInt32BE(at)));
  return Array.from(inflateSync(Buffer.concat(chunks)).subarray(1, 4));
}

/** The legend's swatch colour for LABEL, as [r, g, b]. */
async function legendColour(page, label) {
  const css = await page.locator(".legend-item", { hasText: label }).locator("i").evaluate((i) => getComputedStyle(i).backgroundColor);
  return css.match(/\d+/g).slice(0, 3).map(Number);
}

function assertSameColour(actual, expected, what) {
  assert.ok(actual.every((v, k) => Math.abs(v - expected[k]) <= 2), `${what}: painted ${actual}, legend ${expected}`);
}

/** The names of the drawn flame-graph frames at DEPTH (of the sandwich's WHICH graph if given). */
async function drawnAt(page, depth, which) {
  return page.evaluate(([wanted, side]) => {
    const g = side ? window.perfsleuthSandwich[side] : window.perfsleuthFlame.graph;
    const d = g.drawn;
    const names = [];
    for (let k = 0; k < d.count; k++) if (g.data.depth[d.node[k]] === wanted) names.push(g.data.names[g.data.name[d.node[k]]]);
    return names.sort();
  }, [depth, which]);
}

/**
 * How the sandwich page's two trees differ from ones counted stack by stack from the
 * graph they were built from (empty if they agree): per path of names from the tree's
 * first level, each column's weight; and siblings in name order, as the flame graph's.
 */
async function sandwichMismatches(page, fn) {
  return page.evaluate((target) => {
    const { callers, callees, source } = window.perfsleuthSandwich;
    const { names, name, parent, end, columns } = source;
    const keys = Object.keys(columns);
    const expected = { callers: new Map(), callees: new Map() };
    const add = (map, path, node) => {
      const key = path.join(" > ");
      const sums = map.get(key) ?? keys.map(() => 0);
      keys.forEach((k, c) => (sums[c] += columns[k][node]));
      map.set(key, sums);
    };
    const isTarget = (node) => node > 0 && names[name[node]] === target;
    for (let i = 1; i < source.nodes; i++) {
      let outer = isTarget(i);
      for (let a = parent[i]; outer && a > 0; a = parent[a]) outer = !isTarget(a);
      if (!outer) continue;
      for (const side of ["callers", "callees"]) add(expected[side], ["(all)"], i);
      const up = [];
      for (let a = i; a > 0; a = parent[a]) {
        up.push(names[name[a]]);
        add(expected.callers, up, i);
      }
      const down = (node, path) => {
        add(expected.callees, path, node);
        for (let c = node + 1; c < end[node]; c = end[c]) down(c, [...path, names[name[c]]]);
      };
      down(i, [target]);
    }
    const problems = [];
    for (const [side, graph] of [["callers", callers], ["callees", callees]]) {
      const tree = graph.data;
      const weights = (k) => keys.map((key) => tree.columns[key][k]);
      const seen = new Map([["(all)", weights(0)]]);
      const paths = [];
      const lastChild = new Int32Array(tree.nodes).fill(-1);
      for (let k = 1; k < tree.nodes; k++) {
        const p = tree.parent[k];
        paths[k] = p === 0 ? [tree.names[tree.name[k]]] : [...paths[p], tree.names[tree.name[k]]];
        seen.set(paths[k].join(" > "), weights(k));
        if (lastChild[p] >= 0 && tree.name[lastChild[p]] >= tree.name[k]) problems.push(`${side}: ${paths[k].join(" > ")} after a sibling named later`);
        lastChild[p] = k;
      }
      const want = expected[side];
      if (seen.size !== want.size) problems.push(`${side}: ${seen.size} paths, stacks give ${want.size}`);
      for (const [key, sums] of want) if (String(seen.get(key)) !== String(sums)) problems.push(`${side}: ${key} ${seen.get(key)} ≠ ${sums}`);
    }
    return problems;
  }, fn);
}

/**
 * Where the shown tree's (the flame graph's, or the sandwich's WHICH graph's) subtree ends,
 * parents or depth differ from the ones its pre-order of depths gives (empty if none): a
 * merged tree (hide, the callees) writes them as it is built.
 */
async function shapeProblems(page, which) {
  return page.evaluate((side) => {
    const tree = (side ? window.perfsleuthSandwich[side] : window.perfsleuthFlame.graph).data;
    const problems = [];
    const open = [];
    const end = new Int32Array(tree.nodes).fill(tree.nodes);
    let deepest = 0;
    for (let k = 0; k < tree.nodes; k++) {
      while (open.length && tree.depth[open[open.length - 1]] >= tree.depth[k]) end[open.pop()] = k;
      const parent = open.length ? open[open.length - 1] : -1;
      if (tree.parent[k] !== parent) problems.push(`node ${k}: parent ${tree.parent[k]}, its depths say ${parent}`);
      open.push(k);
      deepest = Math.max(deepest, tree.depth[k]);
    }
    for (let k = 0; k < tree.nodes; k++) if (tree.end[k] !== end[k]) problems.push(`node ${k}: ends at ${tree.end[k]}, its depths say ${end[k]}`);
    if (tree.maxDepth !== deepest) problems.push(`max depth ${tree.maxDepth}, its depths say ${deepest}`);
    return problems.slice(0, 5);
  }, which);
}

/** The page element that has the keyboard focus: its tag and aria-label. */
async function focused(page) {
  return page.evaluate(() => `${document.activeElement.tagName.toLowerCase()} ${document.activeElement.getAttribute("aria-label") ?? ""}`.trim());
}

/** The name of the frame in the panel under the flame graph. */
async function panelFrame(page) {
  return page.locator(".frame-details strong").innerText();
}

/** Relative brightness (0 black, 1 white) of the computed colours PROPS of SELECTORS. */
async function brightness(page, pairs) {
  const colours = await page.evaluate((wanted) => wanted.map(([sel, prop]) => getComputedStyle(document.querySelector(sel))[prop]), pairs);
  return colours.map((css) => {
    const [r, g, b] = css.match(/[\d.]+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  });
}

const flows = {
  async open_run(page) {
    await page.goto(`${base}#/`);
    await page.locator("table.runs").waitFor();
    const text = await page.locator("table.runs").innerText();
    assert.match(text, /\.\/app --input big\.txt/);
    assert.match(text, /12% of CPU time is in glibc malloc\/free/);
    assert.match(text, /\.\/server --port 8080.*wall\s+1,000 samples · 9,029,117,580 ns/);
    assert.match(text, /cpu\s+905 samples/);
    await page.locator("table.runs a", { hasText: "./app --input big.txt" }).first().click();
    await page.locator("h1", { hasText: "Run 2" }).waitFor();
    const overview = await page.locator("main").innerText();
    assert.match(overview, /compute_hot/);
    assert.match(overview, /Findings \(2\)/);
    // The overview's cards carry the fix and its command, not only the title.
    assert.match(overview, /Preload mimalloc; no code change needed\s+LD_PRELOAD=libmimalloc\.so\.2 \.\/app/);
    await page.screenshot({ path: `${artifacts}/overview.png`, fullPage: true });
  },

  async flame_search(page) {
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.fill("input[aria-label=search]", "^compute_hot$");
    await page.locator(".search-info", { hasText: "match" }).waitFor();
    // compute_hot is on 495 of run 2's 905 samples.
    assert.equal(await page.locator(".search-info").innerText(), "1 frame matches · 54.70% of the run");
    await urlMatching(page, /q=%5Ecompute_hot%24/);
    await page.screenshot({ path: `${artifacts}/flame-search.png`, fullPage: true });
  },

  async inlined_in_flame(page) {
    await page.goto(`${base}#/run/2`);
    await page.locator("table.data tr", { hasText: "parse_input" }).locator("a", { hasText: "in flame graph" }).click();
    await page.locator(".search-info", { hasText: "match" }).waitFor();
    // parse_input, inlined into run_engine, is on 200 of run 2's 905 samples.
    assert.equal(await page.locator(".search-info").innerText(), "1 frame matches · 22.10% of the run");
    const point = await framePoint(page, "parse_input");
    await page.mouse.move(point.x, point.y);
    await page.locator(".flame-tip", { hasText: "total" }).waitFor();
    assert.match(await page.locator(".flame-tip .tip-name").innerText(), /^parse_input \(inlined\)$/);
    assertSameColour(await pixelAt(page, point), await legendColour(page, "search match"), "a match");
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("label", { hasText: "colour by frame kind" }).click();
    await page.locator(".legend-item", { hasText: "inlined" }).waitFor();
    await urlMatching(page, /colour=name/);
    assert.deepEqual(await page.locator(".legend-item").allInnerTexts(), ["function (warm, by name)", "inlined", "kernel", "search match"]);
    assertSameColour(await pixelAt(page, await framePoint(page, "parse_input")), await legendColour(page, "inlined"), "an inlined frame");
    assertSameColour(await pixelAt(page, await framePoint(page, "futex_wait")), await legendColour(page, "kernel"), "a kernel frame");
    await page.screenshot({ path: `${artifacts}/flame-kinds.png`, fullPage: true });
  },

  async flame_zoom(page) {
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    const point = await framePoint(page, "compute_hot");
    await page.mouse.move(point.x, point.y);
    await page.locator(".flame-tip", { hasText: "total" }).waitFor();
    assert.match(await page.locator(".flame-tip").innerText(), /compute_hot[\s\S]*total 54\.70%/);
    await page.mouse.click(point.x, point.y);
    await page.locator(".breadcrumb .crumb", { hasText: "compute_hot" }).waitFor();
    await urlMatching(page, /zoom=\d+/);
    assert.deepEqual(await page.locator(".breadcrumb .crumb").allInnerTexts(), ["all", "main", "run_engine", "compute_hot"]);
    await page.screenshot({ path: `${artifacts}/flame-zoom.png`, fullPage: true });
    await page.locator(".frame-details a", { hasText: "callers/callees" }).click();
    await page.locator("svg.callgraph").waitFor();
    const graph = await page.locator("svg.callgraph").textContent();
    assert.match(graph, /run_engine/);
    assert.match(graph, /malloc/);
    await page.screenshot({ path: `${artifacts}/callgraph.png`, fullPage: true });
    await page.goBack();
    await page.locator(".breadcrumb .crumb", { hasText: "all" }).click();
    await urlNotMatching(page, /zoom=/);
  },

  async flame_resize_and_regex(page) {
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    const widths = () => page.evaluate(() => [document.querySelector("canvas.flame-canvas").getBoundingClientRect().width, document.querySelector(".flame-holder").clientWidth]);
    const [wide] = await widths();
    await page.setViewportSize({ width: 900, height: 900 });
    await page.waitForFunction(() => document.querySelector("canvas.flame-canvas").getBoundingClientRect().width < 900);
    const [narrow, holder] = await widths();
    assert.ok(wide > 1200 && narrow === holder, `canvas ${wide} px, then ${narrow} px in a ${holder} px holder`);
    const point = await framePoint(page, "compute_hot");
    await page.mouse.move(point.x, point.y);
    await page.locator(".flame-tip", { hasText: "total" }).waitFor();
    await page.mouse.click(point.x, point.y);
    await page.locator(".breadcrumb .crumb", { hasText: "compute_hot" }).waitFor();
    assert.ok(await page.locator(".flame-tip").isHidden(), "the tooltip goes with the zoom");
    await page.fill("input[aria-label=search]", "(compute");
    await page.locator(".search-info.error").waitFor();
    assert.match(await page.locator(".search-info").innerText(), /^Invalid regular expression: .*Unterminated group/);
    assert.equal(await page.getAttribute("input[aria-label=search]", "aria-invalid"), "true");
    assert.equal(await page.evaluate(() => window.perfsleuthFlame.graph.matched.includes(1)), false);
    await page.screenshot({ path: `${artifacts}/flame-bad-regex.png`, fullPage: true });
  },

  async flame_focus_ignore_hide(page) {
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.evaluate(() => (window.flameCanvas = window.perfsleuthFlame.graph.canvas));
    const navLinks = () => page.evaluate(() => [...document.querySelectorAll("#nav a")].map((a) => a.textContent));
    const linksBefore = await navLinks();
    await page.evaluate(() => (window.activeLink = document.querySelector("#nav a.active")));
    await page.fill("input[aria-label=focus]", "^malloc$");
    await page.press("input[aria-label=focus]", "Enter");
    // malloc is on 120 of run 2's 905 samples, all under compute_hot.
    await page.locator(".filter-info", { hasText: "13.26% of the run" }).waitFor();
    await urlMatching(page, /focus=%5Emalloc%24/);
    assert.deepEqual(await drawnAt(page, 3), ["compute_hot"]);
    assert.deepEqual(await drawnAt(page, 4), ["malloc"]);
    // The focused graph draws on the flame graph's canvas, without a new bitmap: the
    // element is as tall as its rows, the bitmap taller, and the screen shows what was painted.
    const reused = await page.evaluate(() => {
      const { canvas, drawn } = window.perfsleuthFlame.graph;
      const rowTops = Array.from(drawn.y.subarray(0, drawn.count));
      return { same: canvas === window.flameCanvas, fitsRows: canvas.clientHeight === Math.max(...rowTops) + 18, tallerBitmap: canvas.height > canvas.clientHeight * devicePixelRatio };
    });
    assert.deepEqual(reused, { same: true, fitsRows: true, tallerBitmap: true });
    for (const name of ["main", "compute_hot", "malloc"]) {
      const { shown, painted } = await shownAndPainted(page, name);
      assertSameColour(shown, painted, `${name} on the screen`);
    }
    assert.match(await page.locator(".frame-details").innerText(), /total 13\.26%\s+\(120 samples\)/);
    // The nav depends on the page's path only: a filter keeps it (its links, the optional ones too).
    assert.equal(await page.evaluate(() => document.querySelector("#nav a.active") === window.activeLink), true);
    assert.deepEqual(await navLinks(), linksBefore);
    await page.screenshot({ path: `${artifacts}/flame-focus.png`, fullPage: true });
    await page.goBack();
    await page.locator("canvas.flame-canvas").waitFor();
    assert.equal(await page.locator(".filter-info").count(), 0);
    // parse_input (200), the hostile frame (60) and futex_wait (150) have no compute_hot.
    await page.goto(`${base}#/run/2/flame?ignore=compute_hot`);
    await page.locator(".filter-info", { hasText: "45.30% of the run" }).waitFor();
    assert.equal((await drawnAt(page, 3)).includes("compute_hot"), false);
    await page.goto(`${base}#/run/2/flame?hide=%5Erun_engine%24`);
    await page.locator(".filter-info", { hasText: "100.00% of the run" }).waitFor();
    assert.equal(await page.inputValue("input[aria-label=hide]"), "^run_engine$");
    assert.deepEqual(await drawnAt(page, 1), ["main"]);
    const callees = await drawnAt(page, 2);
    assert.deepEqual(callees.slice(0, 3), ["compute_hot", "futex_wait", HOSTILE]);
    assert.equal(callees.includes("run_engine"), false);
    assert.deepEqual(await shapeProblems(page), []);
    // A focus added to the hide narrows the tree the hide made (kept), not a new merge of the run's.
    await page.evaluate(() => (window.hiddenNames = window.perfsleuthFlame.graph.data.name));
    await page.goto(`${base}#/run/2/flame?hide=%5Erun_engine%24&focus=%5Emalloc%24`);
    await page.locator(".filter-info", { hasText: "13.26% of the run" }).waitFor();
    assert.equal(await page.evaluate(() => window.perfsleuthFlame.graph.data.name === window.hiddenNames), true);
    assert.deepEqual(await drawnAt(page, 2), ["compute_hot"]);
    assert.deepEqual(await drawnAt(page, 3), ["malloc"]);
    await page.goto(`${base}#/run/2/flame?focus=(`);
    await page.locator(".data-filter .error").waitFor();
    assert.match(await page.locator(".data-filter .error").innerText(), /focus: Invalid regular expression/);
    assert.equal(await page.locator(".filter-info").count(), 0);
  },

  async flame_stale_render(page) {
    // A focus on running samples whose flame request comes back after a newer ignore's render:
    // the older render finishes into its detached page and must leave the graph on screen
    // showing and drawing (the run's JSON is cached by now, so the flame request is held).
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    let release;
    const held = new Promise((resolve) => (release = resolve));
    const parked = [];
    let holding = true;
    await page.route((url) => url.pathname === "/api/runs/2/flame" && url.searchParams.get("state") === "running", async (route) => {
      if (!holding) return route.continue();
      parked.push(route.request());
      await held;
      await route.continue();
    });
    await page.evaluate(() => (location.hash = "#/run/2/flame?state=running&focus=%5Emalloc%24"));
    await page.waitForFunction(() => document.querySelector(".filter-info") === null && document.querySelector("#app")?.textContent.includes("Loading"));
    holding = false;
    await page.evaluate(() => (location.hash = "#/run/2/flame?ignore=compute_hot"));
    await page.locator(".filter-info", { hasText: "45.30% of the run" }).waitFor();
    assert.ok(parked.length > 0, "the focus render's flame request was held");
    release();
    await Promise.all(parked.map((request) => request.response().then((response) => response?.finished())));
    await page.evaluate(() => new Promise((resolve) => setTimeout(() => requestAnimationFrame(() => setTimeout(resolve, 200)), 0)));
    assert.equal(await page.evaluate(() => window.perfsleuthFlame.graph.canvas.isConnected), true);
    await page.evaluate(() => window.perfsleuthFlame.graph.draw());
    assert.equal((await drawnAt(page, 3)).includes("compute_hot"), false);
    assert.deepEqual(await drawnAt(page, 1), ["main"]);
    const { shown, painted } = await shownAndPainted(page, "main");
    assertSameColour(shown, painted, "main on the screen");
  },

  async flame_pixel_ratio_2(page) {
    // A Retina-like screen: the focused graph draws on the flame graph's taller bitmap, and the
    // screen shows it pixel for pixel (a bitmap scaled by a hair blurs every edge and letter).
    const context = await page.context().browser().newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 2 });
    const hidpi = await context.newPage();
    await hidpi.goto(`${base}#/run/2/flame`);
    await hidpi.locator("canvas.flame-canvas").waitFor();
    await hidpi.goto(`${base}#/run/2/flame?focus=%5Emalloc%24`);
    await hidpi.locator(".filter-info", { hasText: "13.26% of the run" }).waitFor();
    const png = await hidpi.screenshot();
    const compared = await hidpi.evaluate(async (b64) => {
      const canvas = document.querySelector("canvas.flame-canvas");
      const image = new Image();
      image.src = `data:image/png;base64,${b64}`;
      await image.decode();
      const screen = new OffscreenCanvas(image.width, image.height).getContext("2d");
      screen.drawImage(image, 0, 0);
      const box = canvas.getBoundingClientRect();
      const [width, height] = [canvas.clientWidth * devicePixelRatio, canvas.clientHeight * devicePixelRatio];
      const painted = canvas.getContext("2d").getImageData(0, 0, width, height).data;
      // The opaque pixels painted, against the screen's from each device pixel next to the
      // corner (Chromium snaps it to one): the fewest that differ.
      let differing = Infinity;
      for (const dy of [-1, 0, 1]) {
        for (const dx of [-1, 0, 1]) {
          const shown = screen.getImageData(Math.round(box.left * devicePixelRatio) + dx, Math.round(box.top * devicePixelRatio) + dy, width, height).data;
          let count = 0;
          for (let i = 0; i < shown.length; i += 4) if (painted[i + 3] === 255 && [0, 1, 2].some((c) => Math.abs(shown[i + c] - painted[i + c]) > 3)) count++;
          differing = Math.min(differing, count);
        }
      }
      return { ratio: devicePixelRatio, tallerBitmap: canvas.height > height, differing };
    }, png.toString("base64"));
    await context.close();
    assert.deepEqual(compared, { ratio: 2, tallerBitmap: true, differing: 0 });
  },

  async keyboard(page) {
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.keyboard.press("/");
    assert.equal(await focused(page), "input search");
    for (let tabs = 0; tabs < 30 && !(await focused(page)).startsWith("canvas"); tabs++) await page.keyboard.press("Tab");
    assert.match(await focused(page), /^canvas flame graph/, "Tab reaches the canvas");
    await page.keyboard.press("ArrowUp");
    assert.equal(await panelFrame(page), "main");
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("ArrowUp");
    assert.equal(await panelFrame(page), "compute_hot");
    await page.keyboard.press("ArrowRight");
    assert.equal(await panelFrame(page), "futex_wait (kernel)");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("ArrowDown");
    assert.equal(await panelFrame(page), "run_engine");
    await page.keyboard.press("ArrowUp");
    assert.equal(await panelFrame(page), "compute_hot");
    // The keyboard's frame is outlined: its left edge is painted in the outline colour.
    const edge = await page.evaluate(() => {
      const g = window.perfsleuthFlame.graph;
      const d = g.drawn;
      for (let k = 0; k < d.count; k++) if (d.node[k] === g.cursor) return { x: d.x[k] + 1, y: d.y[k] + 8 };
      return null;
    });
    const box = await page.locator("canvas.flame-canvas").boundingBox();
    assertSameColour(await pixelAt(page, { x: box.x + edge.x, y: box.y + edge.y }), [29, 35, 48], "the outline");
    await page.keyboard.press("Enter");
    await page.locator(".breadcrumb .crumb", { hasText: "compute_hot" }).waitFor();
    assert.deepEqual(await page.locator(".breadcrumb .crumb").allInnerTexts(), ["all", "main", "run_engine", "compute_hot"]);
    await urlMatching(page, /zoom=\d+/);
    await page.screenshot({ path: `${artifacts}/flame-keyboard.png`, fullPage: true });
    await page.keyboard.press("Escape");
    assert.deepEqual(await page.locator(".breadcrumb .crumb").allInnerTexts(), ["all"]);
    await urlNotMatching(page, /zoom=/);

    await page.goto(`${base}#/run/2/top`);
    const total = page.locator("th button", { hasText: "total" });
    await total.focus();
    await page.keyboard.press("Enter");
    await page.locator("th[aria-sort=descending]", { hasText: "total" }).waitFor();
    assert.match(await page.locator("table.data tbody tr").first().innerText(), /^\S+\s+100\.00%\s+main/);
    await urlMatching(page, /sort=total/);
    await page.keyboard.press("Enter");
    await page.locator("th[aria-sort=ascending]", { hasText: "total" }).waitFor();
    await urlMatching(page, /sort=-total/);
    // The hostile frame has the smallest total (60 samples): first when reversed.
    assert.equal(await page.locator("table.data tbody tr").first().locator("a.fn").getAttribute("title"), HOSTILE);
    assert.match(await page.locator("table.data tbody tr").last().innerText(), /100\.00%\s+(main|run_engine)/);
    await page.reload();
    await page.locator("th[aria-sort=ascending]", { hasText: "total" }).waitFor();
  },

  async sandwich(page) {
    await page.goto(`${base}#/run/2`);
    await page.locator("table.data tr", { hasText: "compute_hot" }).locator("a", { hasText: "sandwich" }).click();
    await page.locator(".sandwich-info").waitFor();
    await urlMatching(page, /flame\?sandwich=compute_hot$/);
    // compute_hot: 495 of 905 samples in all, 375 of them its own (malloc has the other 120).
    assert.match(await page.locator(".sandwich-info").innerText(), /^total 54\.70% of the run · self 41\.44% ·\s+back to the flame graph/);
    assert.deepEqual([await drawnAt(page, 1, "callers"), await drawnAt(page, 2, "callers"), await drawnAt(page, 3, "callers")], [["compute_hot"], ["run_engine"], ["main"]]);
    assert.deepEqual([await drawnAt(page, 1, "callees"), await drawnAt(page, 2, "callees")], [["compute_hot"], ["malloc"]]);
    assert.deepEqual(await sandwichMismatches(page, "compute_hot"), []);
    assert.deepEqual([await shapeProblems(page, "callers"), await shapeProblems(page, "callees")], [[], []]);
    await page.screenshot({ path: `${artifacts}/flame-sandwich.png`, fullPage: true });
    await page.evaluate(() => (window.firstSandwich = window.perfsleuthSandwich));
    await page.locator("a", { hasText: "back to the flame graph" }).click();
    await page.locator(".breadcrumb .crumb").first().waitFor();
    await urlMatching(page, /#\/run\/2\/flame$/);
    // From a drawn flame graph, whose canvas the next graphs draw on: each of the sandwich's
    // two graphs has a canvas of its own, as tall as its own rows.
    await page.goto(`${base}#/run/2/flame?sandwich=compute_hot`);
    await page.locator(".sandwich-info").waitFor();
    const canvases = await page.evaluate(() => {
      const graphs = [window.perfsleuthSandwich.callers, window.perfsleuthSandwich.callees];
      const rows = (g) => 1 + Math.max(...Array.from(g.drawn.node.subarray(0, g.drawn.count), (n) => g.data.depth[n]));
      return { shown: document.querySelectorAll("canvas.flame-canvas").length, distinct: graphs[0].canvas !== graphs[1].canvas, fit: graphs.map((g) => g.canvas.style.height === `${rows(g) * 18}px`) };
    });
    assert.deepEqual(canvases, { shown: 2, distinct: true, fit: [true, true] });
    // Back to the same sandwich: the trees merged on the first visit, drawn on the canvases the
    // first visit drew (they are free and of the size each graph needs).
    const again = await page.evaluate(() => {
      const [first, now] = [window.firstSandwich, window.perfsleuthSandwich];
      return { graphs: first !== now, trees: first.callers.data === now.callers.data && first.callees.data === now.callees.data, canvases: first.callers.canvas === now.callers.canvas && first.callees.canvas === now.callees.canvas };
    });
    assert.deepEqual(again, { graphs: true, trees: true, canvases: true });
    assert.deepEqual(await sandwichMismatches(page, "compute_hot"), []);
    // Every function of two runs' graphs: the trees built from the graph equal the ones counted stack by stack.
    for (const run of [2, 3]) {
      await page.evaluate(() => delete window.perfsleuthFlame);
      await page.goto(`${base}#/run/${run}/flame?order=heavy`); // not the page shown: a new render
      await page.waitForFunction(() => window.perfsleuthFlame !== undefined);
      const names = await page.evaluate(() => {
        const { data } = window.perfsleuthFlame.graph;
        return [...new Set(Array.from(data.name.subarray(1), (n) => data.names[n]))];
      });
      for (const fn of names) {
        await page.evaluate(() => delete window.perfsleuthSandwich);
        await page.goto(`${base}#/run/${run}/flame?sandwich=${encodeURIComponent(fn)}`);
        await page.waitForFunction(() => window.perfsleuthSandwich !== undefined);
        assert.deepEqual(await sandwichMismatches(page, fn), [], `run ${run}, sandwich of ${fn}`);
        assert.deepEqual([await shapeProblems(page, "callers"), await shapeProblems(page, "callees")], [[], []], `run ${run}, sandwich of ${fn}`);
      }
    }
  },

  async flame_filters_and_orderings(page) {
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.selectOption("select[aria-label=states]", "mutex");
    await page.locator(".frame-details", { hasText: "150 samples" }).waitFor();
    await urlMatching(page, /state=mutex/);
    await page.goto(`${base}#/run/2/flame?thread=201`);
    await page.locator(".frame-details", { hasText: "samples" }).waitFor();
    // worker-1 ran the 2nd, 4th and 6th stacks: 75 + 200 + 150 samples.
    assert.match(await page.locator(".frame-details").innerText(), /\(425 samples\)/);
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.locator("label", { hasText: "icicle" }).click();
    await page.locator("label", { hasText: "left-heavy" }).click();
    await urlMatching(page, /view=icicle/);
    await urlMatching(page, /order=heavy/);
    const heaviest = await page.evaluate(() => {
      const g = window.perfsleuthFlame.graph;
      const d = g.drawn;
      for (let k = 0; k < d.count; k++) if (g.data.depth[d.node[k]] === 3 && d.x[k] === 0) return g.data.names[g.data.name[d.node[k]]];
      return null;
    });
    assert.equal(heaviest, "compute_hot");
    const zoomed = page.url().replace(/#.*/, "") + "#/run/2/flame?zoom=3";
    await page.goto(zoomed);
    await page.locator(".breadcrumb .crumb").nth(3).waitFor();
    assert.deepEqual((await page.locator(".breadcrumb .crumb").allInnerTexts()).slice(0, 3), ["all", "main", "run_engine"]);
    await page.screenshot({ path: `${artifacts}/flame-icicle.png`, fullPage: true });
  },

  async threads(page) {
    await page.goto(`${base}#/run/2`);
    await page.locator("#nav a", { hasText: "Threads" }).click();
    await page.locator("table.threads tbody tr").nth(1).waitFor();
    // worker-0 ran stacks 1, 3, 5 (300 + 120 + 60 samples); worker-1 stacks 2, 4, 6 (75 + 200 + 150), 150 of them in mutex.
    const rows = await page.locator("table.threads tbody tr").allInnerTexts();
    assert.match(rows[0], /^worker-0 \(200\) top\s+53\.04%\s+480 samples\s+100\.0%\s+–$/);
    // Samples of equal weight are instants: each share has its 95% margin, 1.96·√(p(1−p)/n)
    // (views/threads.py); worker-0, in one state only, has none.
    assert.match(rows[1], /^worker-1 \(201\) top\s+46\.96%\s+425 samples\s+64\.7% ±4\.5\s+35\.3% ±4\.5$/);
    assert.deepEqual(await page.locator("table.threads th").allInnerTexts(), ["thread", "share of run", "time", "by state", "running", "mutex"]);
    await page.screenshot({ path: `${artifacts}/threads.png`, fullPage: true });
    await page.locator('tr[data-tid="201"] a.state-mutex').click();
    await page.locator(".frame-details", { hasText: "150 samples" }).waitFor();
    await urlMatching(page, /#\/run\/2\/flame\?thread=201&state=mutex$/);
    assert.equal(await page.inputValue("select[aria-label=threads]"), "201");
    assert.equal(await page.inputValue("select[aria-label=states]"), "mutex");
    assert.deepEqual(await drawnAt(page, 3), ["futex_wait"]);

    await page.goto(`${base}#/run/2/top?state=mutex`);
    await page.locator("table.data tbody tr").first().waitFor();
    assert.match(await page.locator("h1 .subtitle").innerText(), /run 2 · state mutex · 150 samples/);
    assert.equal(await page.inputValue("select[aria-label=states]"), "mutex");
    assert.match(await page.locator("table.data tbody tr").first().innerText(), /^100\.00%\s+100\.00%\s+futex_wait/);
    await page.selectOption("select[aria-label=threads]", "200");
    await page.locator("p.warning", { hasText: "Run 2 has no samples with state mutex and thread 200." }).waitFor();
    await urlMatching(page, /state=mutex&thread=200/);
  },

  async callgraph_levels(page) {
    const boxes = () => page.evaluate(() => [...document.querySelectorAll("svg.callgraph g.cg-node")].map((g) => [Number(g.getAttribute("transform").match(/\(([\d.]+)/)[1]), g.querySelector("text").textContent]));
    const columns = async () => {
      const byX = new Map();
      for (const [x, name] of await boxes()) byX.set(x, [...(byX.get(x) ?? []), name]);
      return [...byX.entries()].sort((a, b) => a[0] - b[0]).map(([, names]) => names.sort());
    };
    await page.goto(`${base}#/run/2/callgraph?function=run_engine`);
    await page.locator("svg.callgraph").waitFor();
    // Two levels by default: main calls run_engine; its callees, and malloc under compute_hot.
    assert.deepEqual(await columns(), [["main"], ["run_engine"], ["compute_hot", "futex_wait", "operator<<<…>alert(…)<…>", "parse_input"], ["malloc"]]);
    assert.equal(await page.locator("svg.callgraph path.cg-edge").count(), 6);
    await page.screenshot({ path: `${artifacts}/callgraph-levels.png`, fullPage: true });
    await page.locator("a.chip", { hasText: /^1$/ }).click();
    await page.waitForFunction(() => document.querySelectorAll("svg.callgraph g.cg-node").length === 6);
    await urlMatching(page, /depth=1/);
    assert.deepEqual((await columns()).length, 3);
    await page.goto(`${base}#/run/2/callgraph?function=run_engine&depth=2`);
    await page.locator("svg.callgraph g.cg-node", { hasText: "malloc" }).click();
    await page.locator("h1 .subtitle", { hasText: "malloc" }).waitFor();
    await urlMatching(page, /function=malloc&depth=2/);
    assert.deepEqual(await columns(), [["run_engine"], ["compute_hot"], ["malloc"]]);
  },

  async finding_source(page) {
    await page.goto(`${base}#/run/2/findings`);
    await page.locator("article.finding").first().waitFor();
    assert.equal(await page.locator("article.finding").count(), 2);
    await page.selectOption("select[aria-label=confidence]", "0.5");
    assert.equal(await page.locator("article.finding").count(), 1);
    await page.locator("article.finding a.source-link").first().click();
    await page.locator("tr.target").waitFor();
    assert.match(await page.locator("tr.target").innerText(), /for \(int x : v\) sum \+= step_3\(x\);/);
    assert.match(await page.locator("tr.inline-finding").first().innerText(), /glibc malloc\/free[\s\S]*malloc 6\.1% self/);
    assert.match(await page.locator("p.served-from").first().innerText(), /^served from \/.*\.cc/);
    await page.screenshot({ path: `${artifacts}/source.png`, fullPage: true });
  },

  async finding_details(page) {
    await page.goto(`${base}#/run/2/findings`);
    await page.locator("table.detail-facts").waitFor();
    const rows = await page.locator("table.detail-facts tr").allInnerTexts();
    assert.deepEqual(
      rows.map((r) => r.replace(/\s+/g, " ")),
      ["self share of the run 6.1%", "expected saving, range 2% – 5%", "rule defined in rules/library.toml", "needs a code change no"],
    );
    const text = await page.locator("main").innerText();
    for (const raw of ["self_share", "saving_range", "rule_origin", "code_change"]) assert.ok(!text.includes(raw), `${raw} is not shown`);
  },

  async experiment_verdict(page) {
    await page.goto(`${base}#/experiments`);
    await page.locator("li.verdict").waitFor();
    assert.match(await page.locator("li.verdict").innerText(), /^mimalloc: too few runs to tell a difference from baseline \(ratio 1\.400, 95% CI 1\.081-1\.955, p=0\.0625, 5 pairs\); use --runs \d+ or more$/);
    // Only the measured runs are plotted: not the variants' ratio, runs and p_value, nor warm-up runs.
    assert.deepEqual(await page.locator(".metric-plot h3").allInnerTexts(), ["wall_s (s, one dot per run, bar: mean)", "user_s (s, one dot per run, bar: mean)"]);
    assert.equal(await page.locator(".metric-plot").first().locator("circle").count(), 10);
    assert.doesNotMatch(await page.locator(".metric-plot").first().locator("svg").textContent(), /warmup|variants/);
    await page.screenshot({ path: `${artifacts}/experiment-verdict.png`, fullPage: true });
  },

  async dark_mode(page) {
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${base}#/run/2`);
    await page.locator("article.finding").first().waitFor();
    const [bg, fg, head, card, link] = await brightness(page, [
      ["html", "backgroundColor"],
      ["html", "color"],
      ["table.data th", "backgroundColor"],
      ["article.finding", "backgroundColor"],
      ["table.data a", "color"],
    ]);
    assert.ok(bg < 0.1 && head < 0.2 && card < 0.2, `dark surfaces: page ${bg}, table head ${head}, card ${card}`);
    assert.ok(fg > 0.7 && link > 0.5, `light text: ${fg}, links ${link}`);
    await page.screenshot({ path: `${artifacts}/overview-dark.png`, fullPage: true });
    await page.goto(`${base}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    const [field] = await brightness(page, [["input[aria-label=search]", "backgroundColor"]]);
    assert.ok(field < 0.3, `dark search field: ${field}`);
    await page.screenshot({ path: `${artifacts}/flame-dark.png`, fullPage: true });
    await page.emulateMedia({ colorScheme: "light" });
    const [lightBg, lightFg] = await brightness(page, [["html", "backgroundColor"], ["html", "color"]]);
    assert.ok(lightBg > 0.9 && lightFg < 0.2, `light again: page ${lightBg}, text ${lightFg}`);
  },

  async source_heat(page) {
    await page.goto(`${base}#/run/2/source?file=src/engine.cc`);
    await page.locator("section.source-file").waitFor();
    const heatOf = (line) => page.locator(`tr#L${line}`).evaluate((tr) => tr.style.getPropertyValue("--heat"));
    // main (line 17) is on every stack and ends none: no self heat, all the total heat.
    assert.equal(await heatOf(17), "");
    assert.equal(await heatOf(13), "1.000");
    await page.locator("a.chip", { hasText: "heat by total" }).click();
    await page.locator("a.chip.active", { hasText: "heat by total" }).waitFor();
    await urlMatching(page, /heat=total/);
    assert.equal(await heatOf(17), "1.000");
    assert.ok(Number(await heatOf(13)) < 1);
  },

  /** axe-core on the main pages, light and dark: no serious or critical violation. */
  async accessibility(page) {
    const found = {};
    for (const colorScheme of ["light", "dark"]) {
      // The page's Content-Security-Policy forbids the injected axe script: bypassed here only.
      const context = await page.context().browser().newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 }, colorScheme });
      const tab = await context.newPage();
      for (const hash of A11Y_PAGES) {
        await tab.goto(`${base}${hash}`);
        await tab.waitForFunction(() => !document.querySelector("#app > p.muted")?.textContent?.startsWith("Loading"));
        await tab.addScriptTag({ path: AXE });
        const violations = await tab.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations);
        for (const v of violations) (found[v.impact] ??= []).push(`${colorScheme} ${hash}: ${v.id} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")})`);
      }
      await context.close();
    }
    assert.deepEqual([...(found.critical ?? []), ...(found.serious ?? [])], [], "no serious or critical accessibility violation");
    return found;
  },

  async hostile_names(page) {
    let dialogs = 0;
    page.on("dialog", (d) => {
      dialogs++;
      void d.dismiss();
    });
    await page.goto(`${base}#/run/2/findings`);
    await page.locator("article.finding").nth(1).waitFor();
    assert.ok((await page.locator("main").innerText()).includes(`loop in ${HOSTILE} not vectorized`));
    assert.equal(await page.locator("main script").count(), 0);
    assert.ok((await page.locator("main").innerText()).includes("<b>unsafe</b>"));
    await page.goto(`${base}#/run/2/top`);
    await page.locator("table.data").waitFor();
    assert.equal(await page.locator(`table.data a.fn[title="${HOSTILE}"]`).count(), 1);
    await page.goto(`${base}#/run/2/source?file=src/leak.cc`);
    await page.locator("section.source-file").waitFor();
    const text = await page.locator("section.source-file").innerText();
    assert.match(text, /not available under the source roots/);
    assert.doesNotMatch(text, /TOP SECRET/);
    assert.equal(dialogs, 0);
  },

  /** The page's short names, of names.json and of the hostile TopN row; test_ui.py compares them with the CLI's. */
  async short_names(page) {
    await page.goto(`${base}#/run/2/top`);
    const cell = page.locator(`table.data a.fn[title="${HOSTILE}"]`);
    await cell.waitFor();
    const short = await page.evaluate((names) => names.map(window.perfsleuthShortName), NAMES);
    return { names: NAMES, short, hostile: { shown: await cell.innerText(), full: await cell.getAttribute("title") } };
  },

  async top_table(page) {
    await page.goto(`${base}#/run/2/top?by=function`);
    await page.locator("table.data tbody tr").first().waitFor();
    await page.fill("input[aria-label=filter]", "pars");
    assert.equal(await page.locator("table.data tbody tr").count(), 1);
    assert.match(await page.locator("table.data tbody tr").innerText(), /parse_input/);
    await page.fill("input[aria-label=filter]", "");
    await page.locator("th button", { hasText: "total" }).click();
    assert.match(await page.locator("table.data tbody tr").first().innerText(), /main/);
  },

  async compare_runs(page) {
    await page.goto(`${base}#/compare`);
    await page.locator("button", { hasText: "Compare" }).click();
    await page.locator("table.changes").waitFor();
    await urlMatching(page, /#\/compare\?a=1&b=2/);
    const first = await page.locator("table.changes tbody tr").first().innerText();
    assert.match(first, /compute_hot/);
    assert.match(first, /-26\.54%/);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.screenshot({ path: `${artifacts}/compare.png`, fullPage: true });
  },

  async compare_only_comparable(page) {
    await page.goto(`${base}#/`);
    await page.locator("table.runs").waitFor();
    assert.equal(await page.locator("a", { hasText: /^Compare run/ }).innerText(), "Compare run 1 with run 2");
    await page.goto(`${base}#/compare`);
    await page.locator("select[aria-label=before]").waitFor();
    assert.equal(await page.inputValue("select[aria-label=after]"), "2");
    assert.equal(await page.inputValue("select[aria-label=before]"), "1");
    const other = page.locator("select[aria-label=before] option[value='3']");
    assert.equal(await other.getAttribute("disabled"), "");
    assert.match(await other.innerText(), /^run 3: \.\/server --port 8080 \(wall, ns\): not comparable, it counts ns, run 2 counts samples$/);
    await page.selectOption("select[aria-label=after]", "3");
    await page.locator(".compare-note", { hasText: "No other run is comparable with run 3" }).waitFor();
    assert.ok(await page.locator("button", { hasText: "Compare" }).isDisabled());
    await page.screenshot({ path: `${artifacts}/compare-pick.png`, fullPage: true });
    await page.goto(`${base}#/compare?a=2&b=3`);
    await page.locator(".compare-note").waitFor();
    assert.equal(await page.locator(".compare-note").innerText(), "Run 2 and run 3 are not comparable: run 2 counts samples, run 3 counts ns. The shares below compare different things.");
    assert.equal(await page.locator("h1 .subtitle").count(), 0, "no ratio of totals in different units");
  },

  async python_frames(page) {
    // Run 3's handle_request is a Python frame: its own colour, named in the legend.
    await page.goto(`${base}#/run/3/flame`);
    await page.locator(".legend-item", { hasText: "Python" }).waitFor();
    assert.deepEqual(await page.locator(".legend-item").allInnerTexts(), ["function (warm, by name)", "inlined", "kernel", "Python", "search match"]);
    const point = await framePoint(page, "handle_request");
    assertSameColour(await pixelAt(page, point), await legendColour(page, "Python"), "a Python frame");
    await page.mouse.move(point.x, point.y);
    await page.locator(".flame-tip", { hasText: "total" }).waitFor();
    assert.match(await page.locator(".flame-tip .tip-name").innerText(), /^handle_request \(Python\)$/);
    await page.screenshot({ path: `${artifacts}/flame-python.png`, fullPage: true });
  },

  async exact_totals(page) {
    // Run 3 is 9,029,117,580 ns, shown to the nanosecond (float32 columns made it 9,029,117,952), also after hide.
    await page.goto(`${base}#/run/3/flame`);
    await page.locator(".frame-details", { hasText: "ns)" }).waitFor();
    assert.match(await page.locator(".frame-details").innerText(), /\(9,029,117,580 ns\)/);
    await page.goto(`${base}#/run/3/flame?hide=handle_request`);
    await page.locator(".filter-info").waitFor();
    assert.match(await page.locator(".frame-details").innerText(), /\(9,029,117,580 ns\)/);
  },

  async overview_facts(page) {
    await page.goto(`${base}#/run/3`);
    await page.locator("table.facts").waitFor();
    const facts = await page.locator("table.facts").innerText();
    assert.match(facts, /recorded\s+1,000 samples · 9,029,117,580 ns/);
    assert.doesNotMatch(facts, /threads/, "no threads row for a run without threads");
    assert.match(await page.locator("main").innerText(), /No findings: `perfsleuth advise` ran on this run and found nothing to suggest\./);
    await page.goto(`${base}#/run/1`);
    await page.locator("table.facts").waitFor();
    assert.match(await page.locator("table.facts").innerText(), /recorded\s+1,655 samples\nthreads\s+2/);
    assert.match(await page.locator("main").innerText(), /No findings stored for this run: `perfsleuth advise 1` \(with the same --store\) analyzes it/);
  },

  async experiments(page) {
    await page.goto(`${base}#/run/2/experiments`);
    await page.locator("svg.plot").waitFor();
    assert.equal(await page.locator("svg.plot circle").count(), 12);
    assert.equal(await page.locator(".metric-plot h3").innerText(), "wall_s (s, one dot per run, bar: mean)");
    assert.match(await page.locator("svg.plot").textContent(), /glibc[\s\S]*mimalloc/);
    assert.match(await page.locator("svg.plot").textContent(), /\d s$/, "the axis says its unit");
  },

  async token_login(page) {
    await page.goto(`${tokenBase}?token=${token}#/`);
    await page.locator("table.runs").waitFor();
    await urlNotMatching(page, /token/);
    await page.goto(`${tokenBase}#/run/2/top`);
    await page.locator("table.data tbody tr").first().waitFor();
    const bare = await page.evaluate(async () => (await fetch("/api/runs")).status);
    assert.equal(bare, 401);
  },

  async report_messages(page) {
    await page.goto(`file://${reportFile}#/run/2/source?file=src/leak.cc`);
    await page.locator("section.source-file").waitFor();
    assert.match(await page.locator("section.source-file p.warning").innerText(), /make the report with `perfsleuth report --src DIR`/);
    await page.goto(`file://${singleReport}#/compare`);
    await page.locator("h1", { hasText: "Compare two runs" }).waitFor();
    assert.match(await page.locator("main").innerText(), /This report holds one run: make it with `perfsleuth report RUN --compare OTHER` to compare two\./);
  },

  async html_report(page) {
    const remote = [];
    page.on("request", (r) => {
      if (!/^(file|data|blob):/.test(r.url())) remote.push(r.url());
    });
    await page.goto(`file://${reportFile}`);
    await page.locator("h1", { hasText: "Run 2" }).waitFor();
    await page.goto(`file://${reportFile}#/run/2/flame`);
    await page.locator("canvas.flame-canvas").waitFor();
    await page.fill("input[aria-label=search]", "malloc");
    await page.locator(".search-info", { hasText: "match" }).waitFor();
    // Offline, no control asks for what the file does not hold.
    assert.equal(await page.locator("#nav a", { hasText: "Fleet" }).count(), 0);
    assert.equal(await page.locator("select[aria-label=threads], select[aria-label=states]").count(), 0);
    await page.goto(`file://${reportFile}#/run/2/source?file=src/engine.cc&line=13&function=compute_hot`);
    await page.locator("tr.target").waitFor();
    await page.screenshot({ path: `${artifacts}/report.png`, fullPage: true });
    assert.deepEqual(remote, []);
  },

  async flame_html(page) {
    // `perfsleuth flame --html --state running`: the UI's one flame graph, its filter kept.
    const remote = [];
    page.on("request", (r) => {
      if (!/^(file|data|blob):/.test(r.url())) remote.push(r.url());
    });
    await page.goto(`file://${flameFile}`);
    await page.locator("canvas.flame-canvas").waitFor();
    assert.match(page.url(), /#\/run\/2\/flame\?state=running$/);
    await page.fill("input[aria-label=search]", "compute_hot");
    await page.locator(".search-info", { hasText: "match" }).waitFor();
    assert.deepEqual(remote, []);
  },
};

const only = process.env.FLOWS ? process.env.FLOWS.split(",") : Object.keys(flows);
await runFlows(flows, only, artifacts);

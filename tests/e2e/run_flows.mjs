// Runs browser flows in Debian's Chromium through Playwright, shared by flows.mjs and
// cache_flow.mjs: each flow gets a fresh page; prints one JSON line per flow,
// {"flow", "ok", "error", "shown"} (`shown`: what the flow returned, if anything).
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "../../ui/package.json"));
const { chromium } = require("playwright-core");

const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export async function runFlows(flows, names, artifacts) {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_FLAGS });
  for (const name of names) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    // a bound for a loaded machine, not a measurement: 15 s failed a token login's first
    // page at load ~15 (four engineers' builds beside the CI rehearsal)
    page.setDefaultTimeout(60000);
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    try {
      const shown = await flows[name](page);
      assert.deepEqual(errors, [], "no uncaught errors in the page");
      console.log(JSON.stringify({ flow: name, ok: true, shown }));
    } catch (e) {
      await page.screenshot({ path: `${artifacts}/failed-${name}.png`, fullPage: true }).catch(() => {});
      console.log(JSON.stringify({ flow: name, ok: false, error: String(e?.stack ?? e) }));
    }
    await context.close();
  }
  await browser.close();
}

/**
 * The page's URL once it matches `pattern`. Playwright learns of a pushState a moment
 * after the click or key that made it, so reading page.url() at once races with it on a
 * loaded machine.
 */
export async function urlMatching(page, pattern) {
  await page.waitForURL(pattern).catch(() => {});
  assert.match(page.url(), pattern);
  return page.url();
}

/** The page's URL once it no longer matches `pattern` (see urlMatching). */
export async function urlNotMatching(page, pattern) {
  await page.waitForURL((url) => !pattern.test(url.href)).catch(() => {});
  assert.doesNotMatch(page.url(), pattern);
  return page.url();
}

const AXE = require.resolve("axe-core/axe.min.js");

/**
 * The serious and critical axe-core violations of the page at `url`, in light and dark
 * mode, once `ready` (a selector) is drawn. The page's Content-Security-Policy forbids
 * the injected axe script: it is bypassed here only.
 */
export async function seriousViolations(page, url, ready) {
  const found = [];
  for (const colorScheme of ["light", "dark"]) {
    const context = await page.context().browser().newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 }, colorScheme });
    const tab = await context.newPage();
    await tab.goto(url);
    await tab.locator(ready).first().waitFor();
    await tab.addScriptTag({ path: AXE });
    const violations = await tab.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations);
    for (const v of violations) if (["serious", "critical"].includes(v.impact)) found.push(`${colorScheme}: ${v.id} (${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")})`);
    await context.close();
  }
  return found;
}

// The machine code of hot lines in the source view, in Debian's Chromium (Playwright).
// Usage: node asm_flow.mjs BASE_URL ARTIFACT_DIR RUN CHANGED_RUN CACHED_RUN OLD_RUN FUNCTION
// Prints one JSON line per flow: {"flow", "ok", "error", "shown"}; `shown` is what the
// page drew, which tests/e2e/test_ui_asm.py compares with `perfsleuth annotate --asm`.
import assert from "node:assert/strict";
import { runFlows, seriousViolations } from "./run_flows.mjs";

const [base, artifacts, run, changedRun, cachedRun, oldRun, fn] = process.argv.slice(2);

/** Per drawn code row: its line, whether it is open, and its instructions as shown. */
function drawnCode(page) {
  return page.locator("tr.asm").evaluateAll((rows) =>
    rows.map((row) => ({
      line: Number(row.dataset.line),
      open: row.querySelector("details").open,
      summary: row.querySelector("summary").innerText,
      follows: row.previousElementSibling?.id ?? "",
      instructions: [...row.querySelectorAll("tr.asm-insn")].map((tr) => [tr.querySelector(".asm-address").textContent, tr.querySelector(".asm-text").textContent]),
      shares: [...row.querySelectorAll("tr.asm-insn")].map((tr) => tr.querySelector(".asm-share")?.textContent ?? null),
      bars: [...row.querySelectorAll("tr.asm-insn")].map((tr) => tr.querySelector(".asm-heat .bar")?.style.width ?? null),
      hottest: [...row.querySelectorAll("tr.asm-hottest")].map((tr) => Number(tr.dataset.address)),
      symbols: [...row.querySelectorAll("tr.asm-symbol")].map((tr) => tr.textContent),
    })),
  );
}

const flows = {
  async hot_line_code(page) {
    await page.goto(`${base}#/run/${run}/source?function=${encodeURIComponent(fn)}`);
    await page.locator("tr.asm").first().waitFor();
    const notice = await page.locator(".asm-notice").innerText();
    const before = await drawnCode(page);
    assert.ok(before.length >= 2, `at least two hot lines with code: ${before.length}`);
    assert.equal(before.filter((r) => r.open).length, 1, "one line's code is open (the hottest)");
    for (const row of before) assert.equal(row.follows, `L${row.line}`, "each code row sits under its source line");
    // Keyboard only: focus a closed line's disclosure and open it with Enter.
    const closed = before.findIndex((r) => !r.open);
    await page.locator("tr.asm summary").nth(closed).focus();
    await page.keyboard.press("Enter");
    assert.equal(await page.locator("tr.asm details").nth(closed).evaluate((d) => d.open), true);
    assert.ok(await page.locator("tr.asm").nth(closed).locator("tr.asm-insn").first().isVisible());
    await page.locator("tr.asm").first().scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${artifacts}/source-asm.png`, fullPage: false });
    return { notice, rows: before };
  },

  /** A run stored without sample addresses: the code, and why it has no cost per instruction. */
  async older_run(page) {
    await page.goto(`${base}#/run/${oldRun}/source?function=${encodeURIComponent(fn)}`);
    await page.locator("tr.asm").first().waitFor();
    return { notice: await page.locator(".asm-notice").innerText(), rows: await drawnCode(page) };
  },

  async changed_binary(page) {
    await page.goto(`${base}#/run/${changedRun}/source?function=${encodeURIComponent(fn)}`);
    await page.locator(".asm-notice").waitFor();
    const notice = await page.locator(".asm-notice").innerText();
    await page.screenshot({ path: `${artifacts}/source-asm-changed.png`, fullPage: false });
    return { notice, rows: await page.locator("tr.asm").count(), lines: await page.locator("table.source tbody tr[id]").count() };
  },

  async cached_binary(page) {
    await page.goto(`${base}#/run/${cachedRun}/source?function=${encodeURIComponent(fn)}`);
    await page.locator("tr.asm").first().waitFor();
    return { notice: await page.locator(".asm-notice").innerText(), rows: await page.locator("tr.asm").count() };
  },

  /** axe-core on the source page with the code open, light and dark: no serious violation. */
  async accessibility(page) {
    const found = await seriousViolations(page, `${base}#/run/${run}/source?function=${encodeURIComponent(fn)}`, "tr.asm");
    assert.deepEqual(found, [], "no serious or critical accessibility violation");
    return found;
  },
};

await runFlows(flows, Object.keys(flows), artifacts);

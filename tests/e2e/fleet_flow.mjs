// The Fleet page in Debian's Chromium, driven by Playwright.
// Usage: node fleet_flow.mjs BASE_URL ARTIFACT_DIR
// Prints one JSON line per flow: {"flow", "ok", "error", "shown"}; `shown` is what the
// page showed, which tests/e2e/test_ui_fleet.py compares with the fleet queries.
import assert from "node:assert/strict";
import { runFlows, seriousViolations, urlMatching } from "./run_flows.mjs";

const [base, artifacts] = process.argv.slice(2);

/** [name, self] of each TopN row, as the page prints them. */
function topRows(page) {
  return page.locator(".fleet-top table.data tbody tr").evaluateAll((rows) =>
    rows.map((r) => {
      const cells = [...r.querySelectorAll("td")].map((td) => td.innerText.trim());
      return [cells[2], cells[0]];
    }),
  );
}

const flows = {
  async fleet_top(page) {
    await page.goto(`${base}#/`);
    await page.locator("#nav a", { hasText: "Fleet" }).click();
    await page.locator(".fleet-top tbody tr").first().waitFor();
    const rows = await topRows(page);
    await page.locator(".fleet-top a.fn", { hasText: "parse_json" }).click();
    await page.waitForURL(/fn=parse_json/);
    assert.match(await page.locator(".fleet-selected h2").innerText(), /^parse_json/);
    await page.screenshot({ path: `${artifacts}/fleet-top.png`, fullPage: true });
    await page.selectOption("select[data-label=service]", "db");
    await page.waitForURL(/where=service%3Ddb/);
    await page.locator(".fleet-top tbody tr", { hasText: "inflate" }).waitFor();
    assert.match(await page.locator("h1").innerText(), /where service=db/);
    return { rows, filtered: await topRows(page), url: page.url() };
  },

  async fleet_flame(page) {
    await page.goto(`${base}#/fleet?range=1h&where=service%3Ddb`);
    await page.locator(".fleet-views a", { hasText: "Flame graph" }).click();
    await page.locator("canvas.flame-canvas").waitFor();
    await urlMatching(page, /#\/fleet\/flame\?.*where=service%3Ddb/);
    const drawn = await page.evaluate(() => {
      const g = window.perfsleuthFlame.graph;
      const names = [];
      for (let k = 0; k < g.drawn.count; k++) {
        const node = g.drawn.node[k];
        if (node > 0) names.push(g.data.names[g.data.name[node]]);
      }
      return { drawn: g.drawn.count, names };
    });
    await page.screenshot({ path: `${artifacts}/fleet-flame.png`, fullPage: true });
    return drawn;
  },

  async fleet_series(page) {
    await page.goto(`${base}#/fleet?range=1h&where=service%3Dapi&fn=malloc`);
    const chart = page.locator(".fleet-selected svg.fleet-series-chart");
    await chart.waitFor();
    await page.screenshot({ path: `${artifacts}/fleet-series.png`, fullPage: true });
    return {
      from: Number(await chart.getAttribute("data-from")),
      to: Number(await chart.getAttribute("data-to")),
      points: await chart.locator("circle.series-point title").allTextContents(),
    };
  },

  async fleet_diff(page) {
    const now = Math.floor(Date.now() / 1000);
    const sides = { a: `${now - 2700}..${now - 1800}`, b: `${now - 1800}..${now - 900}` };
    await page.goto(`${base}#/fleet?range=1h`);
    await page.locator(".fleet-views a", { hasText: "Diff" }).click();
    await page.fill("input[data-side=a]", sides.a);
    await page.fill("input[data-side=b]", sides.b);
    await page.locator(".fleet-sides button", { hasText: "compare" }).click();
    await page.waitForURL(/#\/fleet\/diff\?.*b=/);
    await page.locator("table.fleet-diff tbody tr").first().waitFor();
    const rows = await page.locator("table.fleet-diff tbody tr").evaluateAll((trs) =>
      trs.map((tr) => {
        const cells = [...tr.querySelectorAll("td")].map((td) => td.innerText.trim());
        return { name: cells[6], delta_self: cells[2], grew: tr.classList.contains("worse") };
      }),
    );
    await page.locator("canvas.flame-canvas").waitFor();
    const flame = await page.evaluate(() => {
      const { data } = window.perfsleuthFlame.graph;
      return { columns: Object.keys(data.columns), names: data.names };
    });
    const sideTotals = await page.locator(".fleet-total").innerText();
    await page.screenshot({ path: `${artifacts}/fleet-diff.png`, fullPage: true });
    return { sides, rows, url: page.url(), flame, sideTotals };
  },

  async fleet_findings(page) {
    await page.goto(`${base}#/fleet?range=1h`);
    await page.locator(".fleet-views a", { hasText: "Findings" }).click();
    await page.locator("article.fleet-finding").first().waitFor();
    await page.fill("input[aria-label='core cost']", "40");
    await page.locator("input[aria-label='core cost']").dispatchEvent("change");
    await page.waitForURL(/core_cost=40/);
    await page.locator(".cores-saved", { hasText: "per month" }).first().waitFor();
    const findings = await page.locator("article.fleet-finding").evaluateAll((cards) =>
      cards.map((card) => ({
        rule: card.dataset.rule,
        saved: card.querySelector(".cores-saved").innerText,
        services: card.querySelector(".fleet-services").innerText,
        hosts: card.querySelector(".fleet-hosts").innerText,
        fix: [...card.querySelectorAll("pre.fix")].map((pre) => pre.innerText),
      })),
    );
    await page.screenshot({ path: `${artifacts}/fleet-findings.png`, fullPage: true });
    return { findings, url: page.url() };
  },

  async fleet_restore(page) {
    await page.goto(`${base}#/fleet?range=6h&where=service%3Dapi&by=dso&sort=total&fn=malloc`);
    await page.locator(".fleet-top tbody tr").first().waitFor();
    return {
      selected: await page.locator(".fleet-selected h2").innerText(),
      service: await page.locator("select[data-label=service]").inputValue(),
      by: await page.locator("p.toolbar a.chip.active", { hasText: /^(function|line|file|dso)$/ }).innerText(),
      range: await page.locator(".fleet-range a.chip.active").innerText(),
      rows: await topRows(page),
    };
  },
};

flows.fleet_timeline_and_labels = async (page) => {
  await page.goto(`${base}#/fleet?range=1h`);
  const chart = page.locator("svg.fleet-cpu-chart");
  await chart.waitFor();
  const bars = await chart.locator("rect.cpu-bar title").allTextContents();
  // A drag across the chart's middle makes that span the range.
  const box = await chart.boundingBox();
  await page.mouse.move(box.x + box.width * 0.4, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.7, box.y + box.height / 2, { steps: 4 });
  await page.mouse.up();
  const dragged = await urlMatching(page, /from=\d+&.*to=\d+|to=\d+&.*from=\d+/);
  // The breakdown by a label: each service's share, a click filters to it.
  await page.goto(`${base}#/fleet?range=1h&by=service`);
  await page.locator(".fleet-top thead th", { hasText: /service/ }).first().waitFor();
  await page.locator(".fleet-top tbody tr").first().waitFor();
  const services = await page.locator(".fleet-top tbody tr").evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.innerText.trim())));
  await page.locator(".fleet-top a", { hasText: /^db$/ }).click();
  const filtered = await urlMatching(page, /where=service%3Ddb/);
  // Any label the range holds is a grouping too: the pushes' own `version`.
  await page.goto(`${base}#/fleet?range=1h`);
  await page.locator("a.chip", { hasText: /^label:version$/ }).click();
  await urlMatching(page, /by=label%3Aversion|by=label:version/);
  // The URL changes at the click; the table by function stays until the new one is drawn.
  await page.locator(".fleet-top thead th", { hasText: /version/ }).first().waitFor();
  await page.locator(".fleet-top tbody tr").first().waitFor();
  const versions = await page.locator(".fleet-top tbody tr").evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.innerText.trim())));
  const header = await page.locator(".fleet-top thead th").allInnerTexts();
  await page.locator(".fleet-top tbody a").first().click();
  const byVersion = await urlMatching(page, /where=version%3D/);
  return { bars, dragged, services, filtered, versions, header, byVersion };
};

flows.fleet_accessibility = async (page) => {
  const now = Math.floor(Date.now() / 1000);
  const found = [];
  for (const [hash, ready] of [
    ["#/fleet?range=1h", ".fleet-top tbody tr"],
    [`#/fleet/diff?range=1h&a=${now - 2700}..${now - 1800}&b=${now - 1800}..${now - 900}`, "table.fleet-diff tbody tr"],
    ["#/fleet/findings?range=1h", "article.fleet-finding"],
    ["#/fleet/flame?range=1h", "canvas.flame-canvas"],
  ]) {
    found.push(...(await seriousViolations(page, `${base}${hash}`, ready)).map((v) => `${hash}: ${v}`));
  }
  return found;
};

await runFlows(flows, Object.keys(flows), artifacts);

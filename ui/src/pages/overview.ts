import { getJSON } from "../api";
import { h, location, pct, shortDso } from "../dom";
import { nameLink } from "../names";
import { href } from "../router";
import type { Advice, RunDetail, TopDoc } from "../types";
import { findingCard, functionLinks, noFindingsBlock, recorded } from "./common";
import { hasThreadStates } from "./threads";

export async function renderOverview(app: HTMLElement, runId: string): Promise<void> {
  const [run, findings, top] = await Promise.all([
    getJSON<RunDetail>(`/api/runs/${runId}`),
    getJSON<Advice>(`/api/runs/${runId}/findings`),
    getJSON<TopDoc>(`/api/runs/${runId}/top`, { by: "function" }),
  ]);
  const facts: [string, string][] = [
    ["command", run.command || "(imported)"],
    ["mode", run.mode],
    ["started (UTC)", run.started.replace("T", " ").replace("Z", "")],
    ["duration", run.duration_s === null ? "–" : `${run.duration_s.toFixed(3)} s`],
    ["exit status", run.exit_status === null ? "–" : String(run.exit_status)],
    ["recorded", recorded(run.unit, run.samples, run.total)],
    ["threads", run.threads.length ? String(run.threads.length) : ""],
    ["host", [run.host, run.cpu_model, run.kernel].filter(Boolean).join(" · ")],
    ["git", run.git_rev],
    ["cwd", run.cwd],
  ];
  app.append(
    h("h1", null, `Run ${run.id}`, h("span", { class: "subtitle" }, run.command)),
    h("p", { class: "actions" },
      h("a", { href: href(`/run/${runId}/flame`), class: "button" }, "Flame graph"),
      h("a", { href: href(`/run/${runId}/top`), class: "button" }, "Top functions"),
      h("a", { href: href(`/run/${runId}/findings`), class: "button" }, `Findings (${findings.findings.length})`),
      run.experiments ? h("a", { href: href(`/run/${runId}/experiments`), class: "button" }, `Experiments (${run.experiments})`) : null,
      hasThreadStates(run) ? h("a", { href: href(`/run/${runId}/threads`), class: "button" }, "Threads") : null,
      run.cache_functions ? h("a", { href: href(`/run/${runId}/cache`), class: "button" }, "Cache layout and footprint") : null,
    ),
    h("table", { class: "facts" }, facts.filter(([, v]) => v).map(([k, v]) => h("tr", null, h("th", null, k), h("td", null, v)))),
    h("h2", null, "Findings, by gain"),
    findings.findings.length
      ? h("div", { class: "findings" }, findings.findings.slice(0, 8).map((f) => findingCard(runId, f, true)))
      : noFindingsBlock(findings.advised, runId),
    h("h2", null, "Top functions by self cost"),
    h(
      "table",
      { class: "data" },
      h("thead", null, h("tr", null, ["self", "total", "function", "DSO", "file:line", "open"].map((t) => h("th", null, t)))),
      h(
        "tbody",
        null,
        top.rows.slice(0, 15).map((r) =>
          h(
            "tr",
            null,
            h("td", { class: "num" }, pct(r.self)),
            h("td", { class: "num" }, pct(r.total)),
            h("td", null, nameLink(r.function)),
            h("td", null, shortDso(r.dso)),
            h("td", null, location(r.file, r.line)),
            h("td", null, functionLinks(runId, r.function)),
          ),
        ),
      ),
    ),
  );
}

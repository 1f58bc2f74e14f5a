import { getJSON } from "../api";
import { h, message } from "../dom";
import { href } from "../router";
import { newestPair } from "../comparable";
import { recorded } from "./common";
import type { RunSummary } from "../types";

function duration(seconds: number | null): string {
  return seconds === null ? "–" : `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
}

export async function renderRuns(app: HTMLElement): Promise<void> {
  const runs = await getJSON<RunSummary[]>("/api/runs");
  app.append(h("h1", null, "Runs"));
  if (!runs.length) {
    app.append(message("No runs stored yet: record one with `perfsleuth record -- CMD`."));
    return;
  }
  const rows = runs.map((r) =>
    h(
      "tr",
      { class: "run-row" },
      h("td", null, h("a", { href: href(`/run/${r.id}`) }, r.id)),
      h("td", { class: "command" }, h("a", { href: href(`/run/${r.id}`) }, r.command || "(imported)")),
      h("td", null, r.started.replace("T", " ").replace("Z", "")),
      h("td", { class: "num" }, duration(r.duration_s)),
      h("td", null, r.mode),
      h("td", { class: "num" }, recorded(r.unit, r.samples, r.total)),
      h(
        "td",
        null,
        r.top_finding
          ? h("a", { href: href(`/run/${r.id}/findings`) }, r.top_finding.title)
          : h("span", { class: "muted" }, "–"),
      ),
    ),
  );
  app.append(
    h(
      "table",
      { class: "data runs" },
      h(
        "thead",
        null,
        h("tr", null, ["run", "command", "started (UTC)", "duration", "mode", "recorded", "top finding"].map((t) => h("th", null, t))),
      ),
      h("tbody", null, rows),
    ),
  );
  const pair = newestPair(runs);
  if (pair) {
    const [before, after] = pair;
    app.append(h("p", null, h("a", { href: href("/compare", { a: before.id, b: after.id }) }, `Compare run ${before.id} with run ${after.id}`), h("span", { class: "muted" }, " (the newest runs of the same program, mode and unit)")));
  }
}

// Per thread, where its time went by state: `perfsleuth threads` (views/threads.py),
// for runs with off-CPU states. Each thread and each state links to the flame graph
// (and TopN) of those samples only.

import { getJSON } from "../api";
import { bar, h, message, pct } from "../dom";
import { href } from "../router";
import type { Choices, RunDetail, ThreadRow, ThreadsDoc } from "../types";


/** The run has thread states beyond running: an off-CPU, all or wall run. */
export function hasThreadStates(run: RunDetail): boolean {
  return run.states.some((s) => s !== "running");
}

function flameOf(runId: string, t: ThreadRow, state?: string): string {
  return href(`/run/${runId}/flame`, { thread: t.tid, state });
}

/** The thread's time as one bar, a segment per state, each a link to its flame graph. */
function stateBar(runId: string, t: ThreadRow): HTMLElement {
  return h(
    "span",
    { class: "state-bar" },
    Object.entries(t.states).map(([state, share]) =>
      h("a", { href: flameOf(runId, t, state), class: `state-seg state-${state}`, style: `flex-grow:${share}`, title: `${state} ${pct(share)} of ${t.name || t.tid}`, "aria-label": `${state} ${pct(share)}` }),
    ),
  );
}

function threadRow(runId: string, t: ThreadRow, states: string[], unit: string): HTMLElement {
  return h(
    "tr",
    { "data-tid": t.tid },
    h("td", null, h("a", { href: flameOf(runId, t), class: "thread" }, `${t.name || "?"} (${t.tid})`), " ", h("a", { href: href(`/run/${runId}/top`, { thread: t.tid }), class: "muted" }, "top")),
    h("td", { class: "num" }, h("span", { class: "cost" }, bar(t.share), pct(t.share))),
    h("td", { class: "num" }, `${t.total.toLocaleString()} ${unit}`),
    h("td", { class: "state-cell" }, stateBar(runId, t)),
    states.map((s) => h("td", { class: "num" }, t.states[s] ? [h("a", { href: flameOf(runId, t, s) }, pct(t.states[s], 1)), marginOf(t, s)] : "–")),
  );
}

/** A sampled share's 95% margin (views/threads.py), where the run samples instants. */
function marginOf(t: ThreadRow, state: string): HTMLElement | string {
  const margin = t.margins?.[state];
  return margin ? h("span", { class: "muted margin" }, ` ±${(100 * margin).toFixed(1)}`) : "";
}

export async function renderThreads(app: HTMLElement, runId: string): Promise<void> {
  const [run, doc, choices] = await Promise.all([getJSON<RunDetail>(`/api/runs/${runId}`), getJSON<ThreadsDoc>(`/api/runs/${runId}/threads`), getJSON<Choices>("/api/choices")]);
  app.append(h("h1", null, "Threads", h("span", { class: "subtitle" }, `run ${runId} · ${run.command}`)));
  if (!hasThreadStates(run)) {
    app.append(message(`Run ${runId} has no off-CPU states: record with \`perfsleuth record --mode offcpu\` (or all, wall) to see where each thread waits.`));
  }
  const states = choices.states.filter((s) => doc.threads.some((t) => t.states[s]));
  app.append(
    h("p", { class: "muted" }, "Each thread's time by state, as `perfsleuth threads` gives it. Click a thread or a state for the flame graph of those samples.", doc.threads.some((t) => t.margins) ? " ±: the 95% margin of a share of sampled instants (narrower with more: --freq or a longer run)." : ""),
    h("p", { class: "legend" }, states.map((s) => h("span", { class: "legend-item" }, h("i", { class: `state-${s}` }), s))),
    h(
      "table",
      { class: "data threads" },
      h("thead", null, h("tr", null, h("th", null, "thread"), h("th", { class: "num" }, "share of run"), h("th", { class: "num" }, "time"), h("th", null, "by state"), states.map((s) => h("th", { class: "num" }, s)))),
      h("tbody", null, doc.threads.map((t) => threadRow(runId, t, states, doc.unit))),
    ),
  );
}

// The flame page's time-order chart (`chart=time` in the URL, with the shown range as
// `range=FIRST-END` in samples): the run's samples in the order they were taken; with
// `chart=lanes`, one lane per thread on one time axis (`range` in ns after the first sample).
import { getBinary, type Params } from "../api";
import { append, h, message, pct } from "../dom";
import { type FlameData, hasPython } from "../flame";
import { href, replaceParams } from "../router";
import { Minimap } from "../minimap";
import { decodeTimeline, type Lane, lanes, TimeChart, type Timeline, timeAt, when } from "../timeline";
import type { RunDetail } from "../types";
import { colourLegend, frameTitle, functionLinks, stateThreadSelects } from "./common";

declare global {
  interface Window {
    perfsleuthTimeline?: TimeChart;
    perfsleuthLanes?: TimeChart[];
    perfsleuthMinimap?: Minimap;
  }
}

/** Chips switching the flame page between the graph and the time order, keeping its other parameters. */
export function chartChoice(runId: string, params: URLSearchParams): HTMLElement {
  const shown = params.get("chart");
  const link = (label: string, chart: string | null) => {
    const next = { ...Object.fromEntries(params), chart, range: null, zoom: null };
    const active = chart === shown;
    return h("a", { href: href(`/run/${runId}/flame`, next), class: active ? "chip active" : "chip", "aria-current": active ? "true" : undefined }, label);
  };
  return h("span", { class: "chart-choice" }, link("graph", null), link("time order", "time"), link("lanes", "lanes"));
}

function parseRange(value: string | null): [number, number] {
  const match = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(value ?? "");
  return match ? [Number(match[1]), Number(match[2])] : [0, 0];
}

type FlameLoader = (path: string, params: Params) => Promise<FlameData>;

/** The chart, over the flame graph `loadFlame` gives (the flame page's, kept across views). */
export async function renderTimeOrder(app: HTMLElement, runId: string, run: RunDetail, params: URLSearchParams, loadFlame: FlameLoader): Promise<void> {
  const filters: Params = { thread: params.getAll("thread") };
  const inLanes = params.get("chart") === "lanes";
  const title = h("h1", null, "Flame graph", h("span", { class: "subtitle" }, `run ${runId} · ${run.command} · ${inLanes ? "time order per thread" : "time order"}`));
  const toolbar = h("div", { class: "toolbar" }, chartChoice(runId, params), " ", stateThreadSelects(run, params, "flame"));
  let buffer: ArrayBuffer;
  try {
    buffer = await getBinary(`/api/runs/${runId}/timeline`, filters);
  } catch (e) {
    app.append(title, toolbar, message(`No time order for this run: ${(e as Error).message}.`, "warning no-timeline"));
    return;
  }
  const [data, timeline] = [await loadFlame(`/api/runs/${runId}/flame`, filters), decodeTimeline(buffer)];
  if (!timeline.samples) {
    app.append(title, toolbar, message("No samples with times in this selection (pick another thread).", "warning no-timeline"));
    return;
  }
  const info = h("p", { class: "muted time-info" });
  const details = h("div", { class: "frame-details", "aria-live": "polite" });
  const shownLanes: Lane[] = inLanes ? lanes(timeline) : [{ tid: 0, name: "", timeline }];
  const extent = shownLanes[0].timeline.extent;
  const describe = (own: Timeline) => (node: number, samples: number, x0: number): string[] =>
    own.realTime
      ? [frameTitle(data, node), `on the stack ${when(samples)}`, `from ${when(x0)} after the run's first sample`]
      : [frameTitle(data, node), `${samples.toLocaleString()} samples in a row (${pct(samples / timeline.samples)} of the run)`, `from ${when(timeAt(timeline, x0))} after the first sample`];
  let focused: TimeChart | null = null; // the lane last clicked or zoomed by keyboard
  const charts = shownLanes.map((lane, k) => {
    const chart: TimeChart = new TimeChart(data, lane.timeline, {
      tooltip: describe(lane.timeline),
      onRange: (x0, x1) => {
        focused = chart;
        show(x0, x1, true);
      },
      onDraw: k ? undefined : () => minimap.draw(chart.v0, chart.v1),
      axis: k === 0,
      label: inLanes ? `time order of ${laneName(lane)}` : undefined,
    });
    return chart;
  });
  const [first] = charts;
  const minimap = new Minimap(data, charts.map((c) => c.bars), extent, (x0, x1) => show(x0, x1, true));
  window.perfsleuthTimeline = first;
  window.perfsleuthLanes = inLanes ? charts : undefined;
  window.perfsleuthMinimap = minimap;
  const show = (x0: number, x1: number, push: boolean) => {
    for (const chart of charts) chart.setRange(x0, x1);
    const whole = first.v0 === 0 && first.v1 === extent;
    if (whole) params.delete("range");
    else params.set("range", `${Math.round(first.v0)}-${Math.round(first.v1)}`);
    replaceParams(params, push);
    info.textContent = inLanes ? laneRange(first, shownLanes.length) : sampleRange(first, timeline);
    reset.disabled = whole;
    const node = (focused ?? first).selected();
    if (node > 0) details.replaceChildren(h("strong", { class: "fn" }, frameTitle(data, node)), h("div", null, functionLinks(runId, data.names[data.name[node]])));
  };
  const reset = h("button", { type: "button", onclick: () => show(0, extent, true) }, "whole run");
  const states = params.getAll("state").length ? message("Thread states are not kept in time order: every state is shown.", "muted") : null;
  toolbar.append(" ", reset, " ", colourLegend("name", hasPython(data)));
  append(app, [
    title,
    toolbar,
    states,
    h("p", { class: "muted" }, inLanes ? LANES_HELP : ORDER_HELP),
    info,
    h("div", { class: "minimap-holder" }, minimap.canvas),
    charts.map((chart, k) =>
      h(
        "section",
        { class: "time-lane" },
        inLanes ? h("h2", { class: "lane-label" }, `${laneName(shownLanes[k])} · ${chart.timeline.samples.toLocaleString()} samples (${pct(chart.timeline.samples / timeline.samples)} of the run)`) : null,
        h("div", { class: "flame-holder" }, chart.canvas, chart.tip),
      ),
    ),
    h("p", { class: "muted keys" }, "keys: Tab to the chart, arrows move between frames, Enter zooms to one, + and - zoom, Esc shows the whole run"),
    details,
  ]);
  for (const chart of charts) chart.attach(chart.canvas.parentElement!);
  const [x0, x1] = parseRange(params.get("range"));
  show(x0, x1, false);
  performance.mark("flame-interactive");
}

const ORDER_HELP = "x: the samples in the order they were taken, each column one sample's stack (root at the top); a frame that stays on the stack is one bar. Click a bar to zoom to it; drag across the miniature of the whole run above it to show those samples.";
const LANES_HELP = "One lane per thread, heaviest first, on one time axis: x is when each sample was taken (a sleeping thread leaves a gap), each lane's stacks root at the top; a frame that stays on the stack is one bar. Click a bar to zoom every lane to it; drag across the miniature above to show that time.";

function laneName(lane: Lane): string {
  return lane.name ? `${lane.name} (tid ${lane.tid})` : `tid ${lane.tid}`;
}

function sampleRange(chart: TimeChart, timeline: Timeline): string {
  const [a, b] = [timeAt(timeline, chart.v0), timeAt(timeline, Math.max(chart.v0, chart.v1 - 1))];
  return `samples ${Math.round(chart.v0).toLocaleString()}–${Math.round(chart.v1).toLocaleString()} of ${timeline.samples.toLocaleString()}, taken ${when(a)} to ${when(b)} after the first (the run's samples span ${when(timeline.durationNs)})`;
}

function laneRange(chart: TimeChart, threads: number): string {
  return `${when(chart.v0)} to ${when(chart.v1)} after the first sample, of ${when(chart.timeline.extent)}; ${threads} threads, heaviest first`;
}

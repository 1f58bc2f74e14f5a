// The time-order chart ("time order" in speedscope): x is the run's samples in the
// order they were taken (or, in a per-thread lane, the time they were taken), y the
// stack of each, root at the top. Drawn on a canvas by
// hand like the flame graph, from the flame graph's own nodes (server/timelinedata.py):
// a frame that stays on the stack across samples is one bar, so drawing is per bar,
// not per sample, and bars narrower than a pixel are drawn once per pixel column.

import { type FlameData, isProcess, nameFill } from "./flame";
import { shortName } from "./names";

export interface Timeline {
  runs: number;
  samples: number;
  durationNs: number;
  unit: string;
  time: Float64Array; // ns after the first sample, per run
  node: Uint32Array; // leaf flame node per run
  count: Uint32Array; // samples per run
  thread: Uint32Array; // index into `threads` per run
  threads: [number, string][]; // [tid, name]
  start: Float64Array; // x of each run's left edge: samples before it, or ns in a lane
  end: Float64Array; // x of its right edge
  extent: number; // x of the end of the run
  realTime: boolean; // x is ns after the first sample (a lane), not samples
}

export function decodeTimeline(buffer: ArrayBuffer): Timeline {
  const headerLength = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
  const n: number = header.runs;
  const offset = 4 + headerLength;
  const time = new Float64Array(buffer, offset, n);
  const node = new Uint32Array(buffer, offset + 8 * n, n);
  const count = new Uint32Array(buffer, offset + 12 * n, n);
  const thread = new Uint32Array(buffer, offset + 16 * n, n);
  const [start, end] = [new Float64Array(n), new Float64Array(n)];
  for (let i = 0; i < n; i++) {
    start[i] = i ? end[i - 1] : 0;
    end[i] = start[i] + count[i];
  }
  const samples: number = header.samples;
  return { runs: n, samples, durationNs: header.duration_ns, unit: header.unit, time, node, count, thread, threads: header.threads, start, end, extent: samples, realTime: false };
}

export interface Lane {
  tid: number;
  name: string;
  timeline: Timeline; // the thread's runs, x in ns after the run's first sample
}

/**
 * One lane per thread, heaviest first, on one time axis. A run of n samples lasts until
 * the thread's next run or n sampling periods, whichever is first, so a thread that
 * sleeps leaves a gap; the period is the median time per sample between a thread's runs.
 */
export function lanes(timeline: Timeline): Lane[] {
  const runsOf = new Map<number, number[]>();
  for (let r = 0; r < timeline.runs; r++) {
    const own = runsOf.get(timeline.thread[r]);
    if (own) own.push(r);
    else runsOf.set(timeline.thread[r], [r]);
  }
  const out = [...runsOf].map(([thread, runs]) => lane(timeline, thread, runs));
  const extent = Math.max(1, ...out.map((l) => (l.timeline.runs ? l.timeline.end[l.timeline.runs - 1] : 0)));
  for (const l of out) l.timeline.extent = extent;
  return out.sort((a, b) => b.timeline.samples - a.timeline.samples || a.tid - b.tid);
}

function lane(timeline: Timeline, thread: number, runs: number[]): Lane {
  const n = runs.length;
  const pick = <T extends Float64Array | Uint32Array>(from: T, to: T): T => {
    runs.forEach((r, i) => (to[i] = from[r]));
    return to;
  };
  const time = pick(timeline.time, new Float64Array(n));
  const count = pick(timeline.count, new Uint32Array(n));
  const perSample = runs.slice(0, -1).map((_, i) => (time[i + 1] - time[i]) / count[i]).sort((a, b) => a - b);
  const period = perSample.length ? perSample[perSample.length >> 1] : 1;
  const end = new Float64Array(n);
  for (let i = 0; i < n; i++) end[i] = Math.min(i + 1 < n ? time[i + 1] : Infinity, time[i] + Math.max(1, count[i] * period));
  const samples = count.reduce((a, b) => a + b, 0);
  const [tid, name] = timeline.threads[thread] ?? [0, "no thread"];
  const own = { ...timeline, runs: n, samples, time, count, node: pick(timeline.node, new Uint32Array(n)), thread: new Uint32Array(n).fill(thread), start: time, end, extent: 0, realTime: true };
  return { tid, name, timeline: own };
}

/** A time after the first sample, in the unit that reads best. */
export function when(ns: number): string {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(3)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  return `${(ns / 1e3).toFixed(1)} µs`;
}

/** ns after the first sample at which sample x (0-based, in time order) was taken. */
export function timeAt(timeline: Timeline, x: number): number {
  let lo = 0;
  let hi = timeline.runs - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (timeline.start[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return timeline.runs ? timeline.time[lo] : 0;
}

/** Bars per depth (index 0 = the root's children), each [flame node, left x, right x], in x order. */
export interface Bars {
  node: Int32Array[];
  x0: Float64Array[];
  x1: Float64Array[];
}

/**
 * Walks the runs, calling `emit(depth, node, x0, x1)` for every bar: a frame is one bar
 * for as long as it stays at its depth of the stack and its thread takes samples. Within a depth a bar closes before
 * the next one opens, so each depth's bars come in x order.
 */
function walk(data: FlameData, timeline: Timeline, emit: (depth: number, node: number, x0: number, x1: number) => void): void {
  const open: number[] = []; // the node open at each depth, and since when
  const since: number[] = [];
  const path: number[] = [];
  let x = 0;
  const close = (from: number) => {
    for (let d = open.length - 1; d >= from; d--) emit(d, open[d], since[d], x);
    open.length = since.length = Math.min(open.length, from);
  };
  for (let r = 0; r < timeline.runs; r++) {
    path.length = 0;
    for (let n = timeline.node[r]; n > 0; n = data.parent[n]) path.push(n);
    path.reverse();
    if (timeline.start[r] > x) close(0); // a gap: the thread took no samples
    x = timeline.start[r];
    let same = 0;
    while (same < open.length && same < path.length && open[same] === path[same]) same++;
    close(same);
    for (let d = same; d < path.length; d++) {
      open.push(path[d]);
      since.push(x);
    }
    x = timeline.end[r];
  }
  close(0);
}

/** Two passes (count, then fill) so millions of bars go straight into typed arrays. */
export function bars(data: FlameData, timeline: Timeline): Bars {
  const counts: number[] = [];
  walk(data, timeline, (d) => (counts[d] = (counts[d] ?? 0) + 1));
  const out: Bars = {
    node: counts.map((n) => new Int32Array(n)),
    x0: counts.map((n) => new Float64Array(n)),
    x1: counts.map((n) => new Float64Array(n)),
  };
  const filled = new Int32Array(counts.length);
  walk(data, timeline, (d, node, x0, x1) => {
    const i = filled[d]++;
    out.node[d][i] = node;
    out.x0[d][i] = x0;
    out.x1[d][i] = x1;
  });
  return out;
}

export interface ChartOptions {
  tooltip: (node: number, samples: number, x0: number) => string[];
  onRange: (x0: number, x1: number) => void;
  onDraw?: () => void; // after each draw (the minimap follows the range)
  axis?: boolean; // the time axis above the bars (default true; lanes below the first have none)
  label?: string; // what the canvas is, for screen readers
}

const ROW = 18;
const AXIS = 18; // the time axis above the bars
const MIN_LABEL_PX = 28;

export class TimeChart {
  readonly canvas = document.createElement("canvas");
  readonly tip = document.createElement("div");
  v0 = 0;
  v1: number;
  readonly bars: Bars;
  private cursor: [number, number] | null = null; // [depth, bar index] the keyboard is on
  private resizing: ResizeObserver | null = null;
  private readonly top: number; // px above the bars: the time axis, or none

  constructor(readonly data: FlameData, readonly timeline: Timeline, private options: ChartOptions) {
    this.v1 = timeline.extent;
    this.top = options.axis === false ? 0 : AXIS;
    this.bars = bars(data, timeline);
    this.canvas.className = "flame-canvas time-chart";
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute("role", "application");
    this.canvas.setAttribute("aria-label", `${options.label ?? "time order"}: Left and Right move between frames, Up and Down between depths, Enter zooms to a frame, + and - zoom, Escape shows the whole run`);
    this.tip.className = "flame-tip";
    this.tip.hidden = true;
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => (this.tip.hidden = true));
    this.canvas.addEventListener("click", (e) => this.onClick(e));
    this.canvas.addEventListener("keydown", (e) => this.onKey(e));
  }

  /** The flame node of the bar last clicked or reached by keyboard, -1 for none. */
  selected(): number {
    return this.cursor ? this.bars.node[this.cursor[0]][this.cursor[1]] : -1;
  }

  get depth(): number {
    return this.bars.node.length;
  }

  /** Show samples x0..x1 (clamped to the run); 0, 0 shows all. */
  setRange(x0: number, x1: number): void {
    const all = this.timeline.extent;
    if (!(x1 > x0)) [x0, x1] = [0, all];
    this.v0 = Math.max(0, Math.min(x0, all - 1));
    this.v1 = Math.max(this.v0 + 1, Math.min(x1, all));
    this.tip.hidden = true;
    this.draw();
  }

  /** Redraw at the holder's width now and whenever it changes. */
  attach(holder: HTMLElement): void {
    this.resizing?.disconnect();
    this.resizing = new ResizeObserver(() => this.draw());
    this.resizing.observe(holder);
  }

  private measured = 0; // the holder's width at the last draw (reading it forces a layout)

  private width(): number {
    return this.measured || this.canvas.parentElement?.clientWidth || 1000;
  }

  private px(x: number): number {
    return ((x - this.v0) / (this.v1 - this.v0)) * this.measured;
  }

  /** How many bars the last draw painted (the e2e test reads it). */
  painted = 0;

  draw(): void {
    this.measured = 0;
    const width = (this.measured = this.width());
    const height = this.top + this.depth * ROW + 4;
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(width * ratio);
    this.canvas.height = Math.round(height * ratio);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "12px ui-monospace, monospace";
    ctx.textBaseline = "middle";
    this.painted = 0;
    for (let d = 0; d < this.depth; d++) this.drawDepth(ctx, d);
    if (this.top) this.drawAxis(ctx, width);
    if (this.cursor) {
      const [d, i] = this.cursor;
      const [a, b] = [this.px(this.bars.x0[d][i]), this.px(this.bars.x1[d][i])];
      ctx.strokeStyle = "#1d2330";
      ctx.lineWidth = 2;
      ctx.strokeRect(a + 1, this.top + d * ROW + 1, Math.max(2, b - a - 2), ROW - 3);
    }
    this.options.onDraw?.();
  }

  /**
   * The time axis above the bars: ticks at even pixel steps, each labelled with the time
   * its sample was taken. The chart is in sample order, so equal steps may span unequal
   * times (a thread that slept takes no room).
   */
  private drawAxis(ctx: CanvasRenderingContext2D, width: number): void {
    const y = AXIS - 1;
    const ticks = Math.max(2, Math.min(8, Math.floor(width / 140)));
    ctx.fillStyle = "#5f6672";
    ctx.strokeStyle = "#8a94a6";
    ctx.lineWidth = 1;
    for (let k = 0; k <= ticks; k++) {
      const px = Math.round((k / ticks) * (width - 1)) + 0.5;
      const x = this.v0 + (k / ticks) * (this.v1 - this.v0);
      const ns = this.timeline.realTime ? x : timeAt(this.timeline, Math.min(x, this.timeline.samples - 1));
      ctx.beginPath();
      ctx.moveTo(px, y - 4);
      ctx.lineTo(px, y);
      ctx.stroke();
      ctx.textAlign = k === 0 ? "left" : k === ticks ? "right" : "center";
      ctx.fillText(when(ns), px, AXIS / 2 - 2);
    }
    ctx.textAlign = "left";
  }

  private drawDepth(ctx: CanvasRenderingContext2D, d: number): void {
    const { node, x0, x1 } = { node: this.bars.node[d], x0: this.bars.x0[d], x1: this.bars.x1[d] };
    const perPixel = (this.v1 - this.v0) / this.measured; // samples per pixel column
    let lastColumn = -1;
    for (let i = firstEnding(x1, this.v0); i < node.length && x0[i] < this.v1; i++) {
      const a = this.px(x0[i]);
      const b = this.px(x1[i]);
      if (b - a < 1) {
        const column = Math.floor(a);
        if (column === lastColumn) {
          // One sliver per pixel column: jump to the first bar reaching the next column.
          i = Math.max(i, firstEnding(x1, this.v0 + (column + 1) * perPixel) - 1);
          continue;
        }
        lastColumn = column;
      }
      const name = this.data.name[node[i]];
      ctx.fillStyle = nameFill(this.data, name);
      const w = Math.max(1, b - a - 0.5);
      ctx.fillRect(a, this.top + d * ROW, w, ROW - 1);
      this.painted++;
      if (w > MIN_LABEL_PX) {
        const left = Math.max(a, 0) + 3;
        const room = Math.min(b, this.width()) - left - 3;
        const label = fit(ctx, isProcess(this.data, node[i]) ? this.data.names[name] : shortName(this.data.names[name]), room);
        if (label) {
          ctx.fillStyle = "#111";
          ctx.fillText(label, left, this.top + d * ROW + ROW / 2);
        }
      }
    }
  }

  private barAt(offsetX: number, offsetY: number): [number, number] | null {
    const d = Math.floor((offsetY - this.top) / ROW);
    if (d < 0 || d >= this.depth) return null;
    const x = this.v0 + (offsetX / this.width()) * (this.v1 - this.v0);
    const i = firstEnding(this.bars.x1[d], x);
    return i < this.bars.x0[d].length && this.bars.x0[d][i] <= x ? [d, i] : null;
  }

  private onMove(e: MouseEvent): void {
    const hit = this.barAt(e.offsetX, e.offsetY);
    if (!hit) {
      this.tip.hidden = true;
      return;
    }
    this.showTip(hit, e.offsetX, e.offsetY);
  }

  private showTip([d, i]: [number, number], left: number, top: number): void {
    const x0 = this.bars.x0[d][i];
    this.tip.replaceChildren(...this.options.tooltip(this.bars.node[d][i], this.bars.x1[d][i] - x0, x0).map((line) => Object.assign(document.createElement("div"), { textContent: line })));
    this.tip.hidden = false;
    this.tip.style.left = `${Math.min(left + 12, this.width() - 340)}px`;
    this.tip.style.top = `${top + 16}px`;
  }

  private zoomToBar([d, i]: [number, number]): void {
    this.cursor = [d, i];
    this.options.onRange(this.bars.x0[d][i], this.bars.x1[d][i]);
  }

  private onClick(e: MouseEvent): void {
    const hit = this.barAt(e.offsetX, e.offsetY);
    if (hit) this.zoomToBar(hit);
  }

  private onKey(e: KeyboardEvent): void {
    const span = this.v1 - this.v0;
    const center = (this.v0 + this.v1) / 2;
    const keys: Record<string, () => void> = {
      Escape: () => this.options.onRange(0, this.timeline.extent),
      "+": () => this.options.onRange(center - span / 4, center + span / 4),
      "-": () => this.options.onRange(center - span, center + span),
      Enter: () => this.cursor && this.zoomToBar(this.cursor),
      ArrowLeft: () => this.moveCursor(0, -1),
      ArrowRight: () => this.moveCursor(0, 1),
      ArrowUp: () => this.moveCursor(-1, 0),
      ArrowDown: () => this.moveCursor(1, 0),
    };
    const action = keys[e.key];
    if (!action) return;
    e.preventDefault();
    action();
  }

  /** The keyboard cursor: sideways along a depth, or to the bar above/below its middle. */
  private moveCursor(down: number, along: number): void {
    if (!this.depth) return;
    if (!this.cursor) [down, along] = [0, 0]; // the first key puts the cursor on the top row
    let [d, i] = this.cursor ?? [0, firstEnding(this.bars.x1[0], this.v0)];
    if (down) {
      const middle = (this.bars.x0[d][i] + this.bars.x1[d][i]) / 2;
      const next = Math.max(0, Math.min(this.depth - 1, d + down));
      const j = firstEnding(this.bars.x1[next], middle);
      if (j >= this.bars.x0[next].length || this.bars.x0[next][j] > middle) return;
      [d, i] = [next, j];
    }
    i = Math.max(0, Math.min(this.bars.node[d].length - 1, i + along));
    this.cursor = [d, i];
    const [x0, x1] = [this.bars.x0[d][i], this.bars.x1[d][i]];
    if (x1 <= this.v0 || x0 >= this.v1) this.options.onRange(x0 - (this.v1 - this.v0) / 2, x0 + (this.v1 - this.v0) / 2);
    else this.draw();
    this.showTip([d, i], Math.max(0, this.px(x0)), this.top + d * ROW);
  }
}

/** The first bar of a depth ending after x (bars of one depth are in x order and do not overlap). */
export function firstEnding(x1: Float64Array, x: number): number {
  let lo = 0;
  let hi = x1.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (x1[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function fit(ctx: CanvasRenderingContext2D, text: string, room: number): string {
  if (room < 8) return "";
  if (ctx.measureText(text).width <= room) return text;
  const chars = Math.floor(room / ctx.measureText("m").width) - 1;
  return chars > 1 ? `${text.slice(0, chars)}…` : "";
}

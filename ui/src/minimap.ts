// The time order's minimap (speedscope has one): the whole run's chart in miniature above
// the chart, with the shown range left unshaded. A drag across it shows the samples
// dragged over; a click moves the shown span to centre on the point clicked. The
// miniature is painted once per width and kept; a redraw only lays the shading over it.
// With per-thread lanes each lane is a band of its own, on the lanes' time axis.

import { type FlameData, nameFill } from "./flame";
import { type Bars, firstEnding } from "./timeline";

const HEIGHT = 44;
const DRAG_PX = 3; // a pointer that moved less is a click

export class Minimap {
  readonly canvas = document.createElement("canvas");
  private miniature: HTMLCanvasElement | null = null;
  private drag: { from: number; to: number } | null = null;
  private shown: [number, number] = [0, 0];

  constructor(
    private data: FlameData,
    private lanes: Bars[],
    private samples: number, // the x extent: samples, or ns for lanes
    private onRange: (x0: number, x1: number) => void,
  ) {
    this.canvas.className = "time-minimap";
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", "the whole run in miniature: drag across it to show those samples, click to move the shown span there");
    this.canvas.addEventListener("pointerdown", (e) => this.onDown(e));
    this.canvas.addEventListener("pointermove", (e) => this.onMoveDrag(e));
    this.canvas.addEventListener("pointerup", (e) => this.onUp(e));
  }

  /** Paint the run with samples v0..v1 (the chart's range) unshaded. */
  draw(v0: number, v1: number): void {
    this.shown = [v0, v1];
    const width = this.canvas.parentElement?.clientWidth || 1000;
    const ratio = window.devicePixelRatio || 1;
    if (this.miniature?.width !== Math.round(width * ratio)) this.miniature = this.paint(width, ratio);
    this.canvas.width = this.miniature.width;
    this.canvas.height = this.miniature.height;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${HEIGHT}px`;
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.miniature, 0, 0);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const [a, b] = this.drag ? [Math.min(this.drag.from, this.drag.to), Math.max(this.drag.from, this.drag.to)] : [this.px(v0, width), this.px(v1, width)];
    ctx.fillStyle = "rgba(60, 66, 80, 0.45)";
    ctx.fillRect(0, 0, a, HEIGHT);
    ctx.fillRect(b, 0, width - b, HEIGHT);
    ctx.strokeStyle = "#1d2330";
    ctx.lineWidth = 1.5;
    ctx.strokeRect(a + 0.75, 0.75, Math.max(1, b - a - 1.5), HEIGHT - 1.5);
  }

  private px(sample: number, width: number): number {
    return (sample / this.samples) * width;
  }

  private sampleAt(offsetX: number): number {
    const width = this.canvas.getBoundingClientRect().width || 1;
    return Math.max(0, Math.min(this.samples, (offsetX / width) * this.samples));
  }

  /** Each lane in a band, every depth in a row of band / depths pixels, at most one sliver per pixel column. */
  private paint(width: number, ratio: number): HTMLCanvasElement {
    const out = document.createElement("canvas");
    out.width = Math.round(width * ratio);
    out.height = Math.round(HEIGHT * ratio);
    const ctx = out.getContext("2d");
    if (!ctx) return out;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    const band = HEIGHT / Math.max(1, this.lanes.length);
    this.lanes.forEach((bars, k) => this.paintLane(ctx, bars, width, k * band, band));
    return out;
  }

  private paintLane(ctx: CanvasRenderingContext2D, bars: Bars, width: number, top: number, band: number): void {
    const depths = bars.node.length;
    const row = band / Math.max(1, depths);
    const perPixel = this.samples / width;
    for (let d = 0; d < depths; d++) {
      const [node, x0, x1] = [bars.node[d], bars.x0[d], bars.x1[d]];
      for (let i = 0; i < node.length; i++) {
        const a = x0[i] / perPixel;
        const b = x1[i] / perPixel;
        ctx.fillStyle = nameFill(this.data, this.data.name[node[i]]);
        ctx.fillRect(a, top + d * row, Math.max(1, b - a), Math.max(row, 0.5));
        // The rest of this pixel column is covered: go on from the first bar ending past it.
        if (b - a < 1) i = Math.max(i, firstEnding(x1, (Math.floor(a) + 1) * perPixel) - 1);
      }
    }
  }

  private onDown(e: PointerEvent): void {
    this.canvas.setPointerCapture(e.pointerId);
    this.drag = { from: e.offsetX, to: e.offsetX };
  }

  private onMoveDrag(e: PointerEvent): void {
    if (!this.drag) return;
    this.drag.to = e.offsetX;
    this.draw(...this.shown);
  }

  private onUp(e: PointerEvent): void {
    if (!this.drag) return;
    const { from } = this.drag;
    this.drag = null;
    if (Math.abs(e.offsetX - from) >= DRAG_PX) {
      const [a, b] = [this.sampleAt(Math.min(from, e.offsetX)), this.sampleAt(Math.max(from, e.offsetX))];
      this.onRange(a, b);
      return;
    }
    const [v0, v1] = this.shown;
    const half = (v1 - v0) / 2;
    const centre = Math.max(half, Math.min(this.samples - half, this.sampleAt(e.offsetX)));
    this.onRange(centre - half, centre + half);
  }
}

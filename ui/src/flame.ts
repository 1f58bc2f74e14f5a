// The flame graph, drawn on a canvas by hand.
//
// Why not a library: d3-flame-graph draws SVG (one DOM node per frame; a
// million-node profile takes seconds and hundreds of MB), and speedscope is an
// application, not an embeddable component. The data here is already a
// pre-order array of nodes (server/flamedata.py), so layout is one linear pass,
// and drawing skips every subtree narrower than a pixel: a redraw touches only
// the few thousand visible nodes whatever the profile's size.

import { shortName } from "./dom";

export interface FlameData {
  nodes: number;
  names: string[];
  name: Int32Array;
  depth: Uint16Array;
  columns: Record<string, Float32Array>;
  meta: Record<string, unknown>;
  end: Int32Array; // index just past each node's subtree
  parent: Int32Array;
  maxDepth: number;
}

export function decodeFlame(buffer: ArrayBuffer): FlameData {
  const headerLength = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
  const n: number = header.nodes;
  let offset = 4 + headerLength;
  const columns: Record<string, Float32Array> = {};
  for (const column of header.columns as string[]) {
    columns[column] = new Float32Array(buffer, offset, n);
    offset += 4 * n;
  }
  const name = new Int32Array(buffer, offset, n);
  const depth = new Uint16Array(buffer, offset + 4 * n, n);
  const end = new Int32Array(n);
  const parent = new Int32Array(n);
  const path = new Int32Array(65537); // the open node at each depth of the current path
  let pathDepth = -1;
  let maxDepth = 0;
  for (let i = 0; i < n; i++) {
    const d = depth[i];
    if (d > maxDepth) maxDepth = d;
    for (let k = d; k <= pathDepth; k++) end[path[k]] = i; // pre-order: these subtrees close here
    parent[i] = d > 0 ? path[d - 1] : -1;
    path[d] = i;
    pathDepth = d;
  }
  for (let k = 0; k <= pathDepth; k++) end[path[k]] = n;
  return { nodes: n, names: header.names, name, depth, columns, meta: header, end, parent, maxDepth };
}

/** x offset of every node, children in name order (as sent) or heaviest first. */
export function layout(data: FlameData, width: Float32Array, heaviestFirst: boolean): Float64Array {
  return heaviestFirst ? heaviestFirstLayout(data, width) : nameOrderLayout(data, width);
}

function nameOrderLayout(data: FlameData, width: Float32Array): Float64Array {
  const x = new Float64Array(data.nodes);
  const cursor = new Float64Array(data.maxDepth + 2); // next free x at each depth
  const { depth } = data;
  for (let i = 0; i < data.nodes; i++) {
    const d = depth[i];
    x[i] = cursor[d];
    cursor[d] += width[i];
    cursor[d + 1] = x[i];
  }
  return x;
}

function heaviestFirstLayout(data: FlameData, width: Float32Array): Float64Array {
  const x = new Float64Array(data.nodes);
  const { end } = data;
  const children: number[] = [];
  for (let p = 0; p < data.nodes; p++) {
    if (end[p] === p + 1) continue; // a leaf
    children.length = 0;
    for (let c = p + 1; c < end[p]; c = end[c]) children.push(c);
    children.sort((a, b) => width[b] - width[a]);
    let cursor = x[p];
    for (const c of children) {
      x[c] = cursor;
      cursor += width[c];
    }
  }
  return x;
}

export function selfWeight(data: FlameData, width: Float32Array, node: number): number {
  let own = width[node];
  for (let c = node + 1; c < data.end[node]; c = data.end[c]) own -= width[c];
  return Math.max(0, own);
}

/** Compiles a search; a bad regular expression falls back to plain text. */
export function matcher(query: string): (name: string) => boolean {
  if (!query) return () => false;
  try {
    const rx = new RegExp(query, "i");
    return (name) => rx.test(name);
  } catch {
    const needle = query.toLowerCase();
    return (name) => name.toLowerCase().includes(needle);
  }
}

export type Colouring = "name" | "offcpu" | "diff";

export interface FlameOptions {
  width: Float32Array;
  colouring: Colouring;
  icicle: boolean;
  heaviestFirst: boolean;
  onZoom?: (node: number) => void;
  onSelect?: (node: number) => void;
  tooltip: (node: number) => string[];
}

const ROW = 18;
const FONT = "11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
const CHAR_WIDTH = 6.7;
const MIN_WIDTH_PX = 0.35;

export class FlameGraph {
  readonly canvas = document.createElement("canvas");
  readonly tip = document.createElement("div");
  zoom = 0;
  private x: Float64Array;
  private matched: Uint8Array;
  private palette: string[];
  private labels: string[];
  private drawn = { x: new Float32Array(0), y: new Float32Array(0), w: new Float32Array(0), node: new Int32Array(0), count: 0 };
  private hover = -1;
  lastDrawMs = 0;

  constructor(readonly data: FlameData, private options: FlameOptions) {
    this.canvas.className = "flame-canvas";
    this.tip.className = "flame-tip";
    this.tip.hidden = true;
    this.x = layout(data, options.width, options.heaviestFirst);
    this.matched = new Uint8Array(data.names.length);
    this.palette = data.names.map(nameColour);
    this.labels = data.names.map(shortName);
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => this.hideTip());
    this.canvas.addEventListener("click", (e) => this.onClick(e));
  }

  setOrder(heaviestFirst: boolean): void {
    this.options.heaviestFirst = heaviestFirst;
    this.x = layout(this.data, this.options.width, heaviestFirst);
    this.draw();
  }

  setIcicle(icicle: boolean): void {
    this.options.icicle = icicle;
    this.draw();
  }

  zoomTo(node: number): void {
    this.zoom = node >= 0 && node < this.data.nodes ? node : 0;
    this.draw();
  }

  /** Highlights frames whose name matches; returns their share of the whole run. */
  search(query: string): { share: number; matches: number } {
    const test = matcher(query);
    this.matched.fill(0);
    this.data.names.forEach((n, i) => {
      if (test(n)) this.matched[i] = 1;
    });
    this.draw();
    return this.matchedShare();
  }

  private matchedShare(): { share: number; matches: number } {
    const { end, name } = this.data;
    const width = this.options.width;
    let sum = 0;
    let matches = 0;
    for (let i = 0; i < this.data.nodes; ) {
      if (this.matched[name[i]] && i > 0) {
        sum += width[i];
        matches++;
        i = end[i]; // descendants are already counted in this frame's total
      } else i++;
    }
    return { share: sum / (width[0] || 1), matches };
  }

  path(node: number): number[] {
    const out: number[] = [];
    for (let i = node; i >= 0; i = this.data.parent[i]) out.unshift(i);
    return out;
  }

  draw(): void {
    const start = performance.now();
    const cssWidth = this.canvas.parentElement?.clientWidth || 1000;
    const rows = this.data.maxDepth + 1;
    const cssHeight = rows * ROW;
    const dpr = window.devicePixelRatio || 1;
    if (this.canvas.width !== Math.round(cssWidth * dpr) || this.canvas.height !== Math.round(cssHeight * dpr)) {
      this.canvas.width = Math.round(cssWidth * dpr);
      this.canvas.height = Math.round(cssHeight * dpr);
      this.canvas.style.width = `${cssWidth}px`;
      this.canvas.style.height = `${cssHeight}px`;
    }
    const ctx = this.canvas.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssWidth, cssHeight);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    const { end, depth, name } = this.data;
    const width = this.options.width;
    const x0 = this.x[this.zoom];
    const scale = cssWidth / (width[this.zoom] || 1);
    const searching = this.matched.includes(1);
    const capacity = 1 << 15;
    if (this.drawn.x.length < capacity) {
      this.drawn = { x: new Float32Array(capacity), y: new Float32Array(capacity), w: new Float32Array(capacity), node: new Int32Array(capacity), count: 0 };
    }
    let count = 0;
    for (let i = 0; i < this.data.nodes; ) {
      const w = width[i] * scale;
      const left = (this.x[i] - x0) * scale;
      if (w < MIN_WIDTH_PX || left >= cssWidth || left + w <= 0) {
        i = end[i];
        continue;
      }
      const x = Math.max(0, left);
      const visible = Math.min(cssWidth, left + w) - x;
      const y = this.options.icicle ? depth[i] * ROW : cssHeight - (depth[i] + 1) * ROW;
      ctx.fillStyle = this.colour(i, searching);
      ctx.fillRect(x, y, Math.max(visible - 0.5, 0.5), ROW - 1);
      if (visible > 3 * CHAR_WIDTH) {
        const label = i === 0 ? "all" : this.labels[name[i]];
        const chars = Math.floor((visible - 6) / CHAR_WIDTH);
        ctx.fillStyle = searching && !this.matched[name[i]] ? "#777" : "#111";
        ctx.fillText(label.length > chars ? `${label.slice(0, Math.max(chars - 1, 1))}…` : label, x + 3, y + ROW / 2);
      }
      if (count < capacity) {
        this.drawn.x[count] = x;
        this.drawn.y[count] = y;
        this.drawn.w[count] = visible;
        this.drawn.node[count] = i;
        count++;
      }
      i++;
    }
    this.drawn.count = count;
    this.lastDrawMs = performance.now() - start;
  }

  private colour(i: number, searching: boolean): string {
    const nameIndex = this.data.name[i];
    if (searching) return this.matched[nameIndex] ? "#e040fb" : "#e8e8e8";
    if (i === 0) return "#c8c8c8";
    const width = this.options.width;
    if (this.options.colouring === "offcpu") {
      const off = this.data.columns.off;
      const ratio = off && width[i] ? off[i] / width[i] : 0;
      return mix([250, 160, 80], [90, 150, 240], ratio);
    }
    if (this.options.colouring === "diff") return diffColour(this.data, i);
    return this.palette[nameIndex];
  }

  nodeAt(px: number, py: number): number {
    const d = this.drawn;
    for (let k = d.count - 1; k >= 0; k--) {
      if (py >= d.y[k] && py < d.y[k] + ROW && px >= d.x[k] && px < d.x[k] + d.w[k]) return d.node[k];
    }
    return -1;
  }

  private onMove(e: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const node = this.nodeAt(e.clientX - rect.left, e.clientY - rect.top);
    if (node < 0) return this.hideTip();
    if (node !== this.hover) {
      this.hover = node;
      this.tip.replaceChildren(
        ...this.options.tooltip(node).map((line, k) => {
          const div = document.createElement("div");
          div.textContent = line;
          if (k === 0) div.className = "tip-name";
          return div;
        }),
      );
    }
    this.tip.hidden = false;
    const parent = this.canvas.parentElement!.getBoundingClientRect();
    const left = Math.min(e.clientX - parent.left + 14, parent.width - 360);
    this.tip.style.left = `${Math.max(0, left)}px`;
    this.tip.style.top = `${e.clientY - parent.top + 16}px`;
  }

  private hideTip(): void {
    this.hover = -1;
    this.tip.hidden = true;
  }

  private onClick(e: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const node = this.nodeAt(e.clientX - rect.left, e.clientY - rect.top);
    if (node < 0) return;
    this.options.onSelect?.(node);
    this.options.onZoom?.(node);
  }
}

function nameColour(name: string): string {
  if (name.endsWith("_[k]")) return "hsl(28, 85%, 62%)";
  if (name.endsWith("_[i]")) return "hsl(175, 45%, 60%)";
  let hash = 0;
  for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) | 0;
  const hue = 8 + (Math.abs(hash) % 45);
  const light = 58 + (Math.abs(hash >> 8) % 14);
  return `hsl(${hue}, 80%, ${light}%)`;
}

function mix(a: number[], b: number[], t: number): string {
  const c = a.map((v, k) => Math.round(v + (b[k] - v) * Math.max(0, Math.min(1, t))));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

/** Red where the frame's share of its run grew, blue where it shrank, white where it held. */
function diffColour(data: FlameData, i: number): string {
  const change = diffChange(data, i);
  const strength = Math.min(1, Math.abs(change.relative) * 1.5);
  return change.relative >= 0 ? mix([245, 245, 245], [230, 60, 50], strength) : mix([245, 245, 245], [60, 110, 230], strength);
}

export function diffChange(data: FlameData, i: number): { before: number; after: number; relative: number } {
  const totalA = Number(data.meta.total_a) || 1;
  const totalB = Number(data.meta.total_b) || 1;
  const before = data.columns.a[i] / totalA;
  const after = data.columns.b[i] / totalB;
  const larger = Math.max(before, after);
  return { before, after, relative: larger ? (after - before) / larger : 0 };
}

// The flame graph, drawn on a canvas by hand.
//
// Why not a library: d3-flame-graph draws SVG (one DOM node per frame; a
// million-node profile takes seconds and hundreds of MB), and speedscope is an
// application, not an embeddable component. The data here is already a
// pre-order array of nodes (server/flamedata.py), so layout is one linear pass,
// and drawing skips every subtree narrower than a third of a pixel: a redraw touches
// only the visible nodes whatever the profile's size. Frames narrower than a pixel are
// painted as one-pixel slivers merged down each pixel column: a deep recursive profile
// has tens of thousands of them, and the canvas took 100-200 ms to rasterise them one
// by one.

import { shortName } from "./names";

export interface FlameData {
  nodes: number;
  names: string[]; // function names, without the wire's `_[k]` / `_[i]` marks
  kind: Uint8Array; // FrameKind per name
  name: Int32Array;
  depth: Uint16Array;
  columns: Record<string, Float64Array>; // exact weights (float32 rounds 9,029,117,580 to …952)
  meta: Record<string, unknown>;
  end: Int32Array; // index just past each node's subtree
  parent: Int32Array;
  maxDepth: number;
}

/** What `data.kind` holds per name. */
const FrameKind = { Plain: 0, Inlined: 1, Kernel: 2, Python: 3, Process: 4 } as const;
type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];

const KIND_SUFFIX: [string, FrameKind][] = [
  ["_[i]", FrameKind.Inlined],
  ["_[k]", FrameKind.Kernel],
  ["_[py]", FrameKind.Python],
  ["_[p]", FrameKind.Process], // the level under the root of a run of several processes
];

/** Splits the server's labels (views/flame.frame_label) into names and kinds. */
function splitKinds(labels: string[]): { names: string[]; kind: Uint8Array } {
  const kind = new Uint8Array(labels.length);
  const names = labels.map((label, i) => {
    for (const [suffix, k] of KIND_SUFFIX) {
      if (label.endsWith(suffix)) {
        kind[i] = k;
        return label.slice(0, -suffix.length);
      }
    }
    return label;
  });
  return { names, kind };
}

export const KIND_LABEL = ["", "inlined", "kernel", "Python", "process"];

/** Whether a node is a process (the level under the root of a run of several). */
export function isProcess(data: FlameData, node: number): boolean {
  return data.kind[data.name[node]] === FrameKind.Process;
}

/** Whether the graph has Python frames (a py-spy run), which get a colour of their own. */
export function hasPython(data: FlameData): boolean {
  return data.kind.includes(FrameKind.Python);
}

export function decodeFlame(buffer: ArrayBuffer): FlameData {
  const headerLength = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
  const n: number = header.nodes;
  let offset = 4 + headerLength;
  const columns: Record<string, Float64Array> = {};
  for (const column of header.columns as string[]) {
    columns[column] = new Float64Array(buffer, offset, n);
    offset += 8 * n;
  }
  const name = new Int32Array(buffer, offset, n);
  const depth = new Uint16Array(buffer, offset + 4 * n, n);
  return { nodes: n, ...splitKinds(header.names), name, depth, columns, meta: header, ...structure(depth) };
}

/** Each node's parent and subtree end, from the depths of a pre-order. */
export function structure(depth: Uint16Array): { end: Int32Array; parent: Int32Array; maxDepth: number } {
  const n = depth.length;
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
  return { end, parent, maxDepth };
}

/**
 * x offsets, children in name order (as sent) or heaviest first, laid out when their
 * parent is first reached by a draw: a draw reaches a few thousand frames, so laying out
 * the whole million up front (10-40 ms in name order, more heaviest first, on every
 * filter, sandwich or order change) would be wasted.
 */
class Layout {
  readonly x: Float64Array;
  readonly placed: Uint8Array;
  private children = new Int32Array(64);

  /**
   * `reused`: the arrays of a layout no graph draws with any more, used again if large enough:
   * a deep profile's are 2.4 MB, and allocating them on every filter, sandwich or order change
   * brought V8's major collections forward (5-7 ms on the main thread, ~9 ms on others).
   */
  constructor(private data: FlameData, private width: Float64Array, private heaviestFirst: boolean, reused?: Layout) {
    const fits = reused !== undefined && reused.x.length >= data.nodes;
    this.x = fits ? reused.x : new Float64Array(data.nodes);
    this.placed = fits ? reused.placed.fill(0, 0, data.nodes) : new Uint8Array(data.nodes);
    this.x[0] = 0;
  }

  /** Gives node p's children their x (once); p's own x must already be set. */
  place(p: number): void {
    if (this.placed[p]) return;
    this.placed[p] = 1;
    const { x, width } = this;
    const { end } = this.data;
    let cursor = x[p];
    if (!this.heaviestFirst) {
      for (let c = p + 1; c < end[p]; c = end[c]) {
        x[c] = cursor;
        cursor += width[c];
      }
      return;
    }
    const n = this.sortedChildren(p);
    for (let k = 0; k < n; k++) {
      x[this.children[k]] = cursor;
      cursor += width[this.children[k]];
    }
  }

  /** Places the nodes from the root down to `node`, so `node` has its x. */
  placePath(node: number, parent: Int32Array): void {
    const path: number[] = [];
    for (let a = parent[node]; a >= 0; a = parent[a]) path.push(a);
    for (let k = path.length - 1; k >= 0; k--) this.place(path[k]);
  }

  /** p's children into this.children, heaviest first; their count. */
  private sortedChildren(p: number): number {
    const { end } = this.data;
    const width = this.width;
    let n = 0;
    for (let c = p + 1; c < end[p]; c = end[c]) {
      if (n === this.children.length) {
        const bigger = new Int32Array(n * 2);
        bigger.set(this.children);
        this.children = bigger;
      }
      // Insertion sort, heaviest first: most frames have a handful of children.
      const children = this.children;
      let k = n++;
      while (k > 0 && width[children[k - 1]] < width[c]) {
        children[k] = children[k - 1];
        k--;
      }
      children[k] = c;
    }
    return n;
  }
}

export function selfWeight(data: FlameData, width: Float64Array, node: number): number {
  let own = width[node];
  for (let c = node + 1; c < data.end[node]; c = data.end[c]) own -= width[c];
  return Math.max(0, own);
}

interface Matcher {
  test: (name: string) => boolean;
  error?: string; // the query is no regular expression: say so, match nothing
}

const matchers = new Map<string, Matcher>(); // by query, so a query's matched names can be kept (matchedNames)
const KEPT_MATCHERS = 16;

/** Compiles a case-insensitive regular expression (the same object for the same query); an empty query matches nothing. */
export function matcher(query: string): Matcher {
  let found = matchers.get(query);
  if (!found) {
    found = compiled(query);
    matchers.set(query, found);
    if (matchers.size > KEPT_MATCHERS) matchers.delete(matchers.keys().next().value!);
  }
  return found;
}

function compiled(query: string): Matcher {
  if (!query) return { test: () => false };
  try {
    const rx = new RegExp(query, "i");
    return { test: (name) => rx.test(name) };
  } catch (e) {
    return { test: () => false, error: e instanceof Error ? e.message : String(e) };
  }
}

// The last few tests' results per names list: a filter's or search's regular expression over a
// deep profile's 7,761 C++ names takes 2-4 ms, and each render (a focus with a search, the way
// back, ignore after focus of the same expression) asked it again. Never written to by a caller.
const matchedByNames = new WeakMap<string[], Map<(name: string) => boolean, Uint8Array>>();

/** 1 for every name the matcher matches. */
export function matchedNames(data: FlameData, test: (name: string) => boolean): Uint8Array {
  let kept = matchedByNames.get(data.names);
  if (!kept) matchedByNames.set(data.names, (kept = new Map()));
  let matched = kept.get(test);
  if (!matched) {
    matched = new Uint8Array(data.names.length);
    for (let n = 0; n < matched.length; n++) if (test(data.names[n])) matched[n] = 1;
    kept.set(test, matched);
    if (kept.size > KEPT_MATCHERS) kept.delete(kept.keys().next().value!);
  }
  return matched;
}

export type Colouring = "name" | "offcpu" | "diff";

export interface FlameOptions {
  width: Float64Array;
  colouring: Colouring;
  icicle: boolean;
  heaviestFirst: boolean;
  onZoom?: (node: number) => void;
  onSelect?: (node: number) => void;
  tooltip: (node: number) => string[];
  replacing?: FlameGraph; // the graph this one takes the place of (off the page now): its layout's and drawn frames' arrays are reused
}

const ROW = 18;
const FONT = "11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace";
const CHAR_WIDTH = 6.7;
const MIN_WIDTH_PX = 0.35;
const SLIVER_PX = 1; // narrower frames are painted as slivers
// Canvases taller than ~32,000 px fail to draw: deeper graphs show this many rows,
// starting a few levels above the zoomed frame.
const MAX_ROWS = 1000;

export class FlameGraph {
  canvas: HTMLCanvasElement; // a kept canvas that fits may take its place (prepareCanvas)
  readonly tip = document.createElement("div");
  zoom = 0;
  cursor = -1; // the frame the keyboard is on (outlined), -1 before any key or click
  private layout: Layout;
  private matched: Uint8Array;
  private palette: Uint8Array; // colour index per name
  private labels: string[];
  private drawn: Drawn;
  private rows = 1; // rows drawn by the last draw()
  // A view narrower than the zoomed frame (wheel zoom, drag pan), in weight units; null:
  // the zoomed frame's own extent.
  private view: { left: number; span: number } | null = null;
  private drag: { x: number; left: number; moved: boolean } | null = null;
  private hover = -1;
  private resizing: ResizeObserver | null = null;
  private listening = new AbortController(); // the graph's listeners, until its canvas goes to another graph
  private canvasListening = new AbortController(); // those on its current canvas
  private drawnOnce = false; // before the first draw, the canvas is a new element without a bitmap
  private retired = false; // another graph took its layout and drawn arrays (retire)

  constructor(readonly data: FlameData, private options: FlameOptions) {
    this.tip.className = "flame-tip";
    this.tip.hidden = true;
    const replaced = options.replacing?.retire();
    this.layout = new Layout(data, options.width, options.heaviestFirst, replaced?.layout);
    this.drawn = replaced?.drawn ?? emptyDrawn(4096); // a deep focus's grew to 65,536 frames (1.1 MB)
    this.matched = new Uint8Array(data.names.length);
    ({ palette: this.palette, labels: this.labels } = nameStyles(data));
    window.addEventListener("mouseup", () => this.onDragEnd(), { signal: this.listening.signal });
    this.canvas = this.adopt(document.createElement("canvas"));
  }

  /** Makes `canvas` this graph's: its role, its listeners, and its place among the kept canvases. */
  private adopt(canvas: HTMLCanvasElement): HTMLCanvasElement {
    canvas.className = "flame-canvas";
    canvas.tabIndex = 0;
    canvas.setAttribute("role", "application");
    canvas.setAttribute("aria-label", "flame graph: arrow keys move between frames, Enter zooms, Escape zooms out");
    this.canvasListening = new AbortController();
    const signal = this.canvasListening.signal;
    canvas.addEventListener("mousemove", (e) => this.onMove(e), { signal });
    canvas.addEventListener("mouseleave", () => this.hideTip(), { signal });
    canvas.addEventListener("click", (e) => this.onClick(e), { signal });
    canvas.addEventListener("keydown", (e) => this.onKey(e), { signal });
    canvas.addEventListener("wheel", (e) => this.onWheel(e), { passive: false, signal });
    canvas.addEventListener("mousedown", (e) => this.onDragStart(e), { signal });
    keepCanvas(canvas, () => {
      this.listening.abort();
      this.canvasListening.abort();
      this.resizing?.disconnect();
    });
    return canvas;
  }

  /** Puts `fitting` (a free kept canvas) where the graph's canvas is; the old one is left free if it was drawn on. */
  private swapCanvas(fitting: HTMLCanvasElement): void {
    const old = this.canvas;
    this.canvasListening.abort();
    old.replaceWith(fitting);
    this.canvas = this.adopt(fitting);
    shownCanvases.add(fitting);
    if (shownCanvases.has(old)) keepCanvas(old, () => {});
    else keptCanvases.delete(old);
  }

  /** The graph's layout and drawn frames' arrays, for a graph taking its place; this one is off the page and draws no more. */
  private retire(): { layout: Layout; drawn: Drawn } {
    this.retired = true;
    this.resizing?.disconnect();
    return { layout: this.layout, drawn: this.drawn };
  }

  setOrder(heaviestFirst: boolean): void {
    this.options.heaviestFirst = heaviestFirst;
    this.layout = new Layout(this.data, this.options.width, heaviestFirst, this.layout);
    this.draw();
  }

  setIcicle(icicle: boolean): void {
    this.options.icicle = icicle;
    this.draw();
  }

  /** Zooms to a node (0, the root, if there is no such node); `redraw` false leaves the painting to the caller. */
  zoomTo(node: number, redraw = true): void {
    this.zoom = node >= 0 && node < this.data.nodes ? node : 0;
    this.view = null;
    this.hideTip();
    if (redraw) this.draw();
  }

  /** Highlights frames whose name matches (`redraw` false leaves the painting to the caller); returns their share of the whole graph. */
  search(query: string, redraw = true): { share: number; matches: number; error?: string } {
    const { test, error } = matcher(query);
    this.matched = matchedNames(this.data, test);
    if (redraw) this.draw();
    return { ...this.matchedShare(), error };
  }

  /**
   * The next (or previous) frame the search matched, left to right and then root to leaf,
   * after the keyboard's cursor, wrapping around; -1 when nothing matches. It becomes the
   * cursor and is zoomed to.
   */
  nextMatch(forward: boolean): number {
    const { nodes, name, parent } = this.data;
    const width = this.options.width;
    const found: number[] = [];
    for (let i = 1; i < nodes; i++) if (this.matched[name[i]] && width[i] > 0) found.push(i);
    if (!found.length) return -1;
    for (const node of found) this.layout.placePath(node, parent);
    const x = this.layout.x;
    const depth = this.data.depth;
    const order = (a: number, b: number) => x[a] - x[b] || depth[a] - depth[b];
    found.sort(order);
    const cur = this.cursor;
    this.layout.placePath(Math.max(cur, 0), parent);
    let k = forward ? found.findIndex((n) => cur <= 0 || order(n, cur) > 0) : -1;
    if (!forward) for (let j = found.length - 1; j >= 0 && k < 0; j--) if (cur > 0 && order(found[j], cur) < 0) k = j;
    if (k < 0) k = forward ? 0 : found.length - 1;
    this.cursor = found[k];
    this.options.onSelect?.(this.cursor);
    this.options.onZoom?.(this.cursor);
    return this.cursor;
  }

  private matchedShare(): { share: number; matches: number } {
    const { end, name } = this.data;
    const width = this.options.width;
    let sum = 0;
    let matches = 0;
    for (let i = 0; i < this.data.nodes; ) {
      if (i > 0 && this.matched[name[i]] && width[i] > 0) {
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

  /**
   * Lays out the visible frames, then paints them one colour at a time (few canvas state changes).
   * The canvas is as tall as the rows that have a frame wide enough to see: a deep profile's
   * thin spikes do not push the root off the first screen.
   */
  draw(cssWidth = this.holderWidth()): void {
    if (this.retired) return;
    this.paint(this.collect(cssWidth), cssWidth);
  }

  /** Paints the `count` frames collect() gave for `cssWidth`. */
  private paint(count: number, cssWidth: number): void {
    this.watchResize(cssWidth);
    const cssHeight = this.rows * ROW;
    const ctx = this.prepareCanvas(cssWidth, cssHeight);
    // After prepareCanvas: a new element it replaced by a kept canvas was never drawn on, and is not kept.
    if (this.canvas.isConnected) shownCanvases.add(this.canvas);
    const d = this.drawn;
    this.markSlivers(count, Math.ceil(cssWidth));
    for (let k = 0; k < count; k++) d.y[k] = this.rowTop(d.y[k], cssHeight);
    // fillRect, not one path per colour: Chromium rasterises the rectangles ~25% faster.
    const wide = byColour(d, count);
    let colour = -1;
    for (let j = 0; j < wide; j++) {
      const k = frameOrder[j];
      if (d.colour[k] !== colour) ctx.fillStyle = COLOURS[(colour = d.colour[k])];
      ctx.fillRect(d.x[k], d.y[k], d.w[k] - 0.5, ROW - 1);
    }
    this.paintSlivers(ctx, Math.ceil(cssWidth), cssHeight);
    this.drawLabels(ctx, count);
    this.drawCursor(ctx, cssWidth, cssHeight);
  }

  /** Marks the pixel column and row of each drawn frame narrower than a pixel (`drawn.y` still holds rows), and its column; a search match wins its cell. */
  private markSlivers(count: number, columns: number): void {
    const rows = this.rows;
    if (sliverCells.length < columns * rows) sliverCells = new Uint8Array(columns * rows);
    if (sliverColumns.length < columns) sliverColumns = new Uint8Array(columns);
    const cells = sliverCells;
    cells.fill(0, 0, columns * rows);
    sliverColumns.fill(0, 0, columns);
    const d = this.drawn;
    for (let k = 0; k < count; k++) {
      if (d.w[k] >= SLIVER_PX) continue;
      const column = Math.min(Math.floor(d.x[k]), columns - 1);
      const cell = column * rows + d.y[k];
      cells[cell] = Math.max(cells[cell], d.colour[k] === MATCH ? SLIVER_MATCH : SLIVER_PLAIN);
      sliverColumns[column] = 1;
    }
  }

  /**
   * The marked slivers, each run of rows in a pixel column as one rectangle, plain ones first.
   * Where the screen's pixel ratio is whole every rectangle covers whole device pixels and is
   * filled by itself: Chromium rasterised one path of a deep focus's thousands of rectangles
   * 2-4× slower (6-10 ms of `^walk_tre.*`'s focus). At a fractional ratio two columns meet
   * inside a device pixel, which only a path's union paints whole (rectangles filled one by
   * one leave a seam there): one path per kind.
   */
  private paintSlivers(ctx: CanvasRenderingContext2D, columns: number, cssHeight: number): void {
    let runs = 0;
    for (let col = 0; col < columns; col++) {
      if (!sliverColumns[col]) continue;
      if ((runs + this.rows) * 4 > sliverRuns.length) sliverRuns = grownTo(sliverRuns, (runs + this.rows) * 8);
      runs = this.sliverColumn(col, cssHeight, runs);
    }
    const whole = Number.isInteger(window.devicePixelRatio || 1);
    const colours = [COLOURS[this.sliverColour()], COLOURS[MATCH]];
    for (const kind of [SLIVER_PLAIN, SLIVER_MATCH]) {
      const path = whole ? null : new Path2D();
      ctx.fillStyle = colours[kind - 1];
      for (let r = 0; r < runs * 4; r += 4) {
        if (sliverRuns[r + 3] !== kind) continue;
        if (path) path.rect(sliverRuns[r], sliverRuns[r + 1], 1, sliverRuns[r + 2]);
        else ctx.fillRect(sliverRuns[r], sliverRuns[r + 1], 1, sliverRuns[r + 2]);
      }
      if (path) ctx.fill(path);
    }
  }

  /**
   * One pixel column's runs of rows of one kind into sliverRuns (x, y, height, kind) from run
   * `at`; the new count. A function of its own: as an inner loop, V8 compiled the loop over the
   * columns at this one's back edge and dropped the code at its exit (`--trace-deopt`: "exit
   * from OSR'd inner loop", on most first draws of a new graph).
   */
  private sliverColumn(col: number, cssHeight: number, at: number): number {
    const rows = this.rows;
    const cells = sliverCells;
    const base = col * rows;
    let runs = at;
    for (let row = 0; row < rows; row++) {
      const kind = cells[base + row];
      if (kind === 0) continue;
      let last = row;
      while (last + 1 < rows && cells[base + last + 1] === kind) last++;
      const r = 4 * runs++;
      sliverRuns[r] = col;
      sliverRuns[r + 1] = Math.min(this.rowTop(row, cssHeight), this.rowTop(last, cssHeight));
      sliverRuns[r + 2] = (last - row + 1) * ROW - 1;
      sliverRuns[r + 3] = kind;
      row = last;
    }
    return runs;
  }

  /** A sliver's colour: what a non-matching frame gets while searching, else warm (by name) or neutral (off-CPU and diff shades). */
  private sliverColour(): number {
    if (this.matched.includes(1)) return DIMMED;
    return this.options.colouring === "name" ? SLIVER : ROOT;
  }

  /** The y of a row's top: rows count from the root, which is at the bottom of a flame graph. */
  private rowTop(row: number, cssHeight: number): number {
    return this.options.icicle ? row * ROW : cssHeight - (row + 1) * ROW;
  }

  /**
   * The first draw: a flame graph whose root would open below the first screen is drawn as an
   * icicle (root on top, as pprof and speedscope draw), unless the user chose the orientation.
   * True if it turned it. The frames are collected once and painted once.
   */
  drawFitted(chosen: boolean): boolean {
    const cssWidth = this.holderWidth();
    const count = this.collect(cssWidth);
    const turn = !chosen && !this.options.icicle && this.canvas.getBoundingClientRect().top + window.scrollY + this.rows * ROW > window.innerHeight;
    if (turn) this.options.icicle = true;
    this.paint(count, cssWidth);
    return turn;
  }

  /** Outlines the keyboard's frame: one rectangle, computed from its own layout. */
  private drawCursor(ctx: CanvasRenderingContext2D, cssWidth: number, cssHeight: number): void {
    if (this.cursor < 0) return;
    const width = this.options.width;
    const view = this.extent();
    const scale = cssWidth / (view.span || 1);
    this.layout.placePath(this.cursor, this.data.parent);
    const x = this.layout.x;
    const left = Math.max(0, (x[this.cursor] - view.left) * scale);
    const right = Math.min(cssWidth, (x[this.cursor] - view.left + width[this.cursor]) * scale);
    const row = this.data.depth[this.cursor] - this.firstRow();
    if (right - left < MIN_WIDTH_PX || row < 0 || row >= this.rows) return;
    ctx.strokeStyle = CURSOR;
    ctx.lineWidth = 2;
    ctx.strokeRect(left + 1, this.rowTop(row, cssHeight) + 1, Math.max(right - left - 2, 1), ROW - 3);
  }

  private holderWidth(): number {
    return this.canvas.parentElement?.clientWidth || 1000;
  }

  /** Redraws when the holder's width changes (window resized); once the canvas is attached. */
  private watchResize(drawnWidth: number): void {
    const holder = this.canvas.parentElement;
    if (this.resizing || !holder) return;
    let width = drawnWidth;
    this.resizing = new ResizeObserver(() => {
      if (!this.canvas.isConnected) return this.resizing?.disconnect();
      if (holder.clientWidth === width) return;
      width = holder.clientWidth;
      this.hideTip();
      this.draw();
    });
    this.resizing.observe(holder);
  }

  private prepareCanvas(cssWidth: number, cssHeight: number): CanvasRenderingContext2D {
    const dpr = window.devicePixelRatio || 1;
    const size: CanvasSize = { width: Math.round(cssWidth * dpr), height: Math.round(cssHeight * dpr), cssHeight, dpr };
    if (!this.drawnOnce || !fits(this.canvas, size)) {
      // A resized canvas gets a new bitmap (5-10 ms for a deep graph's, and the compositor a new
      // resource): a free one that fits is taken instead, unless the keyboard is on this one.
      const fitting = document.activeElement === this.canvas ? null : freeCanvas(size);
      if (fitting) this.swapCanvas(fitting);
      if (!fits(this.canvas, size)) {
        this.canvas.width = size.width;
        this.canvas.height = newBitmapHeight(size);
      }
    }
    this.drawnOnce = true;
    // The element is the graph's size; a taller bitmap shows its top part (style.css: object-fit).
    if (this.canvas.style.width !== `${cssWidth}px`) this.canvas.style.width = `${cssWidth}px`;
    if (this.canvas.style.height !== `${cssHeight}px`) this.canvas.style.height = `${cssHeight}px`;
    const ctx = this.canvas.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssWidth, cssHeight);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    return ctx;
  }

  /** The depth drawn in the first row. */
  private firstRow(): number {
    const rows = this.data.maxDepth + 1;
    if (rows <= MAX_ROWS) return 0;
    return Math.max(0, Math.min(this.data.depth[this.zoom] - 4, rows - MAX_ROWS));
  }

  /**
   * Fills `drawn` with the frames at least a third of a pixel wide inside the view (their row in
   * `y` until draw() knows the height), and `rows` with the number of rows they take.
   */
  private collect(cssWidth: number): number {
    const { end, depth } = this.data;
    const top = this.firstRow();
    const width = this.options.width;
    const layout = this.layout;
    const view = this.extent();
    const x0 = view.left;
    const scale = cssWidth / (view.span || 1);
    const searching = this.matched.includes(1);
    let count = 0;
    let rows = 1;
    for (let i = 0; i < this.data.nodes; ) {
      const w = width[i] * scale;
      const left = (layout.x[i] - x0) * scale;
      if (w < MIN_WIDTH_PX || left >= cssWidth || left + w <= 0 || depth[i] >= top + MAX_ROWS) {
        i = end[i]; // its whole subtree is as narrow, as far out, or as deep
        continue;
      }
      layout.place(i); // the next nodes visited are its children
      if (depth[i] < top) {
        i++; // above the first row: only its descendants are drawn
        continue;
      }
      if (count === this.drawn.x.length) this.drawn = grow(this.drawn);
      const d = this.drawn;
      const x = Math.max(0, left);
      d.x[count] = x;
      d.w[count] = Math.min(cssWidth, left + w) - x;
      const row = depth[i] - top;
      if (row >= rows) rows = row + 1;
      d.y[count] = row;
      d.node[count] = i;
      d.colour[count] = this.colour(i, searching);
      count++;
      i++;
    }
    this.drawn.count = count;
    this.rows = rows;
    return count;
  }

  private drawLabels(ctx: CanvasRenderingContext2D, count: number): void {
    const searching = this.matched.includes(1);
    this.drawLabelsOf(ctx, count, searching, false);
    if (searching) this.drawLabelsOf(ctx, count, searching, true);
  }

  /** The labels of the frames wide enough for one: the matches' or the others' while searching (dim), else all. */
  private drawLabelsOf(ctx: CanvasRenderingContext2D, count: number, searching: boolean, dim: boolean): void {
    const d = this.drawn;
    ctx.fillStyle = dim ? "#777" : "#111";
    for (let k = 0; k < count; k++) {
      if (d.w[k] <= 3 * CHAR_WIDTH) continue;
      const nameIndex = this.data.name[d.node[k]];
      if (searching && dim === Boolean(this.matched[nameIndex])) continue;
      const label = d.node[k] === 0 ? "all" : this.labels[nameIndex];
      const chars = Math.floor((d.w[k] - 6) / CHAR_WIDTH);
      ctx.fillText(label.length > chars ? `${label.slice(0, Math.max(chars - 1, 1))}…` : label, d.x[k] + 3, d.y[k] + ROW / 2);
    }
  }

  private colour(i: number, searching: boolean): number {
    const nameIndex = this.data.name[i];
    if (searching) return this.matched[nameIndex] ? MATCH : DIMMED;
    if (i === 0) return ROOT;
    const width = this.options.width;
    if (this.options.colouring === "offcpu") {
      const off = this.data.columns.off;
      return OFF_CPU + Math.round((off && width[i] ? off[i] / width[i] : 0) * STEPS);
    }
    if (this.options.colouring === "diff") return DIFF + Math.round((diffChange(this.data, i).relative + 1) * STEPS);
    return this.palette[nameIndex];
  }

  private onKey(e: KeyboardEvent): void {
    if (!KEYS.includes(e.key)) return;
    e.preventDefault();
    const from = this.cursor >= 0 ? this.cursor : this.zoom;
    if (e.key === "+" || e.key === "=" || e.key === "-") return this.zoomView(e.key === "-" ? 1.25 : 0.8, (this.canvas.clientWidth || 0) / 2);
    if (e.key === "Enter") return this.options.onZoom?.(from);
    if (e.key === "Escape") return this.options.onZoom?.(0);
    const leafward = this.options.icicle ? "ArrowDown" : "ArrowUp";
    let to: number;
    if (e.key === "ArrowLeft" || e.key === "ArrowRight") to = this.sibling(from, e.key === "ArrowRight");
    else to = e.key === leafward ? this.child(from) : this.data.parent[from];
    if (to < 0) return;
    this.cursor = to;
    this.hideTip();
    this.options.onSelect?.(to);
    this.draw();
  }

  /** The children of a node that have weight (laid out). */
  private children(node: number): number[] {
    this.layout.placePath(node, this.data.parent);
    this.layout.place(node);
    const out: number[] = [];
    for (let c = node + 1; c < this.data.end[node]; c = this.data.end[c]) if (this.options.width[c] > 0) out.push(c);
    return out;
  }

  /** The leftmost child, or -1. */
  private child(node: number): number {
    const kids = this.children(node);
    const x = this.layout.x;
    return kids.length ? kids.reduce((a, b) => (x[b] < x[a] ? b : a)) : -1;
  }

  /** The nearest sibling to the right (or left), or -1. */
  private sibling(node: number, right: boolean): number {
    const parent = this.data.parent[node];
    if (parent < 0) return -1;
    const siblings = this.children(parent);
    const x = this.layout.x;
    let best = -1;
    for (const s of siblings) {
      const beyond = right ? x[s] > x[node] : x[s] < x[node];
      if (beyond && (best < 0 || (right ? x[s] < x[best] : x[s] > x[best]))) best = s;
    }
    return best;
  }

  /** The weight range shown across the canvas: the view if the user zoomed by wheel or panned, else the zoomed frame's. */
  private extent(): { left: number; span: number } {
    this.layout.placePath(this.zoom, this.data.parent);
    return this.view ?? { left: this.layout.x[this.zoom], span: this.options.width[this.zoom] };
  }

  /** Zooms the view by `factor` (< 1: in) around the canvas x `px`, within the root's extent. */
  zoomView(factor: number, px: number): void {
    const cssWidth = this.canvas.clientWidth || 1;
    const view = this.extent();
    const total = this.options.width[0] || 1;
    const span = Math.min(total, Math.max(view.span * factor, total * 1e-9));
    const at = view.left + (px / cssWidth) * view.span; // the weight under the pointer stays under it
    this.view = this.clamp(at - (px / cssWidth) * span, span);
    this.hideTip();
    this.draw();
  }

  /** Moves the view sideways by `dx` canvas pixels. */
  panView(dx: number, from = this.extent().left): void {
    const view = this.extent();
    this.view = this.clamp(from - (dx / (this.canvas.clientWidth || 1)) * view.span, view.span);
    this.draw();
  }

  private clamp(left: number, span: number): { left: number; span: number } {
    const total = this.options.width[0] || 1;
    return { left: Math.min(Math.max(0, left), total - span), span };
  }

  /** Ctrl+wheel (and a trackpad's pinch) zooms around the pointer; Shift+wheel or a sideways swipe pans; a plain wheel scrolls the page. */
  private onWheel(e: WheelEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    if (e.ctrlKey || e.metaKey) {
      e.preventDefault();
      this.zoomView(Math.exp(e.deltaY * 0.002), e.clientX - rect.left);
    } else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
      e.preventDefault();
      this.panView(-(e.shiftKey ? e.deltaY : e.deltaX));
    }
  }

  private onDragStart(e: MouseEvent): void {
    if (e.button === 0) this.drag = { x: e.clientX, left: this.extent().left, moved: false };
  }

  private onDragEnd(): void {
    if (this.drag?.moved) this.canvas.style.cursor = "";
    setTimeout(() => (this.drag = null)); // after the click this mouseup makes, which a drag must not turn into a zoom
  }

  nodeAt(px: number, py: number): number {
    const d = this.drawn;
    for (let k = d.count - 1; k >= 0; k--) {
      if (py >= d.y[k] && py < d.y[k] + ROW && px >= d.x[k] && px < d.x[k] + d.w[k]) return d.node[k];
    }
    return -1;
  }

  private onMove(e: MouseEvent): void {
    if (this.drag && e.buttons & 1 && (this.drag.moved || Math.abs(e.clientX - this.drag.x) > 3)) {
      this.drag.moved = true;
      this.canvas.style.cursor = "grabbing";
      this.hideTip();
      return this.panView(e.clientX - this.drag.x, this.drag.left);
    }
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
    if (this.drag?.moved) return; // the end of a pan
    const rect = this.canvas.getBoundingClientRect();
    const node = this.nodeAt(e.clientX - rect.left, e.clientY - rect.top);
    if (node < 0) return;
    this.cursor = node;
    this.options.onSelect?.(node);
    this.options.onZoom?.(node);
  }
}

/**
 * Canvases of graphs that left the page, for the next graph to draw on: each filter,
 * sandwich or URL change builds a new graph, and a new canvas of a deep graph's size
 * (1,600 × 1,500 px) took 5-10 ms to allocate and clear, and the compositor ~5 ms more for
 * its new resource. Resizing a kept canvas costs as much, so a graph's first draw takes the
 * free kept canvas of its width with the shortest bitmap at least as tall as it needs (the
 * element is as tall as the graph and shows the bitmap's top part: a focus, hide or
 * sandwich draws on the canvas of the graph it came from), else gets a bitmap a quarter
 * taller than it needs, for the next graph a little taller. A canvas is free once its graph
 * was drawn on the page and is no longer on it; taking it releases the old graph's listeners.
 */
const keptCanvases = new Map<HTMLCanvasElement, () => void>(); // canvas → release its graph
const shownCanvases = new WeakSet<HTMLCanvasElement>();
const KEPT_CANVASES = 4; // free ones, beside those on the page
// A bitmap up to this many times as tall as a graph is drawn on rather than replaced: the
// compositor copies the whole bitmap at each change, so a far taller one would cost more than it saves.
const TALLER_BITMAP = 4;
const HEADROOM = 1.25;
const MAX_BITMAP_SIDE = 32767; // Chromium draws no canvas bitmap taller

/** The free kept canvas that fits `size` with the shortest bitmap, released by its old graph; null if none. */
function freeCanvas(size: CanvasSize): HTMLCanvasElement | null {
  let found: HTMLCanvasElement | null = null;
  for (const canvas of keptCanvases.keys()) if (isFree(canvas) && fits(canvas, size) && (!found || canvas.height < found.height)) found = canvas;
  if (!found) return null;
  keptCanvases.get(found)!();
  keptCanvases.delete(found);
  shownCanvases.delete(found); // until its new graph draws it on the page
  found.style.cursor = "";
  return found;
}

interface CanvasSize {
  width: number; // of the bitmap a graph needs
  height: number;
  cssHeight: number; // the graph's, in CSS pixels
  dpr: number;
}

/**
 * Whether a graph that needs a bitmap of `size` can draw on `canvas`'s: as wide, at least as
 * tall, not far taller; and shown pixel for pixel: a taller bitmap only where the screen's
 * pixel ratio is whole and the bitmap is whole CSS pixels tall (object-fit scales any other by
 * a hair, which blurs it), else exactly as tall.
 */
function fits(canvas: HTMLCanvasElement, size: CanvasSize): boolean {
  if (canvas.width !== size.width) return false;
  if (!Number.isInteger(size.dpr)) return canvas.height === size.height;
  return canvas.height >= size.height && canvas.height <= size.height * TALLER_BITMAP && canvas.height % size.dpr === 0;
}

/** A new bitmap's height for `size`: a quarter taller, in whole CSS pixels, where the pixel ratio is whole (fits). */
function newBitmapHeight(size: CanvasSize): number {
  if (!Number.isInteger(size.dpr)) return size.height;
  const tallest = Math.max(size.cssHeight, Math.floor(MAX_BITMAP_SIDE / size.dpr));
  return Math.min(Math.ceil(size.cssHeight * HEADROOM), tallest) * size.dpr;
}

function keepCanvas(canvas: HTMLCanvasElement, release: () => void): void {
  keptCanvases.set(canvas, release);
  let free = 0;
  for (const kept of keptCanvases.keys()) if (isFree(kept)) free++;
  for (const [old, releaseOld] of keptCanvases) {
    if (free <= KEPT_CANVASES) break;
    if (!isFree(old)) continue;
    releaseOld();
    keptCanvases.delete(old);
    free--;
  }
}

function isFree(canvas: HTMLCanvasElement): boolean {
  return !canvas.isConnected && shownCanvases.has(canvas);
}

/** Arrows move the cursor (towards the leaves is up in a flame graph, down in an icicle), Enter zooms, Escape zooms out. */
const KEYS = ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Enter", "Escape", "+", "=", "-"];

// Every colour the graph uses, so frames can be painted in one path per colour.
const STEPS = 10;
const NAME_HUES = 12;
const NAME_SHADES = 3;
const hsl = (h: number, s: number, l: number) => `hsl(${h}, ${s}%, ${l}%)`;
const COLOURS: string[] = [
  "#c8c8c8", // the root
  "#e040fb", // a search match
  "#e8e8e8", // not a match while searching
  hsl(215, 35, 68), // kernel frames: cool, apart from the warm functions
  hsl(175, 45, 60), // inlined frames
  hsl(95, 45, 55), // Python frames, apart from the native ones they call
  hsl(45, 25, 76), // processes: neutral, a level of their own
  hsl(24, 45, 66), // frames narrower than a pixel, coloured by name
];
const [ROOT, MATCH, DIMMED, KERNEL, INLINED, PYTHON, PROCESS, SLIVER] = [0, 1, 2, 3, 4, 5, 6, 7];
const [SLIVER_PLAIN, SLIVER_MATCH] = [1, 2];
// Per pixel column and row of the graph being painted: 0, or the sliver painted there.
// One for all graphs (a paint marks and paints it in one go): it is as large as the canvas.
let sliverCells = new Uint8Array(0);
let sliverColumns = new Uint8Array(0); // 1 for a pixel column with a sliver
let sliverRuns = new Int32Array(0); // the runs to paint: x, y, height, kind

function grownTo(array: Int32Array, length: number): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(length);
  bigger.set(array);
  return bigger;
}
// The drawn frames a pixel wide or more, by colour and then in drawing order (byColour).
let frameOrder = new Int32Array(0);

/**
 * Puts the frames at least a pixel wide into frameOrder by colour, each colour's in drawing
 * order (a counting sort); their count. One pass over the frames, where a pass per colour
 * was ~40 passes (and V8 left its inner loop's compiled code at each colour's end).
 */
function byColour(d: Drawn, count: number): number {
  const starts = new Int32Array(COLOURS.length + 1);
  for (let k = 0; k < count; k++) if (d.w[k] >= SLIVER_PX) starts[d.colour[k] + 1]++;
  for (let c = 0; c < COLOURS.length; c++) starts[c + 1] += starts[c];
  if (frameOrder.length < count) frameOrder = new Int32Array(count);
  for (let k = 0; k < count; k++) if (d.w[k] >= SLIVER_PX) frameOrder[starts[d.colour[k]]++] = k;
  return starts[COLOURS.length - 1];
}
const CURSOR = "#1d2330";
const NAMED = COLOURS.length;
for (let h = 0; h < NAME_HUES; h++) for (let l = 0; l < NAME_SHADES; l++) COLOURS.push(hsl(8 + h * 4, 80, 58 + l * 6));
const OFF_CPU = COLOURS.length; // on-CPU orange (0) to off-CPU blue (STEPS)
for (let k = 0; k <= STEPS; k++) COLOURS.push(mix([250, 160, 80], [90, 150, 240], k / STEPS));
const DIFF = COLOURS.length; // shrank blue (0), unchanged white (STEPS), grew red (2 * STEPS)
for (let k = -STEPS; k <= STEPS; k++) {
  const t = Math.min(1, (Math.abs(k) / STEPS) * 1.5);
  COLOURS.push(k < 0 ? mix([245, 245, 245], [60, 110, 230], t) : mix([245, 245, 245], [230, 60, 50], t));
}

/** The colours `colouring` paints, as [what it means, CSS colour], for a legend. */
export function legend(colouring: Colouring, python = false): [string, string][] {
  const match: [string, string] = ["search match", COLOURS[MATCH]];
  if (colouring === "offcpu") return [["on-CPU", COLOURS[OFF_CPU]], ["off-CPU", COLOURS[OFF_CPU + STEPS]], match];
  if (colouring === "diff") return [["grew", COLOURS[DIFF + 2 * STEPS]], ["shrank", COLOURS[DIFF]], match];
  const kinds: [string, string][] = [["inlined", COLOURS[INLINED]], ["kernel", COLOURS[KERNEL]]];
  if (python) kinds.push(["Python", COLOURS[PYTHON]]);
  return [["function (warm, by name)", COLOURS[NAMED + 1]], ...kinds, match];
}

/** The colour the graph paints frames of name index `name` with (by name and kind), for other views of the same data. */
export function nameFill(data: FlameData, name: number): string {
  return COLOURS[nameColour(data.names[name], data.kind[name])];
}

const stylesByNames = new WeakMap<string[], { palette: Uint8Array; labels: string[] }>();

/** Colour and short label per name, once per names list: a filtered, hidden or sandwich tree shares its graph's. */
function nameStyles(data: FlameData): { palette: Uint8Array; labels: string[] } {
  let styles = stylesByNames.get(data.names);
  if (!styles) {
    // A process label (`cc1plus (20486)`) is no function name to shorten.
    const label = (name: string, i: number) => (data.kind[i] === FrameKind.Process ? name : shortName(name));
    styles = { palette: Uint8Array.from(data.names, (name, i) => nameColour(name, data.kind[i])), labels: data.names.map(label) };
    stylesByNames.set(data.names, styles);
  }
  return styles;
}

function nameColour(name: string, kind: number): number {
  if (kind === FrameKind.Kernel) return KERNEL;
  if (kind === FrameKind.Inlined) return INLINED;
  if (kind === FrameKind.Python) return PYTHON;
  if (kind === FrameKind.Process) return PROCESS;
  let hash = 0;
  for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) | 0;
  return NAMED + (Math.abs(hash) % (NAME_HUES * NAME_SHADES));
}

function mix(a: number[], b: number[], t: number): string {
  const c = a.map((v, k) => Math.round(v + (b[k] - v) * Math.max(0, Math.min(1, t))));
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

interface Drawn {
  x: Float32Array;
  y: Float32Array;
  w: Float32Array;
  node: Int32Array;
  colour: Uint8Array;
  count: number;
}

function emptyDrawn(capacity: number): Drawn {
  return {
    x: new Float32Array(capacity),
    y: new Float32Array(capacity),
    w: new Float32Array(capacity),
    node: new Int32Array(capacity),
    colour: new Uint8Array(capacity),
    count: 0,
  };
}

function grow(d: Drawn): Drawn {
  const bigger = emptyDrawn(d.x.length * 2);
  bigger.x.set(d.x);
  bigger.y.set(d.y);
  bigger.w.set(d.w);
  bigger.node.set(d.node);
  bigger.colour.set(d.colour);
  bigger.count = d.count;
  return bigger;
}

export function diffChange(data: FlameData, i: number): { before: number; after: number; relative: number } {
  const totalA = Number(data.meta.total_a) || 1;
  const totalB = Number(data.meta.total_b) || 1;
  const before = data.columns.a[i] / totalA;
  const after = data.columns.b[i] / totalB;
  const larger = Math.max(before, after);
  return { before, after, relative: larger ? (after - before) / larger : 0 };
}

// Focus, ignore and hide by regular expression (pprof's -focus, -ignore, -hide): they
// change the data the graph draws, not only its colours.
//   focus  keeps the samples whose stack has a matching frame;
//   ignore drops them;
//   hide   takes the matching frames out of every stack (their callees move up to
//          their caller and merge with its other callees of the same name).
// Focus and ignore keep the tree and reweigh it (two linear passes); hide builds a new
// tree (flametree.mergedTree). Neither runs while drawing.

import { type FlameData, matchedNames } from "./flame";
import { mergedTree } from "./flametree";
import { builtNameIndex, matchedNodes } from "./nameindex";

export interface FlameFilters {
  focus?: (name: string) => boolean;
  ignore?: (name: string) => boolean;
  hide?: (name: string) => boolean;
}

export function applyFilters(data: FlameData, filters: FlameFilters): FlameData {
  let out = filters.hide ? keptHide(data, filters.hide) : data;
  if (filters.focus) out = reweigh(out, matchedNames(out, filters.focus), true);
  if (filters.ignore) out = reweigh(out, matchedNames(out, filters.ignore), false);
  return out;
}

// The last few trees hide made, by source tree and expression (matcher gives a query one test):
// hide merges the whole tree (a deep profile's 262,000 nodes, 10-20 ms), and a focus, ignore or
// colour change after it, or going back to it, would merge it again. Never written to by a caller.
const keptHides: { data: FlameData; test: (name: string) => boolean; tree: FlameData }[] = [];
const KEPT_HIDES = 2; // each as large as the graph

function keptHide(data: FlameData, test: (name: string) => boolean): FlameData {
  const found = keptHides.findIndex((k) => k.data === data && k.test === test);
  const entry = found >= 0 ? keptHides.splice(found, 1)[0] : { data, test, tree: hideFrames(data, matchedNames(data, test)) };
  keptHides.unshift(entry);
  keptHides.length = Math.min(keptHides.length, KEPT_HIDES);
  return entry.tree;
}

/** Per column, the weight of the samples whose stack has (keep) or has not (!keep) a matched frame. */
function reweigh(data: FlameData, matched: Uint8Array, keep: boolean): FlameData {
  const { tops, steps } = matchedTops(data, matched);
  // Few matched subtrees (a focus on one function): copy or clear them and correct their
  // callers, touching little of the tree; many: one pass over all of it is cheaper.
  const under = steps > data.nodes ? subtrees(data, tops) : null;
  const columns: Record<string, Float64Array> = {};
  for (const key in data.columns) {
    const column = data.columns[key];
    columns[key] = under ? reweighColumn(data, column, under, keep) : reweighSubtrees(data, column, tops, keep);
  }
  return { ...data, columns };
}

/** The outermost matching nodes (the rest of their subtrees is under them), and the sum of their depths. */
function matchedTops(data: FlameData, matched: Uint8Array): { tops: number[]; steps: number } {
  const index = builtNameIndex(data);
  return index ? outermost(data, matchedNodes(index, matched)) : scanForTops(data, matched);
}

/** The nodes of `found` (in pre-order) not under another of them, and the sum of their depths. */
function outermost(data: FlameData, found: Int32Array): { tops: number[]; steps: number } {
  const { end, depth } = data;
  const tops: number[] = [];
  let steps = 0;
  let reach = 0; // the end of the last top's subtree
  for (let k = 0; k < found.length; k++) {
    const node = found[k];
    if (node < reach) continue;
    tops.push(node);
    steps += depth[node];
    reach = end[node];
  }
  return { tops, steps };
}

function scanForTops(data: FlameData, matched: Uint8Array): { tops: number[]; steps: number } {
  const { nodes, name, end, depth } = data;
  const tops: number[] = [];
  let steps = 0;
  for (let i = 1; i < nodes; ) {
    if (matched[name[i]]) {
      tops.push(i);
      steps += depth[i];
      i = end[i];
    } else i++;
  }
  return { tops, steps };
}

/** 1 for every node in the subtrees of `tops`. */
function subtrees(data: FlameData, tops: number[]): Uint8Array {
  const under = new Uint8Array(data.nodes);
  for (const t of tops) under.fill(1, t, data.end[t]);
  return under;
}

/**
 * Keep: the matched subtrees' weights, summed up their callers; else the rest, those taken away.
 * The loops over a subtree and up its callers are functions of their own: inline here, V8
 * compiled the outer loop at the inner one's back edge (on-stack replacement) and threw the
 * code away at its exit, hundreds of times in one focus (`--trace-deopt`).
 */
function reweighSubtrees(data: FlameData, column: Float64Array, tops: number[], keep: boolean): Float64Array {
  const { end, parent } = data;
  const out = keep ? new Float64Array(column.length) : column.slice();
  for (const t of tops) {
    if (keep) copyRange(out, column, t, end[t]);
    else out.fill(0, t, end[t]);
    addToCallers(out, parent, t, keep ? column[t] : -column[t]);
  }
  return out;
}

const NATIVE_COPY = 32; // a longer range is copied by the engine (a view per copy costs more than a short loop)

function copyRange(out: Float64Array, column: Float64Array, from: number, to: number): void {
  if (to - from > NATIVE_COPY) out.set(column.subarray(from, to), from);
  else for (let k = from; k < to; k++) out[k] = column[k];
}

function addToCallers(out: Float64Array, parent: Int32Array, node: number, weight: number): void {
  for (let a = parent[node]; a >= 0; a = parent[a]) out[a] += weight;
}

/**
 * One pass from the leaves: a node's weight through a match is all of it under one, else
 * its children's, summed per depth as they finish (sequential reads only, no parent jumps).
 */
function reweighColumn(data: FlameData, column: Float64Array, under: Uint8Array, keep: boolean): Float64Array {
  const { depth } = data;
  const through = new Float64Array(column.length);
  const finished = new Float64Array(data.maxDepth + 2); // through of the children seen, per depth
  for (let i = column.length - 1; i >= 0; i--) {
    const d = depth[i];
    through[i] = under[i] ? column[i] : finished[d + 1];
    finished[d + 1] = 0;
    finished[d] += through[i];
  }
  if (!keep) for (let i = 0; i < column.length; i++) through[i] = column[i] - through[i];
  return through;
}

/** The tree of the stacks with the hidden frames taken out, siblings in name order. */
function hideFrames(data: FlameData, hidden: Uint8Array): FlameData {
  if (!hidden.includes(1)) return data;
  const top: number[] = [];
  for (let c = 1; c < data.end[0]; c = data.end[c]) top.push(c);
  const root = Object.fromEntries(Object.entries(data.columns).map(([k, column]) => [k, column[0]]));
  return mergedTree(data, top, root, hidden);
}

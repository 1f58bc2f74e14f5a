// The sandwich view's data: the samples through one function as two trees, its callers
// (all → F → its caller → that caller's caller …) and its callees (all → F → callee …).
// Only the outermost calls of F count, so a recursive F is not counted twice.

import type { FlameData } from "./flame";
import { mergedTree, TreeBuilder } from "./flametree";

export interface Sandwich {
  callers: FlameData;
  callees: FlameData;
  self: number; // weight of the samples that end in F, in data's first column
  calls: number; // F's outermost calls: 0 if no frame is named F
}

const kept: { data: FlameData; fn: string; view: Sandwich }[] = [];
const KEPT_SANDWICHES = 3; // a sandwich of main holds trees as large as the graph

/**
 * The sandwich of the function named `fn`, kept for the
 * last few (graph, function) pairs: going back to a sandwich (from the flame graph, or
 * from another function's) shows trees already merged instead of merging again.
 */
export function sandwichOf(data: FlameData, fn: string): Sandwich {
  const found = kept.findIndex((k) => k.data === data && k.fn === fn);
  const entry = found >= 0 ? kept.splice(found, 1)[0] : { data, fn, view: sandwich(data, Uint8Array.from(data.names, (n) => (n === fn ? 1 : 0))) };
  kept.unshift(entry);
  kept.length = Math.min(kept.length, KEPT_SANDWICHES);
  return entry.view;
}

function sandwich(data: FlameData, isTarget: Uint8Array): Sandwich {
  const { outermost, self } = outermostCalls(data, isTarget);
  return { callers: callerTree(data, outermost), callees: calleeTree(data, outermost), self, calls: outermost.length };
}

/**
 * The nodes of the function that no other of its nodes calls, in pre-order, and the
 * weight of the samples that end in the function (first column): one pass over the
 * names that reads a node's children only where the node is the function.
 */
function outermostCalls(data: FlameData, isTarget: Uint8Array): { outermost: number[]; self: number } {
  const { nodes, name, end } = data;
  const column = Object.values(data.columns)[0];
  const outermost: number[] = [];
  let self = 0;
  let insideUntil = 0; // end of the outermost call being walked through
  for (let i = 1; i < nodes; i++) {
    if (!isTarget[name[i]]) continue;
    if (i >= insideUntil) {
      outermost.push(i);
      insideUntil = end[i];
    }
    self += column[i];
    for (let c = i + 1; c < end[i]; c = end[c]) self -= column[c]; // a callee's samples are not F's own
  }
  return { outermost, self };
}

function calleeTree(data: FlameData, outermost: number[]): FlameData {
  const root: Record<string, number> = {};
  for (const [key, column] of Object.entries(data.columns)) root[key] = outermost.reduce((sum, o) => sum + column[o], 0);
  return mergedTree(data, outermost, root, null);
}

function callerTree(data: FlameData, outermost: number[]): FlameData {
  // An outermost call at depth d adds at most d nodes: sized by those paths, not the
  // whole graph, the tree's arrays and hash table stay in cache (a few thousand nodes).
  const capacity = outermost.reduce((sum, o) => sum + data.depth[o], 1);
  const tree = new TreeBuilder(capacity);
  const columns = Object.entries(data.columns);
  const weights = columns.map(() => new Float64Array(capacity + 1));
  const add = (node: number, from: number) => columns.forEach(([, column], c) => (weights[c][node] += column[from]));
  for (const o of outermost) {
    add(0, o);
    let node = tree.child(0, data.name[o]);
    add(node, o);
    for (let a = data.parent[o]; a > 0; a = data.parent[a]) {
      node = tree.child(node, data.name[a]);
      add(node, o);
    }
  }
  return tree.build(data, Object.fromEntries(columns.map(([key], c) => [key, weights[c]])));
}

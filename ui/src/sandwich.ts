// The sandwich view's data: the samples through one function as two trees, its callers
// (all → F → its caller → that caller's caller …) and its callees (all → F → callee …).
// Only the outermost calls of F count, so a recursive F is not counted twice.

import type { FlameData } from "./flame";
import { mergedTree, TreeBuilder } from "./flametree";

export interface Sandwich {
  callers: FlameData;
  callees: FlameData;
  self: number; // weight of the samples that end in F, in data's first column
}

export function sandwich(data: FlameData, isTarget: Uint8Array): Sandwich {
  const outermost = outermostCalls(data, isTarget);
  return { callers: callerTree(data, outermost), callees: calleeTree(data, outermost), self: selfOf(data, isTarget) };
}

/** The nodes of the function that no other of its nodes calls, in pre-order. */
function outermostCalls(data: FlameData, isTarget: Uint8Array): number[] {
  const { nodes, name, parent } = data;
  const inside = new Uint8Array(nodes); // a strict caller is the function
  const out: number[] = [];
  for (let i = 1; i < nodes; i++) {
    const p = parent[i];
    inside[i] = inside[p] | (p > 0 ? isTarget[name[p]] : 0);
    if (isTarget[name[i]] && !inside[i]) out.push(i);
  }
  return out;
}

function calleeTree(data: FlameData, outermost: number[]): FlameData {
  const root: Record<string, number> = {};
  for (const [key, column] of Object.entries(data.columns)) root[key] = outermost.reduce((sum, o) => sum + column[o], 0);
  return mergedTree(data, outermost, root, null);
}

function callerTree(data: FlameData, outermost: number[]): FlameData {
  const tree = new TreeBuilder(data.nodes);
  const columns = Object.entries(data.columns);
  const weights = columns.map(() => new Float64Array(data.nodes + 1));
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

/** The weight of the samples that end in the function (first column). */
function selfOf(data: FlameData, isTarget: Uint8Array): number {
  const column = Object.values(data.columns)[0];
  let self = 0;
  for (let i = 1; i < data.nodes; i++) {
    const p = data.parent[i];
    if (isTarget[data.name[i]]) self += column[i];
    if (p > 0 && isTarget[data.name[p]]) self -= column[i]; // a callee's samples are not F's own
  }
  return self;
}

// Each name's nodes, in pre-order: a focus or ignore of a few names finds their frames without
// a pass over the whole tree (a pass over a deep profile's 262,000 nodes was the largest
// piece of a first focus's JavaScript, 5-8 ms, run cold). Built once per tree when the page is
// idle after the flame graph is painted, so no interaction waits for it.

import type { FlameData } from "./flame";

export interface NameIndex {
  start: Int32Array; // name n's nodes: nodes[start[n] .. start[n + 1])
  nodes: Int32Array;
}

// By the tree's name column: focus and ignore reweigh a tree and keep its nodes (and this array).
const indexes = new WeakMap<Int32Array, NameIndex>();

/** The tree's index if it was built, else null (a pass over the tree is then as cheap as building it). */
export function builtNameIndex(data: FlameData): NameIndex | null {
  return indexes.get(data.name) ?? null;
}

/** Builds the tree's index when the page is next idle. */
export function indexWhenIdle(data: FlameData): void {
  const build = () => {
    if (!indexes.has(data.name)) indexes.set(data.name, nameIndex(data));
  };
  if (typeof requestIdleCallback === "function") requestIdleCallback(build, { timeout: 1000 });
  else setTimeout(build, 100);
}

/** A counting sort of the nodes by name (the root, node 0, is no name's). */
function nameIndex(data: FlameData): NameIndex {
  const { nodes, name } = data;
  const start = new Int32Array(data.names.length + 1);
  for (let i = 1; i < nodes; i++) start[name[i] + 1]++;
  for (let n = 0; n < data.names.length; n++) start[n + 1] += start[n];
  const next = start.slice(0, data.names.length);
  const list = new Int32Array(Math.max(nodes - 1, 0));
  for (let i = 1; i < nodes; i++) list[next[name[i]]++] = i;
  return { start, nodes: list };
}

/** The nodes of the names `matched` marks, in pre-order. */
export function matchedNodes(index: NameIndex, matched: Uint8Array): Int32Array {
  const { start, nodes } = index;
  let count = 0;
  let names = 0;
  for (let n = 0; n < matched.length; n++) {
    if (!matched[n]) continue;
    count += start[n + 1] - start[n];
    names++;
  }
  const found = new Int32Array(count);
  let at = 0;
  for (let n = 0; n < matched.length; n++) {
    if (!matched[n]) continue;
    found.set(nodes.subarray(start[n], start[n + 1]), at);
    at += start[n + 1] - start[n];
  }
  if (names > 1) found.sort(); // each name's are in pre-order already
  return found;
}

// Focus, ignore and hide by regular expression (pprof's -focus, -ignore, -hide): they
// change the data the graph draws, not only its colours.
//   focus  keeps the samples whose stack has a matching frame;
//   ignore drops them;
//   hide   takes the matching frames out of every stack (their callees move up to
//          their caller and merge with its other callees of the same name).
// Focus and ignore keep the tree and reweigh it (two linear passes); hide builds a new
// tree. Neither runs while drawing.

import { type FlameData, matchedNames, structure } from "./flame";

export interface FlameFilters {
  focus?: (name: string) => boolean;
  ignore?: (name: string) => boolean;
  hide?: (name: string) => boolean;
}

export function applyFilters(data: FlameData, filters: FlameFilters): FlameData {
  let out = filters.hide ? hideFrames(data, matchedNames(data, filters.hide)) : data;
  if (filters.focus) out = reweigh(out, matchedNames(out, filters.focus), true);
  if (filters.ignore) out = reweigh(out, matchedNames(out, filters.ignore), false);
  return out;
}

/** Per column, the weight of the samples whose stack has (keep) or has not (!keep) a matched frame. */
function reweigh(data: FlameData, matched: Uint8Array, keep: boolean): FlameData {
  const { nodes, name, parent } = data;
  const under = new Uint8Array(nodes); // the node or one of its callers matches
  for (let i = 1; i < nodes; i++) under[i] = matched[name[i]] | under[parent[i]];
  const columns: Record<string, Float32Array> = {};
  for (const [key, column] of Object.entries(data.columns)) {
    const through = new Float64Array(nodes); // weight of the node's samples through a match
    for (let i = nodes - 1; i > 0; i--) {
      if (under[i]) through[i] = column[i];
      through[parent[i]] += through[i];
    }
    const kept = new Float32Array(nodes);
    for (let i = 0; i < nodes; i++) kept[i] = keep ? through[i] : column[i] - through[i];
    columns[key] = kept;
  }
  return { ...data, columns };
}

/** The tree of the stacks with the hidden frames taken out, siblings in name order. */
function hideFrames(data: FlameData, hidden: Uint8Array): FlameData {
  const { nodes, name, parent } = data;
  const target = new Int32Array(nodes); // the new node each node's own weight goes to
  const newParent = new Int32Array(nodes).fill(-1);
  const newName = new Int32Array(nodes).fill(-1);
  const child = childIndex(nodes, newParent, newName);
  let created = 1;
  for (let i = 1; i < nodes; i++) {
    const p = target[parent[i]];
    if (hidden[name[i]]) {
      target[i] = p;
      continue;
    }
    const node = child(p, name[i], created);
    if (node === created) {
      newName[node] = name[i];
      newParent[node] = p;
      created++;
    }
    target[i] = node;
  }
  const order = preOrder(newParent.subarray(0, created), newName);
  const position = new Int32Array(created);
  const depth = new Uint16Array(created);
  const nameColumn = new Int32Array(created);
  for (let k = 0; k < created; k++) {
    const node = order[k];
    position[node] = k;
    nameColumn[k] = newName[node];
    if (k) depth[k] = depth[position[newParent[node]]] + 1;
  }
  const columns: Record<string, Float32Array> = {};
  for (const [key, column] of Object.entries(data.columns)) {
    const own = ownWeights(data, column);
    const total = new Float64Array(created);
    for (let i = 0; i < nodes; i++) total[position[target[i]]] += own[i];
    for (let k = created - 1; k > 0; k--) total[position[newParent[order[k]]]] += total[k];
    columns[key] = Float32Array.from(total);
  }
  return { ...data, nodes: created, name: nameColumn, depth, columns, ...structure(depth) };
}

/**
 * (parent, name) → node, by open addressing over a typed array (a Map of a million
 * numeric keys is ten times slower). `find(p, name, fresh)` returns the node, or
 * registers `fresh` (whose parent and name the caller then sets) and returns it.
 */
function childIndex(capacity: number, parent: Int32Array, name: Int32Array): (p: number, n: number, fresh: number) => number {
  let size = 2;
  while (size < capacity * 2) size *= 2;
  const slots = new Int32Array(size); // node + 1; 0 is empty
  const mask = size - 1;
  return (p, n, fresh) => {
    for (let h = (Math.imul(p, 0x9e3779b1) ^ Math.imul(n + 1, 0x85ebca6b)) & mask; ; h = (h + 1) & mask) {
      const slot = slots[h];
      if (slot === 0) {
        slots[h] = fresh + 1;
        return fresh;
      }
      if (parent[slot - 1] === p && name[slot - 1] === n) return slot - 1;
    }
  };
}

/** A node's weight less its children's: the samples that end in it. */
function ownWeights(data: FlameData, column: Float32Array): Float64Array {
  const own = Float64Array.from(column);
  for (let i = 1; i < data.nodes; i++) own[data.parent[i]] -= column[i];
  return own;
}

/** Nodes (0 the root) in pre-order, children by name index (the server sends names sorted). */
function preOrder(parent: Int32Array, name: Int32Array): Int32Array {
  const n = parent.length;
  const first = new Int32Array(n + 1); // children of p: kids[first[p]] .. kids[first[p + 1] - 1]
  for (let node = 1; node < n; node++) first[parent[node] + 1]++;
  for (let p = 0; p < n; p++) first[p + 1] += first[p];
  const kids = new Int32Array(n);
  const fill = first.slice(0, n);
  for (let node = 1; node < n; node++) kids[fill[parent[node]]++] = node;
  const order = new Int32Array(n);
  const stack = new Int32Array(n);
  let top = 0;
  let done = 0;
  stack[top++] = 0;
  while (top) {
    const node = stack[--top];
    order[done++] = node;
    const from = first[node];
    const to = first[node + 1];
    sortByName(kids, from, to, name);
    for (let k = to - 1; k >= from; k--) stack[top++] = kids[k]; // the first child is popped first
  }
  return order;
}

/** Insertion sort of kids[from..to) by name: siblings are few and mostly in order already. */
function sortByName(kids: Int32Array, from: number, to: number, name: Int32Array): void {
  for (let k = from + 1; k < to; k++) {
    const node = kids[k];
    let j = k;
    while (j > from && name[kids[j - 1]] > name[node]) {
      kids[j] = kids[j - 1];
      j--;
    }
    kids[j] = node;
  }
}

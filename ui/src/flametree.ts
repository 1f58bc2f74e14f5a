// Call trees built anew as the flame graph's FlameData: node by node, children merged by
// name in a typed hash table (the sandwich's callers), or by merging copies of subtrees
// (hide, the sandwich's callees).

import { type FlameData, structure } from "./flame";

export class TreeBuilder {
  readonly parent: Int32Array;
  readonly name: Int32Array;
  size = 1; // node 0 is the root, "all"
  private find: (p: number, n: number, fresh: number) => number;

  constructor(capacity: number) {
    this.parent = new Int32Array(capacity + 1).fill(-1);
    this.name = new Int32Array(capacity + 1).fill(-1);
    this.find = childIndex(capacity + 1, this.parent, this.name);
  }

  /** The child of P named N (a name index), made if it is new. */
  child(p: number, n: number): number {
    const node = this.find(p, n, this.size);
    if (node === this.size) {
      this.parent[node] = p;
      this.name[node] = n;
      this.size++;
    }
    return node;
  }

  /** The tree as FlameData with `like`'s names: `weights[column][node]` is each node's total. */
  build(like: FlameData, weights: Record<string, Float64Array>): FlameData {
    const n = this.size;
    const order = preOrder(this.parent.subarray(0, n), this.name);
    const position = new Int32Array(n);
    const depth = new Uint16Array(n);
    const name = new Int32Array(n);
    for (let k = 0; k < n; k++) {
      const node = order[k];
      position[node] = k;
      name[k] = this.name[node];
      if (k) depth[k] = depth[position[this.parent[node]]] + 1;
    }
    const columns: Record<string, Float64Array> = {};
    for (const [key, byNode] of Object.entries(weights)) {
      const total = new Float64Array(n);
      for (let node = 0; node < n; node++) total[position[node]] = byNode[node];
      columns[key] = total;
    }
    return { ...like, nodes: n, name, depth, columns, ...structure(depth) };
  }
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

/**
 * Copies of old nodes merged by path (hide, the sandwich's callees), built straight in
 * pre-order without hashing: the old nodes that become one new node are kept together
 * as a group, and a group's children are its members' children (with a hidden child
 * replaced by its own children) gathered, sorted and split by name. The members of a
 * group never contain one another, so a new node's weight is the sum of theirs.
 *
 * `top` are the old nodes that become the root's children (a hidden one: its callees); `rootWeights` the root's
 * weight per column; `hidden` (per name) frames left out, their callees moved up.
 */
export function mergedTree(data: FlameData, top: ArrayLike<number>, rootWeights: Record<string, number>, hidden: Uint8Array | null): FlameData {
  const keys = Object.keys(data.columns);
  const old = keys.map((k) => data.columns[k]);
  const capacity = subtreeSizes(data, top) + 1; // a sandwich's few calls need far less than the graph
  const name = new Int32Array(capacity);
  const depth = new Uint16Array(capacity);
  const weights = keys.map((k) => new Float64Array(capacity).fill(rootWeights[k], 0, 1));
  name[0] = -1;
  // One call with nothing hidden (a sandwich of a function called from one place, like
  // main): the tree is a copy of its subtree, without the groups' graph-sized arrays.
  const size = top.length === 1 && !hidden ? copySubtree(data, old, top[0], 1, name, depth, weights, 1) : mergeGroups(data, old, top, hidden, { name, depth, weights });
  const columns: Record<string, Float64Array> = {};
  keys.forEach((k, c) => (columns[k] = weights[c].subarray(0, size)));
  const d = depth.subarray(0, size);
  return { ...data, nodes: size, name: name.subarray(0, size), depth: d, columns, ...structure(d) };
}

/** The groups of `top`'s members merged level by level into `out` from node 1; the tree's size. */
function mergeGroups(data: FlameData, old: Float64Array[], top: ArrayLike<number>, hidden: Uint8Array | null, out: { name: Int32Array; depth: Uint16Array; weights: Float64Array[] }): number {
  const { name, depth, weights } = out;
  let size = 1;
  const capacity = name.length;
  const groups = newGroups(capacity);
  const scratch = reused("scratch", Int32Array, capacity);
  let count = 0;
  for (let k = 0; k < top.length; k++) {
    if (hidden && hidden[data.name[top[k]]]) count = gather(data, hidden, top[k], scratch, count);
    else scratch[count++] = top[k];
  }
  pushGroups(groups, data.name, scratch, count, 0, 1);
  const { pool, start, length, level } = groups;
  const hiddenBefore = hiddenPrefix(data, hidden);
  while (groups.pending > 0) {
    const g = --groups.pending;
    const first = pool[start[g]];
    if (length[g] === 1 && (hiddenBefore === null || hiddenBefore[data.end[first]] === hiddenBefore[first])) {
      // One old subtree with nothing hidden in it (most, deep down): copied as it is.
      size = copySubtree(data, old, first, level[g], name, depth, weights, size);
      continue;
    }
    const node = size++;
    name[node] = data.name[pool[start[g]]];
    depth[node] = level[g];
    const from = start[g];
    const to = from + length[g];
    for (let c = 0; c < old.length; c++) {
      const column = old[c];
      let sum = 0;
      for (let m = from; m < to; m++) sum += column[pool[m]];
      weights[c][node] = sum;
    }
    count = 0;
    for (let m = from; m < to; m++) count = gather(data, hidden, pool[m], scratch, count);
    // The group's members are used: its children's members take their place in the pool.
    if (count) pushGroups(groups, data.name, scratch, count, from, level[g] + 1);
  }
  return size;
}

/** How many nodes the subtrees of `top` hold: no merged tree of them has more (plus its root). */
function subtreeSizes(data: FlameData, top: ArrayLike<number>): number {
  let sum = 0;
  for (let k = 0; k < top.length; k++) sum += data.end[top[k]] - top[k];
  return sum;
}

/** Old node `first` and its subtree into the new arrays from `at`, at `level`; the new size. */
function copySubtree(data: FlameData, old: Float64Array[], first: number, level: number, name: Int32Array, depth: Uint16Array, weights: Float64Array[], at: number): number {
  const last = data.end[first];
  const shift = level - data.depth[first];
  if (last - first > SMALL_SUBTREE) {
    // A view per copy costs more than a loop over a few nodes (most copies are leaves).
    name.set(data.name.subarray(first, last), at);
    for (let c = 0; c < old.length; c++) weights[c].set(old[c].subarray(first, last), at);
  } else {
    for (let k = first; k < last; k++) name[at + k - first] = data.name[k];
    for (let c = 0; c < old.length; c++) for (let k = first; k < last; k++) weights[c][at + k - first] = old[c][k];
  }
  if (shift === 0 && last - first > SMALL_SUBTREE) depth.set(data.depth.subarray(first, last), at);
  else for (let k = first; k < last; k++) depth[at + k - first] = data.depth[k] + shift;
  return at + last - first;
}

const SMALL_SUBTREE = 32;

type TypedArrayOf<T> = { new (length: number): T };

const scratchArrays = new Map<string, Int32Array | Uint16Array | Float64Array>();

/**
 * A scratch array of at least `length` for one use, kept for the next merge: a merge's
 * working arrays are as large as the graph, and allocating them anew on each filter or
 * sandwich made V8 collect garbage (20-30 ms) on most of them. Its contents are stale.
 */
function reused<T extends Int32Array | Uint16Array | Float64Array>(use: string, type: TypedArrayOf<T>, length: number): T {
  let array = scratchArrays.get(use) as T | undefined;
  if (!array || array.length < length) {
    array = new type(length);
    scratchArrays.set(use, array);
  }
  return array;
}

/** hiddenBefore[i]: how many of the nodes before i are hidden frames (null without `hidden`). */
function hiddenPrefix(data: FlameData, hidden: Uint8Array | null): Int32Array | null {
  if (!hidden) return null;
  const before = reused("hiddenBefore", Int32Array, data.nodes + 1);
  before[0] = 0;
  for (let i = 0; i < data.nodes; i++) before[i + 1] = before[i] + hidden[data.name[i]];
  return before;
}

/** Groups waiting to become nodes, the next to pop last: members pool[start .. start + length). */
interface Groups {
  pool: Int32Array;
  start: Int32Array;
  length: Int32Array;
  level: Uint16Array;
  pending: number;
}

function newGroups(capacity: number): Groups {
  const ints = (use: string) => reused(use, Int32Array, capacity);
  return { pool: ints("pool"), start: ints("start"), length: ints("length"), level: reused("level", Uint16Array, capacity), pending: 0 };
}

/** A node's children into out[count ..], a hidden child replaced by its own; the new count. */
function gather(data: FlameData, hidden: Uint8Array | null, node: number, out: Int32Array, count: number): number {
  const { end, name } = data;
  for (let c = node + 1; c < end[node]; c = end[c]) {
    if (hidden !== null && hidden[name[c]] === 1) count = gather(data, hidden, c, out, count);
    else out[count++] = c;
  }
  return count;
}

/**
 * scratch[0 .. count) split by name into groups, pool from `at` on. The first name is
 * popped first, so it goes highest in the pool: its children's members can then be
 * written over its own and past them.
 */
function pushGroups(groups: Groups, name: Int32Array, scratch: Int32Array, count: number, at: number, level: number): void {
  sortMembers(scratch, count, name);
  const { pool, start, length } = groups;
  let end = count;
  for (let k = count - 1; k >= 0; k--) {
    if (k > 0 && name[scratch[k - 1]] === name[scratch[k]]) continue;
    const g = groups.pending++;
    start[g] = at;
    length[g] = end - k;
    groups.level[g] = level;
    for (let m = k; m < end; m++) pool[at++] = scratch[m];
    end = k;
  }
}

/**
 * scratch[0 .. count) by name index, then node: already in order unless hidden frames'
 * callees (or a sandwich's calls from many places) joined. A few members (most groups) by
 * insertion sort; more sorted as numbers (name * span + node) without a comparator: a
 * comparator called per pair took most of a sandwich's time, and so did taking the nodes
 * back out of the numbers with `%` (a call into V8's runtime per member).
 */
function sortMembers(scratch: Int32Array, count: number, name: Int32Array): void {
  for (let k = 1; k < count; k++) {
    if (name[scratch[k - 1]] > name[scratch[k]]) {
      if (count <= FEW_MEMBERS) insertionSort(scratch, k, count, name);
      else sortAsNumbers(scratch, count, name);
      return;
    }
  }
}

const FEW_MEMBERS = 24;

/** Insertion sort of scratch[0 .. count) by (name, node); scratch[0 .. from) is in order already. */
function insertionSort(scratch: Int32Array, from: number, count: number, name: Int32Array): void {
  for (let k = from; k < count; k++) {
    const member = scratch[k];
    const n = name[member];
    let j = k;
    while (j > 0 && (name[scratch[j - 1]] > n || (name[scratch[j - 1]] === n && scratch[j - 1] > member))) {
      scratch[j] = scratch[j - 1];
      j--;
    }
    scratch[j] = member;
  }
}

function sortAsNumbers(scratch: Int32Array, count: number, name: Int32Array): void {
  const keys = reused("sortKeys", Float64Array, count);
  const span = name.length; // more than any node index: name * span + node is exact in a double
  for (let m = 0; m < count; m++) keys[m] = name[scratch[m]] * span + scratch[m];
  keys.subarray(0, count).sort();
  for (let m = 0; m < count; m++) scratch[m] = keys[m] - Math.floor(keys[m] / span) * span;
}

// Call trees built node by node (hide, the sandwich view): children merged by name in a
// typed hash table, then laid out in pre-order as the flame graph's FlameData.

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

  /**
   * The tree as FlameData with `like`'s names and columns: `weights[column][node]` are
   * each node's own weight (`own`: subtrees are summed here) or already its total.
   */
  build(like: FlameData, weights: Record<string, Float64Array>, own: boolean): FlameData {
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
      if (own) for (let k = n - 1; k > 0; k--) total[position[this.parent[order[k]]]] += total[k];
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

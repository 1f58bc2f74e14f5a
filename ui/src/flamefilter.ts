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
    columns[key] = Float32Array.from(column, (v, i) => (keep ? through[i] : v - through[i]));
  }
  return { ...data, columns };
}

/** The tree of the stacks with the hidden frames taken out, siblings in name order. */
function hideFrames(data: FlameData, hidden: Uint8Array): FlameData {
  const { nodes, name, parent } = data;
  const target = new Int32Array(nodes); // the new node each node's own weight goes to
  const newParent = [-1];
  const newName = [-1];
  const byKey = new Map<number, number>();
  for (let i = 1; i < nodes; i++) {
    const p = target[parent[i]];
    if (hidden[name[i]]) {
      target[i] = p;
      continue;
    }
    const key = p * data.names.length + name[i];
    let node = byKey.get(key);
    if (node === undefined) {
      node = newName.push(name[i]) - 1;
      newParent.push(p);
      byKey.set(key, node);
    }
    target[i] = node;
  }
  const order = preOrder(newParent, newName);
  const depth = new Uint16Array(order.length);
  const position = new Int32Array(order.length);
  order.forEach((node, k) => {
    position[node] = k;
    if (k) depth[k] = depth[position[newParent[node]]] + 1;
  });
  const columns: Record<string, Float32Array> = {};
  for (const [key, column] of Object.entries(data.columns)) {
    const own = ownWeights(data, column);
    const total = new Float64Array(order.length);
    for (let i = 0; i < nodes; i++) total[position[target[i]]] += own[i];
    for (let k = order.length - 1; k > 0; k--) total[position[newParent[order[k]]]] += total[k];
    columns[key] = Float32Array.from(total);
  }
  const nameColumn = Int32Array.from(order, (node) => newName[node]);
  return { ...data, nodes: order.length, name: nameColumn, depth, columns, ...structure(depth) };
}

/** A node's weight less its children's: the samples that end in it. */
function ownWeights(data: FlameData, column: Float32Array): Float64Array {
  const own = Float64Array.from(column);
  for (let i = 1; i < data.nodes; i++) own[data.parent[i]] -= column[i];
  return own;
}

/** Nodes in pre-order, children by name index (the server sends names sorted). */
function preOrder(parent: number[], name: number[]): number[] {
  const children: number[][] = parent.map(() => []);
  for (let node = 1; node < parent.length; node++) children[parent[node]].push(node);
  const order: number[] = [];
  const stack = [0];
  while (stack.length) {
    const node = stack.pop()!;
    order.push(node);
    const kids = children[node].sort((a, b) => name[b] - name[a]); // reversed: popped first is smallest
    for (const kid of kids) stack.push(kid);
  }
  return order;
}

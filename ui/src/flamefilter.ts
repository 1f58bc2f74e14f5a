// Focus, ignore and hide by regular expression (pprof's -focus, -ignore, -hide): they
// change the data the graph draws, not only its colours.
//   focus  keeps the samples whose stack has a matching frame;
//   ignore drops them;
//   hide   takes the matching frames out of every stack (their callees move up to
//          their caller and merge with its other callees of the same name).
// Focus and ignore keep the tree and reweigh it (two linear passes); hide builds a new
// tree. Neither runs while drawing.

import { type FlameData, matchedNames } from "./flame";
import { TreeBuilder } from "./flametree";

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
  const columns: Record<string, Float64Array> = {};
  for (const [key, column] of Object.entries(data.columns)) {
    const through = new Float64Array(nodes); // weight of the node's samples through a match
    for (let i = nodes - 1; i > 0; i--) {
      if (under[i]) through[i] = column[i];
      through[parent[i]] += through[i];
    }
    const kept = new Float64Array(nodes);
    for (let i = 0; i < nodes; i++) kept[i] = keep ? through[i] : column[i] - through[i];
    columns[key] = kept;
  }
  return { ...data, columns };
}

/** The tree of the stacks with the hidden frames taken out, siblings in name order. */
function hideFrames(data: FlameData, hidden: Uint8Array): FlameData {
  const { nodes, name, parent } = data;
  const tree = new TreeBuilder(nodes);
  const target = new Int32Array(nodes); // the new node each node's own weight goes to
  for (let i = 1; i < nodes; i++) target[i] = hidden[name[i]] ? target[parent[i]] : tree.child(target[parent[i]], name[i]);
  return tree.build(data, ownWeightsTo(data, target, tree.size), true);
}

/** Per column, the own weight of every node added to its target node (-1: dropped). */
export function ownWeightsTo(data: FlameData, target: Int32Array, size: number): Record<string, Float64Array> {
  const out: Record<string, Float64Array> = {};
  for (const [key, column] of Object.entries(data.columns)) {
    const own = ownWeights(data, column);
    const weights = new Float64Array(size);
    for (let i = 0; i < data.nodes; i++) if (target[i] >= 0) weights[target[i]] += own[i];
    out[key] = weights;
  }
  return out;
}

/** A node's weight less its children's: the samples that end in it. */
function ownWeights(data: FlameData, column: Float64Array): Float64Array {
  const own = Float64Array.from(column);
  for (let i = 1; i < data.nodes; i++) own[data.parent[i]] -= column[i];
  return own;
}

// A call graph several levels deep, pprof-style: functions as nodes, merged by name at
// each distance from the centre function, built from the sandwich trees (sandwich.ts)
// of the flame data, and pruned to the functions over a share of the run.

import type { FlameData } from "./flame";

export interface LayerNode {
  name: string;
  weight: number; // of the samples through the centre function
}

export interface Layers {
  columns: LayerNode[][]; // [0] the centre, then one column per level away from it
  edges: { from: number; to: number; level: number; weight: number }[]; // between column level-1 and level
}

/** Up to `depth` levels of TREE (a sandwich tree: all → F → …) by function, each node beyond F at least `minWeight`. */
export function layers(tree: FlameData, depth: number, minWeight: number, shown: number): Layers {
  const total = tree.columns.total;
  const byLevel: Map<number, number>[] = Array.from({ length: depth + 1 }, () => new Map());
  const edgeWeight: Map<string, number>[] = Array.from({ length: depth + 1 }, () => new Map());
  for (let i = 1; i < tree.nodes; i++) {
    const level = tree.depth[i] - 1; // depth 1 is F itself
    if (level > depth) continue;
    const name = tree.name[i];
    byLevel[level].set(name, (byLevel[level].get(name) ?? 0) + total[i]);
    if (level > 0) {
      const key = `${tree.name[tree.parent[i]]} ${name}`;
      edgeWeight[level].set(key, (edgeWeight[level].get(key) ?? 0) + total[i]);
    }
  }
  const kept = byLevel.map((nodes, level) =>
    [...nodes]
      .filter(([, w]) => level === 0 || w >= minWeight)
      .sort((a, b) => b[1] - a[1])
      .slice(0, shown),
  );
  const columns = kept.map((nodes) => nodes.map(([n, w]) => ({ name: tree.names[n], weight: w })));
  const edges: Layers["edges"] = [];
  for (let level = 1; level <= depth; level++) {
    for (const [key, weight] of edgeWeight[level]) {
      const [a, b] = key.split(" ").map(Number);
      const from = kept[level - 1].findIndex(([n]) => n === a);
      const to = kept[level].findIndex(([n]) => n === b);
      if (from >= 0 && to >= 0) edges.push({ from, to, level, weight });
    }
  }
  return { columns, edges };
}

// A differential flame graph (columns "a" and "b"): red where a frame's share of its side
// grew, blue where it shrank. The compare page and the fleet's diff draw it.
import { pct, signedPct } from "../dom";
import { diffChange, type FlameData, FlameGraph } from "../flame";
import { frameTitle } from "./common";

/** The graph, frames as wide as side B (or A with `byBefore`); `sides` names them in its tooltip. */
export function diffFlame(data: FlameData, byBefore: boolean, sides: [string, string, string]): FlameGraph {
  const [before, after, of] = sides;
  const graph: FlameGraph = new FlameGraph(data, {
    width: byBefore ? data.columns.a : data.columns.b,
    colouring: "diff",
    icicle: false,
    heaviestFirst: false,
    onZoom: (node) => graph.zoomTo(node === graph.zoom ? data.parent[node] : node),
    tooltip: (node) => {
      const change = diffChange(data, node);
      return [frameTitle(data, node), `${before} ${pct(change.before)} · ${after} ${pct(change.after)} of ${of}`, `change ${signedPct(change.after - change.before)}`];
    },
  });
  return graph;
}

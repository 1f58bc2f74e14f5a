// Which runs a comparison makes sense for: the same program, recording mode and unit.
// Shares of a folded import in samples against a wall run in ns compare nothing.

import type { RunSummary } from "./types";

function program(run: RunSummary): string {
  return run.command.trim().split(/\s+/)[0]?.split("/").pop() || "(imported)";
}

/** Why BEFORE cannot be compared with AFTER ("" when it can), said of BEFORE. */
export function incomparable(before: RunSummary, after: RunSummary): string {
  if (before.unit !== after.unit) return `counts ${before.unit}, run ${after.id} counts ${after.unit}`;
  if (before.mode !== after.mode) return `is a ${before.mode} run, run ${after.id} a ${after.mode} run`;
  if (program(before) !== program(after)) return `ran ${program(before)}, run ${after.id} ran ${program(after)}`;
  return "";
}

/** The newest pair of comparable runs [before, after], or null. `runs` is newest first. */
export function newestPair(runs: RunSummary[]): [RunSummary, RunSummary] | null {
  for (let b = 0; b < runs.length; b++) {
    const before = runs.slice(b + 1).find((r) => !incomparable(r, runs[b]));
    if (before) return [before, runs[b]];
  }
  return null;
}

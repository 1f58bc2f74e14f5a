// Which runs a comparison makes sense for: the same program, recording mode and unit.
// Shares of a folded import in samples against a wall run in ns compare nothing.

import type { RunSummary } from "./types";

// Commands that run another one with a changed environment or placement: the program is
// what they run (`env LD_PRELOAD=libmimalloc.so ./app` is an A/B of ./app).
const WRAPPERS: Record<string, number> = { env: 0, nice: 0, time: 0, taskset: 1, chrt: 1, numactl: 0, stdbuf: 0, ionice: 0, setarch: 1 };

/** The program a run ran, past environment assignments and wrappers; "" for an import. */
export function program(run: RunSummary): string {
  const words = run.command.trim().split(/\s+/).filter(Boolean);
  if (words[0] === "import") return ""; // `import FILE`: the profile of some program
  let i = 0;
  while (i < words.length) {
    const name = words[i].split("/").pop() ?? "";
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(words[i])) i++;
    else if (name in WRAPPERS) {
      i++;
      while (i < words.length && words[i].startsWith("-")) i++; // the wrapper's options
      i += WRAPPERS[name]; // and its positional argument (taskset's mask)
    } else return name;
  }
  return "";
}

const article = (word: string) => (/^[aeiou]/i.test(word) ? "an" : "a");

/** Why BEFORE cannot be compared with AFTER ("" when it can), said of BEFORE. */
export function incomparable(before: RunSummary, after: RunSummary): string {
  if (before.unit !== after.unit) return `counts ${before.unit}, run ${after.id} counts ${after.unit}`;
  if (before.mode !== after.mode) return `is ${article(before.mode)} ${before.mode}-mode run, run ${after.id} ${article(after.mode)} ${after.mode}-mode run`;
  const [a, b] = [program(before), program(after)];
  if (a !== b) return `ran ${a || "an import"}, run ${after.id} ran ${b || "an import"}`;
  return "";
}

/**
 * The newest pair of comparable runs [before, after], or null. `runs` is newest first.
 * Recorded runs come first: two imports have no command to tell whether they are of
 * the same program.
 */
export function newestPair(runs: RunSummary[]): [RunSummary, RunSummary] | null {
  const recorded = runs.filter((r) => program(r));
  return pairIn(recorded) ?? pairIn(runs);
}

function pairIn(runs: RunSummary[]): [RunSummary, RunSummary] | null {
  for (let b = 0; b < runs.length; b++) {
    const before = runs.slice(b + 1).find((r) => !incomparable(r, runs[b]));
    if (before) return [before, runs[b]];
  }
  return null;
}

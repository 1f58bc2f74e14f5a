// The machine code of a function's hot lines (server: /api/runs/N/disasm), drawn in
// the source view under each hot line as a disclosure the keyboard can open.
import { bar, h, message, pct } from "../dom";

export interface AsmInstruction {
  address: number;
  text: string;
  symbol: string;
  /** Share of the function's self samples whose leaf was this instruction; null when the run kept no sample addresses. */
  share: number | null;
}

export interface AsmLine {
  file: string;
  line: number;
  self: number;
  total: number;
  instructions: AsmInstruction[];
}

export interface AsmDoc {
  function: string;
  binary: string | null;
  build_id: string | null;
  /** "instruction": the run kept its samples per leaf instruction; "line": per source line only. */
  counts: string;
  /** Why there is no per-instruction cost (folded import, count run, older run), else null. */
  no_cost_reason: string | null;
  /** The function's self samples (fraction of the run) the instruction shares divide. */
  function_self?: number | null;
  /** Why there is no code to show (binary gone, changed, stripped), else null. */
  reason: string | null;
  /** The file read: the binary, or perf's cached copy of the build the run recorded. */
  read_from: string | null;
  lines: AsmLine[];
}

function sameFile(a: string, b: string): boolean {
  return a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}

function hex(address: number): string {
  return `0x${address.toString(16)}`;
}

function costCell(insn: AsmInstruction): HTMLElement {
  if (insn.share === null) return h("td", { class: "asm-cost" });
  const label = `${pct(insn.share, 1)} of the function's self samples`;
  return h("td", { class: "asm-cost", title: label }, h("span", { class: "asm-heat", "aria-hidden": "true" }, bar(insn.share)), h("span", { class: "asm-share" }, pct(insn.share, 1)));
}

function instructionRows(code: AsmInstruction[], hottest: number | null): HTMLElement[] {
  const rows: HTMLElement[] = [];
  let symbol = "";
  for (const insn of code) {
    if (insn.symbol !== symbol) {
      symbol = insn.symbol;
      rows.push(h("tr", { class: "asm-symbol" }, h("td", { colspan: 3 }, `in ${symbol}`)));
    }
    const cls = insn.address === hottest ? "asm-insn asm-hottest" : "asm-insn";
    rows.push(h("tr", { class: cls, "data-address": insn.address, "data-share": insn.share ?? undefined }, costCell(insn), h("td", { class: "asm-address" }, hex(insn.address)), h("td", { class: "asm-text" }, insn.text)));
  }
  return rows;
}

/** The address with the most of the function's samples among the lines shown, null without per-instruction cost. */
function hottestAddress(doc: AsmDoc): number | null {
  let best: AsmInstruction | null = null;
  for (const insn of doc.lines.flatMap((l) => l.instructions)) if (insn.share !== null && insn.share > 0 && (!best || insn.share > (best.share ?? 0))) best = insn;
  return best ? best.address : null;
}

function lineCode(line: AsmLine, open: boolean, hottest: number | null): HTMLElement {
  const count = line.instructions.length;
  const perInstruction = line.instructions.some((i) => i.share !== null);
  const summary = count
    ? `machine code of line ${line.line}: ${count} instruction${count === 1 ? "" : "s"}, self ${pct(line.self)} (${perInstruction ? "cost per instruction" : "samples per line"})`
    : `line ${line.line} has no code of its own in the binary`;
  return h(
    "tr",
    { class: "asm", "data-line": line.line },
    h(
      "td",
      { colspan: 4 },
      h("details", { open }, h("summary", null, summary), count ? h("table", { class: "asm-code" }, h("tbody", null, instructionRows(line.instructions, hottest))) : null),
    ),
  );
}

/** Line number -> the row of its machine code, for the hot lines of one file; the hottest is open. */
export function asmRows(doc: AsmDoc | null, file: string): Map<number, HTMLElement> {
  const rows = new Map<number, HTMLElement>();
  if (!doc || doc.reason) return rows;
  const hottest = hottestAddress(doc);
  // the line holding the hottest instruction is open, else the hottest line
  const opened = doc.lines.find((l) => l.instructions.some((i) => i.address === hottest)) ?? doc.lines[0];
  const open = (line: AsmLine) => line === opened;
  for (const line of doc.lines.filter((l) => sameFile(l.file, file))) rows.set(line.line, lineCode(line, open(line), hottest));
  return rows;
}

/** Where the code comes from, or why there is none. */
export function asmNotice(doc: AsmDoc | null, problem: string | null): HTMLElement | null {
  if (problem) return message(`No machine code: ${problem}`, "warning asm-notice");
  if (!doc) return null;
  if (doc.reason) return message(`No machine code for the hot lines: ${doc.reason}`, "warning asm-notice");
  const checked = doc.build_id ? `build-id ${doc.build_id}, as recorded` : "the run recorded no build-id to check";
  const copy = doc.read_from && doc.read_from !== doc.binary ? `; ${doc.binary} is gone or rebuilt, read from the copy perf kept, ${doc.read_from}` : "";
  const cost = doc.no_cost_reason ? `; no cost per instruction: ${doc.no_cost_reason}` : "; cost per instruction as a share of the function's self samples, the hottest outlined";
  return h("p", { class: "subtitle asm-notice" }, `machine code of the ${doc.lines.length} hottest lines from ${doc.binary} (${checked}${copy})${cost}`);
}

// The machine code of a function's hot lines (server: /api/runs/N/disasm), drawn in
// the source view under each hot line as a disclosure the keyboard can open.
import { h, message, pct } from "../dom";

export interface AsmInstruction {
  address: number;
  text: string;
  symbol: string;
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
  /** "line": the run's samples are per source line, not per instruction. */
  counts: string;
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

function instructionRows(code: AsmInstruction[]): HTMLElement[] {
  const rows: HTMLElement[] = [];
  let symbol = "";
  for (const insn of code) {
    if (insn.symbol !== symbol) {
      symbol = insn.symbol;
      rows.push(h("tr", { class: "asm-symbol" }, h("td", { colspan: 2 }, `in ${symbol}`)));
    }
    rows.push(h("tr", { class: "asm-insn" }, h("td", { class: "asm-address" }, hex(insn.address)), h("td", { class: "asm-text" }, insn.text)));
  }
  return rows;
}

function lineCode(line: AsmLine, open: boolean): HTMLElement {
  const count = line.instructions.length;
  const summary = count
    ? `machine code of line ${line.line}: ${count} instruction${count === 1 ? "" : "s"}, self ${pct(line.self)} (samples per line)`
    : `line ${line.line} has no code of its own in the binary`;
  return h(
    "tr",
    { class: "asm", "data-line": line.line },
    h(
      "td",
      { colspan: 4 },
      h("details", { open }, h("summary", null, summary), count ? h("table", { class: "asm-code" }, h("tbody", null, instructionRows(line.instructions))) : null),
    ),
  );
}

/** Line number -> the row of its machine code, for the hot lines of one file; the hottest is open. */
export function asmRows(doc: AsmDoc | null, file: string): Map<number, HTMLElement> {
  const rows = new Map<number, HTMLElement>();
  if (!doc || doc.reason) return rows;
  const hottest = doc.lines[0];
  for (const line of doc.lines.filter((l) => sameFile(l.file, file))) rows.set(line.line, lineCode(line, line === hottest));
  return rows;
}

/** Where the code comes from, or why there is none. */
export function asmNotice(doc: AsmDoc | null, problem: string | null): HTMLElement | null {
  if (problem) return message(`No machine code: ${problem}`, "warning asm-notice");
  if (!doc) return null;
  if (doc.reason) return message(`No machine code for the hot lines: ${doc.reason}`, "warning asm-notice");
  const checked = doc.build_id ? `build-id ${doc.build_id}, as recorded` : "the run recorded no build-id to check";
  const copy = doc.read_from && doc.read_from !== doc.binary ? `; ${doc.binary} is gone or rebuilt, read from the copy perf kept, ${doc.read_from}` : "";
  return h("p", { class: "subtitle asm-notice" }, `machine code of the ${doc.lines.length} hottest lines from ${doc.binary} (${checked}${copy})`);
}

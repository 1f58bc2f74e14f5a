import { embedded, getJSON } from "../api";
import { append, h, message, pct } from "../dom";
import { href, type Route } from "../router";
import type { Advice, AnnotateDoc, PlacedFinding, SourceFile, SourceLine } from "../types";
import { type AsmDoc, asmNotice, asmRows } from "./asm";
import { findingCard, functionLinks } from "./common";

function sameFile(a: string, b: string): boolean {
  if (!a || !b) return false;
  return a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}

type Heat = "self" | "total";

/** Links that colour the lines by their self cost or their total cost (`heat=total`). */
function heatChoice(runId: string, params: URLSearchParams, heat: Heat): HTMLElement {
  const link = (by: Heat) =>
    h("a", { href: href(`/run/${runId}/source`, { ...Object.fromEntries(params), heat: by === "total" ? "total" : null }), class: by === heat ? "chip active" : "chip" }, `heat by ${by}`);
  return h("p", { class: "toolbar heat-choice" }, link("self"), link("total"));
}

function fileView(runId: string, file: SourceFile, findings: PlacedFinding[], target: number, heatBy: Heat, asm: AsmDoc | null): HTMLElement {
  const code = asmRows(asm, file.file);
  const cost = (l: SourceLine) => (heatBy === "total" ? l.total : l.self);
  const maxCost = Math.max(...file.lines.map(cost), 1e-12);
  const here = findings.filter((f) => sameFile(f.file ?? "", file.file));
  const byLine = new Map<number, PlacedFinding[]>();
  for (const f of here) {
    const line = f.line ?? 0;
    byLine.set(line, [...(byLine.get(line) ?? []), f]);
  }
  const hottest = file.lines.reduce((best, l) => (cost(l) > cost(best) ? l : best), file.lines[0] ?? { line: 0, self: 0, total: 0, source: "" });
  const focus = target || hottest?.line || 0;
  const rows: HTMLElement[] = [];
  for (const l of file.lines) {
    const heat = cost(l) / maxCost;
    const cls = [l.line === focus ? "target" : "", heat > 0 ? "hot" : ""].join(" ").trim();
    rows.push(
      h(
        "tr",
        { id: `L${l.line}`, class: cls || undefined, style: heat > 0 ? `--heat:${heat.toFixed(3)}` : undefined },
        h("td", { class: "num" }, l.self ? pct(l.self) : ""),
        h("td", { class: "num" }, l.total ? pct(l.total) : ""),
        h("td", { class: "lineno" }, String(l.line)),
        h("td", { class: "code" }, h("code", null, l.source)),
      ),
    );
    const lineCode = code.get(l.line);
    if (lineCode) rows.push(lineCode);
    for (const f of byLine.get(l.line) ?? []) {
      rows.push(h("tr", { class: "inline-finding" }, h("td", { colspan: 4 }, findingCard(runId, f))));
    }
  }
  const unplaced = [...byLine.entries()].filter(([line]) => !file.lines.some((l) => l.line === line)).flatMap(([, fs]) => fs);
  return h(
    "section",
    { class: "source-file" },
    h("h2", null, file.file, h("span", { class: "subtitle" }, `self ${pct(file.self)}`)),
    file.found ? servedFrom(file) : message(`The source file is not available under the source roots (${embedded ? "make the report with `perfsleuth report --src DIR`" : "pass --src DIR to `perfsleuth serve`"}); showing the lines with samples.`, "warning"),
    unplaced.map((f) => findingCard(runId, f)),
    h("table", { class: "source" }, h("thead", null, h("tr", null, h("th", { class: "num" }, "self"), h("th", { class: "num" }, "total"), h("th", null, "line"), h("th", null, "source"))), h("tbody", null, rows)),
  );
}

function servedFrom(file: SourceFile): HTMLElement | null {
  if (!file.path) return null;
  return h("p", { class: "subtitle served-from" }, `served from ${file.path}`, file.root ? ` (source root ${file.root})` : "");
}

export async function renderSource(app: HTMLElement, runId: string, route: Route): Promise<void> {
  const fn = route.params.get("function") ?? "";
  const file = route.params.get("file") ?? "";
  const line = Number(route.params.get("line") ?? 0) || 0;
  const heat: Heat = route.params.get("heat") === "total" ? "total" : "self";
  if (!fn && !file) {
    app.append(h("h1", null, "Source"), message("Open a function from the Top table, the flame graph or a finding."));
    return;
  }
  const findings = await getJSON<Advice>(`/api/runs/${runId}/findings`).then((d) => d.findings, () => []);
  let files: SourceFile[];
  let asm: AsmDoc | null = null;
  let asmProblem: string | null = null;
  if (file) {
    files = [await getJSON<SourceFile>(`/api/runs/${runId}/source`, { file })];
  } else {
    files = (await getJSON<AnnotateDoc>(`/api/runs/${runId}/annotate`, { function: fn })).files;
    asm = await getJSON<AsmDoc>(`/api/runs/${runId}/disasm`, { function: fn }).catch((e: Error) => {
      asmProblem = e.message;
      return null;
    });
  }
  append(app, [
    h("h1", null, "Source", h("span", { class: "subtitle fn" }, fn || file)),
    fn ? h("p", null, functionLinks(runId, fn)) : null,
    file && fn ? h("p", null, h("a", { href: href(`/run/${runId}/source`, { function: fn }) }, `all lines of ${fn}`)) : null,
    files.length ? [heatChoice(runId, route.params, heat), asmNotice(asm, asmProblem), files.map((f) => fileView(runId, f, findings, line, heat, asm))] : message("No line information for this function (no debug info?)."),
  ]);
  app.querySelector("tr.target")?.scrollIntoView({ block: "center" });
}

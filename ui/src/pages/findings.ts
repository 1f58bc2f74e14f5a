import { getJSON } from "../api";
import { h, message } from "../dom";
import { replaceParams, type Route } from "../router";
import type { Advice } from "../types";
import { findingCard, noFindingsBlock } from "./common";

const CONFIDENCE_STEPS: [string, string][] = [["0", "any confidence"], ["0.5", "≥ 50%"], ["0.8", "≥ 80%"]];

export async function renderFindings(app: HTMLElement, runId: string, route: Route): Promise<void> {
  const params = route.params;
  const { findings, advised, hidden_findings: hidden } = await getJSON<Advice>(`/api/runs/${runId}/findings`);
  const kinds = [...new Set(findings.map((f) => f.kind))].sort();
  const kind = h("select", { "aria-label": "kind" }, h("option", { value: "" }, "all kinds"), kinds.map((k) => h("option", { value: k, selected: params.get("kind") === k }, k)));
  const confidence = h("select", { "aria-label": "confidence" }, CONFIDENCE_STEPS.map(([v, t]) => h("option", { value: v, selected: (params.get("confidence") ?? "0") === v }, t)));
  const list = h("div", { class: "findings" });
  const update = () => {
    const minimum = Number(confidence.value);
    const shown = findings.filter((f) => (!kind.value || f.kind === kind.value) && (f.confidence ?? 0) >= minimum);
    const none = findings.length ? message("No findings match these filters.") : noFindingsBlock(advised, runId);
    list.replaceChildren(...(shown.length ? shown.map((f) => findingCard(runId, f)) : [none]));
    for (const [key, el, empty] of [["kind", kind, ""], ["confidence", confidence, "0"]] as const) {
      if (el.value && el.value !== empty) params.set(key, el.value);
      else params.delete(key);
    }
    replaceParams(params);
  };
  kind.addEventListener("change", update);
  confidence.addEventListener("change", update);
  const left = hidden.length
    ? h("details", { class: "hidden-findings" }, h("summary", null, `${hidden.length} hidden`), hidden.map((f) => h("div", null, findingCard(runId, f, true), h("p", { class: "hidden-because" }, `hidden: ${f.hidden_because ?? ""}`))))
    : null;
  app.append(h("h1", null, "Findings", h("span", { class: "subtitle" }, `run ${runId} · ${findings.length} by gain (* measured)`)), h("p", { class: "toolbar" }, kind, " ", confidence), list, ...(left ? [left] : []));
  update();
}

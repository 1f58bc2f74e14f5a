import { getJSON } from "../api";
import { bar, h, location, message, pct, shortDso } from "../dom";
import { nameLink } from "../names";
import { href, replaceParams, type Route } from "../router";
import type { Choices, RunDetail, TopDoc, TopRow } from "../types";
import { type Column, recorded, sortRows, sortableTable, sourceLink, stateThreadSelects } from "./common";

export async function renderTop(app: HTMLElement, runId: string, route: Route): Promise<void> {
  const params = route.params;
  const { groupings } = await getJSON<Choices>("/api/choices");
  const by = groupings.includes(params.get("by") ?? "") ? params.get("by")! : "function";
  const filters = { state: params.getAll("state"), thread: params.getAll("thread") };
  const [run, doc] = await Promise.all([getJSON<RunDetail>(`/api/runs/${runId}`), getJSON<TopDoc>(`/api/runs/${runId}/top`, { by, ...filters })]);
  const narrowed = [...filters.state.map((s) => `state ${s}`), ...filters.thread.map((t) => `thread ${t}`)];
  let sortKey = params.get("sort") ?? "self";
  const filter = h("input", { type: "search", placeholder: "filter (substring)", value: params.get("q") ?? "", class: "filter", "aria-label": "filter" });
  const count = h("span", { class: "muted" });
  const holder = h("div");

  const name = (r: TopRow) => (by === "dso" ? r.dso : by === "file" ? r.file : r.function);
  const columns: Column<TopRow>[] = [
    { label: "self", key: "self", numeric: true, value: (r: TopRow) => r.self, cell: (r: TopRow) => h("span", { class: "cost" }, bar(r.self), pct(r.self)) },
    { label: "total", key: "total", numeric: true, value: (r: TopRow) => r.total, cell: (r: TopRow) => h("span", { class: "cost" }, bar(r.total, "bar total"), pct(r.total)) },
    // A count run: each event's exact self count, as cg_annotate's columns (Ir; D1mr, DLmr… with --cache-sim).
    ...(doc.events ?? []).map(
      (event): Column<TopRow> => ({ label: event, key: `count:${event}`, numeric: true, value: (r: TopRow) => r.counts?.[event] ?? 0, cell: (r: TopRow) => (r.counts?.[event] ?? 0).toLocaleString() }),
    ),
    {
      label: by === "dso" ? "DSO" : by,
      key: "name",
      value: name,
      cell: (r: TopRow) =>
        by === "function" || by === "line"
          ? nameLink(r.function, href(`/run/${runId}/callgraph`, { function: r.function }))
          : by === "file" && r.file
            ? h("a", { href: sourceLink(runId, { file: r.file }) }, r.file)
            : name(r),
    },
  ];
  if (by === "function" || by === "line") {
    columns.push(
      { label: "DSO", key: "dso", value: (r: TopRow) => r.dso, cell: (r: TopRow) => shortDso(r.dso) },
      { label: "file:line", key: "file", value: (r: TopRow) => location(r.file, r.line), cell: (r: TopRow) => (r.file ? h("a", { href: sourceLink(runId, r) }, location(r.file, r.line)) : "") },
    );
  }

  // Sorted once per column and searched as pre-lowercased text, so typing stays instant.
  let sorted = sortRows(columns, doc.rows, sortKey);
  let haystacks = sorted.map((r) => `${r.function} ${r.file} ${r.dso}`.toLowerCase());
  const update = () => {
    if (!doc.rows.length) return holder.replaceChildren(message(`Run ${runId} has no samples${narrowed.length ? ` with ${narrowed.join(" and ")}` : ""}.`, "warning"));
    const needle = filter.value.toLowerCase();
    const rows = needle ? sorted.filter((_, k) => haystacks[k].includes(needle)) : sorted;
    count.textContent = `${rows.length} of ${doc.rows.length} rows`;
    holder.replaceChildren(
      sortableTable(columns, rows, sortKey, (key) => {
        sortKey = key;
        sorted = sortRows(columns, doc.rows, sortKey);
        haystacks = sorted.map((r) => `${r.function} ${r.file} ${r.dso}`.toLowerCase());
        params.set("sort", key);
        replaceParams(params);
        update();
        holder.querySelector<HTMLButtonElement>("th[aria-sort] button")?.focus(); // the header clicked, rebuilt
      }),
    );
  };
  filter.addEventListener("input", () => {
    if (filter.value) params.set("q", filter.value);
    else params.delete("q");
    replaceParams(params);
    update();
  });
  app.append(
    h("h1", null, `Top ${by === "dso" ? "DSOs" : `${by}s`}`, h("span", { class: "subtitle" }, [`run ${runId}`, ...narrowed, recorded(doc.unit, doc.samples, doc.total)].join(" · "))),
    h(
      "p",
      { class: "toolbar" },
      "by ",
      groupings.map((g) => h("a", { href: href(`/run/${runId}/top`, { ...Object.fromEntries(params), by: g, sort: null, q: null }), class: g === by ? "chip active" : "chip" }, g)),
      " ",
      stateThreadSelects(run, params, "top"),
      filter,
      " ",
      count,
    ),
    holder,
  );
  update();
}

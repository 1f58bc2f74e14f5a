import "./style.css";
import { embedded, getJSON, rememberToken } from "./api";
import { h, message } from "./dom";
import { currentRoute, href, type Route } from "./router";
import { renderRuns } from "./pages/runs";
import { renderOverview } from "./pages/overview";
import { renderTop } from "./pages/top";
import { renderFlame } from "./pages/flamepage";
import { renderCallGraph } from "./pages/callgraph";
import { renderSource } from "./pages/source";
import { renderFindings } from "./pages/findings";
import { renderCompare } from "./pages/compare";
import { renderExperiments } from "./pages/experiments";
import { renderCache } from "./pages/cache";
import { hasThreadStates, renderThreads } from "./pages/threads";
import { renderFleet } from "./pages/fleet";
import type { RunDetail } from "./types";
import { shortName } from "./names";

declare global {
  interface Window {
    perfsleuthShortName: typeof shortName; // for tests/e2e, which compare it with the CLI's
  }
}

type Page = (app: HTMLElement, runId: string, route: Route) => Promise<void>;

const RUN_PAGES: Record<string, [string, Page]> = {
  "": ["Overview", renderOverview],
  top: ["Top", renderTop],
  flame: ["Flame graph", renderFlame],
  threads: ["Threads", renderThreads],
  callgraph: ["Call graph", renderCallGraph],
  source: ["Source", renderSource],
  findings: ["Findings", renderFindings],
  experiments: ["Experiments", renderExperiments],
  cache: ["Cache", renderCache],
};

/** Pages linked only for the runs that have their data. */
const OPTIONAL_PAGES: Record<string, (run: RunDetail) => boolean> = {
  cache: (run) => run.cache_functions > 0,
  threads: hasThreadStates,
};

function pageLink(id: string, page: string, current: string): HTMLElement {
  const cls = page === current ? "active" : undefined;
  return h("a", { href: href(`/run/${id}${page ? `/${page}` : ""}`), class: cls }, RUN_PAGES[page][0]);
}

function navigation(route: Route): HTMLElement[] {
  const links: HTMLElement[] = [h("a", { href: "#/" }, "Runs"), h("a", { href: "#/compare" }, "Compare"), h("a", { href: "#/experiments" }, "Experiments")];
  // A report file holds one run's pages: no fleet to ask, offline.
  if (!embedded) links.push(h("a", { href: "#/fleet", class: route.parts[0] === "fleet" ? "active" : undefined }, "Fleet"));
  if (route.parts[0] === "run" && route.parts[1]) {
    const id = route.parts[1];
    const current = route.parts[2] ?? "";
    links.push(h("span", { class: "nav-run" }, `run ${id}:`));
    for (const page of Object.keys(RUN_PAGES)) if (!OPTIONAL_PAGES[page]) links.push(pageLink(id, page, current));
  }
  return links;
}

async function addOptionalLinks(nav: HTMLElement, route: Route, serial: number): Promise<void> {
  const [first, id, current = ""] = route.parts;
  if (first !== "run" || !id) return;
  const run = await getJSON<RunDetail>(`/api/runs/${id}`).catch(() => null);
  if (serial !== navSerial) return;
  if (!run) navPath = null; // asked again at the next render
  else for (const [page, wanted] of Object.entries(OPTIONAL_PAGES)) if (wanted(run)) nav.append(pageLink(id, page, current));
}

let renderSerial = 0;
let navSerial = 0;
let navPath: string | null = null; // the page path the nav was built for: it depends on nothing else

/** The nav for `route`, rebuilt only when the page's path changed (a focus or search keeps its links and their layout). */
function showNavigation(route: Route): void {
  const path = route.parts.join("/");
  if (path === navPath) return;
  navPath = path;
  const nav = document.getElementById("nav")!;
  nav.replaceChildren(...navigation(route));
  void addOptionalLinks(nav, route, ++navSerial);
}

async function render(): Promise<void> {
  const serial = ++renderSerial;
  const route = currentRoute();
  showNavigation(route);
  const app = document.createElement("main");
  app.id = "app";
  document.getElementById("app")!.replaceWith(app);
  const loading = message("Loading…");
  app.append(loading);
  const [first, id, page = ""] = route.parts;
  try {
    if (!first) await renderRuns(app);
    else if (first === "compare") await renderCompare(app, route);
    else if (first === "experiments") await renderExperiments(app);
    else if (first === "fleet") await renderFleet(app, route);
    else if (first === "run" && id && RUN_PAGES[page]) await RUN_PAGES[page][1](app, id, route);
    else app.append(message(`No such page: ${location.hash}`, "error"));
    loading.remove();
  } catch (e) {
    if (serial === renderSerial) app.replaceChildren(message(e instanceof Error ? e.message : String(e), "error"));
  }
}

window.perfsleuthShortName = shortName;
rememberToken();
if (embedded && !location.hash) history.replaceState(null, "", embedded.start);
window.addEventListener("hashchange", () => void render());
void render();

// In-page measurements shared by bench/ui_bench.mjs and bench/ui_ab.mjs.

/**
 * Put focus / ignore / hide / sandwich QUERY in the URL and time until the new graph is
 * painted: after the page's flame-interactive mark (or the sandwich's graphs replaced).
 */
export async function filterLatency(page, query) {
  return page.evaluate(
    (q) =>
      new Promise((resolve) => {
        const marks = performance.getEntriesByName("flame-interactive").length;
        const sandwich = window.perfsleuthSandwich;
        const start = performance.now();
        location.hash = `${location.hash.split("?")[0]}?${q}`;
        const poll = () => {
          const drawn = performance.getEntriesByName("flame-interactive").length > marks || window.perfsleuthSandwich !== sandwich;
          if (drawn) requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now() - start)));
          else setTimeout(poll, 1);
        };
        poll();
      }),
    query,
  );
}

/** The names of the heaviest frame at each of DEPTHS (sandwich targets a user would pick). */
export async function heavyNames(page, depths) {
  return page.evaluate((wanted) => {
    const { data } = window.perfsleuthFlame.graph;
    return wanted.map((d) => {
      let best = -1;
      for (let i = 1; i < data.nodes; i++) if (data.depth[i] === d && (best < 0 || data.columns.total[i] > data.columns.total[best])) best = i;
      return data.names[data.name[best]];
    });
  }, depths);
}

export function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
  return { n: values.length, median: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1] };
}

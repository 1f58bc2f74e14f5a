// Hash routing: every view has a URL like #/run/3/flame?q=malloc.

export interface Route {
  parts: string[];
  params: URLSearchParams;
}

export function currentRoute(): Route {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = hash.split("?", 2);
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query) };
}

export function href(path: string, params: Record<string, string | number | undefined | null> = {}): string {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") query.set(k, String(v));
  const q = query.toString();
  return `#${path}${q ? `?${q}` : ""}`;
}

/** Change one view's parameters in the URL without re-rendering the page. */
export function replaceParams(params: URLSearchParams, push = false): void {
  const route = currentRoute();
  const q = params.toString();
  const url = `#/${route.parts.map(encodeURIComponent).join("/")}${q ? `?${q}` : ""}`;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}

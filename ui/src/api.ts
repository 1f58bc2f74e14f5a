// Data comes from the server's /api, or — in the single-file report — from the
// documents embedded in the page under the same request keys.

export type Params = Record<string, string | string[] | undefined>;

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

interface Embedded {
  docs: Record<string, unknown>;
  blobs: Record<string, string>; // gzipped, in base64
  start: string;
}

const TOKEN_KEY = "perfsleuth-token";

function readEmbedded(): Embedded | null {
  const el = document.getElementById("perfsleuth-data");
  return el?.textContent ? (JSON.parse(el.textContent) as Embedded) : null;
}

export const embedded = readEmbedded();

/** Keeps the token serve printed for this tab, and takes it out of the address bar. */
export function rememberToken(): void {
  const token = new URLSearchParams(location.search).get("token");
  if (!token) return;
  sessionStorage.setItem(TOKEN_KEY, token);
  history.replaceState(null, "", location.pathname + location.hash);
}

function clean(params: Params): [string, string[]][] {
  return Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== "" && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => [k, Array.isArray(v) ? v : [v as string]] as [string, string[]])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** The key the report embeds a response under (server/bundle.py request_key). */
export function requestKey(path: string, params: Params): string {
  const query = clean(params).map(([k, v]) => `${k}=${v.join(",")}`).join("&");
  return query ? `${path}?${query}` : path;
}

async function request(path: string, params: Params, method = "GET"): Promise<Response> {
  const query = new URLSearchParams();
  for (const [k, values] of clean(params)) for (const v of values) query.append(k, v);
  const url = query.toString() ? `${path}?${query}` : path;
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  if (method === "POST") headers["X-Perfsleuth"] = "1"; // the server's guard against other sites' pages (CSRF)
  const response = await fetch(url, { method, headers }).catch(() => {
    throw new ApiError(0, "perfsleuth serve is not answering: it was stopped or cannot be reached. Start it again (`perfsleuth serve`) and reload this page.");
  });
  if (!response.ok) {
    let text = `${response.status} ${response.statusText}`;
    try {
      text = ((await response.json()) as { error: string }).error;
    } catch {
      /* not JSON: keep the status line */
    }
    throw new ApiError(response.status, text);
  }
  return response;
}

function missing(path: string): ApiError {
  return new ApiError(
    404,
    `${path} is not included in this report; open the run with \`perfsleuth serve\` to explore it`,
  );
}

const jsonCache = new Map<string, Promise<unknown>>();

export function getJSON<T>(path: string, params: Params = {}): Promise<T> {
  const key = requestKey(path, params);
  if (embedded) {
    return key in embedded.docs ? Promise.resolve(embedded.docs[key] as T) : Promise.reject(missing(path));
  }
  let pending = jsonCache.get(key);
  if (!pending) {
    pending = request(path, params).then((r) => r.json());
    pending.catch(() => jsonCache.delete(key));
    jsonCache.set(key, pending);
  }
  return pending as Promise<T>;
}

/** A POST (the one that changes the store: advising a run); the answers kept so far are dropped. */
export async function postJSON<T>(path: string): Promise<T> {
  const response = await request(path, {}, "POST");
  jsonCache.clear();
  return (await response.json()) as T;
}

/** A GET answered fresh each time (a state that changes while the page waits). */
export async function pollJSON<T>(path: string): Promise<T> {
  return (await (await request(path, {})).json()) as T;
}

export async function getBinary(path: string, params: Params = {}): Promise<ArrayBuffer> {
  if (embedded) {
    const blob = embedded.blobs[requestKey(path, params)];
    if (blob === undefined) throw missing(path);
    const text = atob(blob);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const unzipped = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(unzipped).arrayBuffer();
  }
  return (await request(path, params)).arrayBuffer();
}

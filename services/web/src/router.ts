// Hash routing: #/page/arg?query (every page takes ?at=POSITION).
import { useEffect, useState } from "preact/hooks";

export interface Route {
  readonly page: string;
  /** The rest of the path, decoded: a task key or a run id. */
  readonly arg: string;
  readonly q: URLSearchParams;
}

export function parseHash(hash: string = location.hash): Route {
  const raw = hash.replace(/^#/, "") || "/grid";
  const [path = "", query = ""] = raw.split("?");
  const parts = path.split("/").filter(Boolean);
  return {
    page: parts[0] ?? "grid",
    arg: parts.slice(1).map(decodeURIComponent).join("/"),
    q: new URLSearchParams(query),
  };
}

/** Query values of a link: empty ones are left out. */
export type Query = Record<string, string | number | null | undefined>;

export const href = (page: string, arg?: string, q: Query = {}): string => {
  const qs = new URLSearchParams(
    Object.entries(q)
      .filter(([, v]) => v !== undefined && v !== null && v !== "")
      .map(([k, v]) => [k, String(v)]),
  );
  const s = qs.toString();
  return `#/${page}${arg ? `/${encodeURIComponent(arg)}` : ""}${s ? `?${s}` : ""}`;
};

export const go = (page: string, arg?: string, q?: Query): void => {
  location.hash = href(page, arg, q);
};

/** The current route, again on every change of the hash. */
export function useRoute(): Route {
  const [r, setR] = useState(() => parseHash());
  useEffect(() => {
    const on = () => setR(parseHash());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return r;
}

// The UI's only way to the scheduler: the HTTP API, with the token kept in sessionStorage. Every
// call names an operation of the API's OpenAPI document, and answers with its generated type.
import type { paths } from "./generated/api";

const KEY = "chronolog.token";

export const getToken = () => sessionStorage.getItem(KEY);
export const setToken = (t: string) => sessionStorage.setItem(KEY, t);
export const clearToken = () => sessionStorage.removeItem(KEY);

export class ApiError extends Error {
  readonly status: number;

  constructor(status: number, detail: string) {
    super(detail);
    this.status = status;
  }
}

/** An answer: its body, and the position it is as of (`Chronolog-As-Of`, with `?at=`). */
export interface Reply<T> {
  readonly value: T;
  readonly asOf: string | null;
}

type Method = "get" | "post";
/** The document's paths that have an operation for `M`. */
type PathOf<M extends Method> = {
  [P in keyof paths]: paths[P][M] extends { responses: object } ? P : never;
}[keyof paths];
type Operation<P extends keyof paths, M extends Method> = paths[P][M];

/** The JSON body of an operation's 200 answer. */
export type Answer<O> = O extends { responses: { 200: { content: { "application/json": infer T } } } }
  ? T
  : never;
/** Path parameters (required when the path has some) and query of an operation. */
type Params<O> = (O extends { parameters: { path: infer A extends object } }
  ? { path: A }
  : { path?: never }) & {
  query?: O extends { parameters: { query?: infer Q } } ? Q : never;
};
type Body<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

/** The path with its `{parameters}` filled in (URL-encoded), and its query. */
function url(template: string, params: { path?: object; query?: object }): string {
  const values = (params.path ?? {}) as Record<string, unknown>;
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(values[name])));
  const entries = Object.entries(params.query ?? {}).filter(([, v]) => v !== undefined);
  const query = new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString();
  return query ? `${path}?${query}` : path;
}

const withAt = (path: string, at: string | null | undefined) =>
  at === undefined || at === null || at === "" ? path : `${path}${path.includes("?") ? "&" : "?"}at=${at}`;

async function call(method: string, path: string, body?: unknown): Promise<Reply<unknown>> {
  const headers: Record<string, string> = { authorization: `Bearer ${getToken()}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  const value = /json/.test(type) && text ? JSON.parse(text) : text;
  if (!res.ok) throw new ApiError(res.status, value?.detail ?? value?.title ?? `${res.status}`);
  return { value, asOf: res.headers.get("chronolog-as-of") };
}

type GetOptions<P extends PathOf<"get">> = Params<Operation<P, "get">>;
type PostOptions<P extends PathOf<"post">> = Params<Operation<P, "post">> & {
  body?: Body<Operation<P, "post">>;
};
/** The options are required where the path has parameters to fill in. */
type Required<O, T> = O extends { parameters: { path: object } } ? [T] : [T?];

/** A GET of the document's `path`; with `at`, the state as of that log position. */
export function get<P extends PathOf<"get">>(
  path: P,
  ...args: [...Required<Operation<P, "get">, GetOptions<P>>, (string | null)?]
): Promise<Reply<Answer<Operation<P, "get">>>> {
  const [params = {}, at] = args as unknown as [{ path?: object; query?: object }?, (string | null)?];
  return call("GET", withAt(url(path, params), at)) as Promise<Reply<Answer<Operation<P, "get">>>>;
}

/** A POST of the document's `path`, with a JSON body when one is given. */
export function post<P extends PathOf<"post">>(
  path: P,
  ...args: Required<Operation<P, "post">, PostOptions<P>>
): Promise<Reply<Answer<Operation<P, "post">>>> {
  const [params = {}] = args as [{ path?: object; query?: object; body?: unknown }?];
  return call("POST", url(path, params), params.body) as Promise<Reply<Answer<Operation<P, "post">>>>;
}

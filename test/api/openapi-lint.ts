/**
 * What a generated client needs of the OpenAPI document beyond its being valid OpenAPI: a name
 * for every operation, the token asked for wherever one is needed, a server, and every path
 * parameter declared. Returns the problems found, one line each (none: the document is fine).
 */

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
}

interface Operation {
  readonly operationId?: string;
  readonly security?: ReadonlyArray<Record<string, readonly string[]>>;
  readonly parameters?: readonly Parameter[];
  readonly responses?: Record<string, unknown>;
}

export interface Document {
  readonly servers?: ReadonlyArray<{ url?: string }>;
  readonly security?: unknown;
  readonly paths: Record<string, Record<string, unknown> & { parameters?: readonly Parameter[] }>;
  readonly components?: { securitySchemes?: Record<string, unknown> };
}

/** Each operation of the document, with its method and path. */
export function operationsOf(doc: Document): Array<{ method: string; path: string; op: Operation }> {
  const out: Array<{ method: string; path: string; op: Operation }> = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const method of METHODS) if (item[method]) out.push({ method, path, op: item[method] as Operation });
  return out;
}

export function lintOpenApi(doc: Document): string[] {
  const problems: string[] = [];
  if (!doc.servers?.length || doc.servers.some((s) => !s.url))
    problems.push("no servers, or one without a url");
  if (doc.security !== undefined)
    problems.push("a document-wide security: each operation says whether it needs a token");
  const schemes = doc.components?.securitySchemes ?? {};
  if (Object.keys(schemes).length === 0) problems.push("no security scheme");
  const ids = new Map<string, string>();
  for (const { method, path, op } of operationsOf(doc)) {
    const at = `${method.toUpperCase()} ${path}`;
    const id = op.operationId;
    if (!id) problems.push(`${at}: no operationId`);
    else if (!/^[a-z][a-zA-Z0-9]*$/.test(id)) problems.push(`${at}: operationId ${id} is not camelCase`);
    else if (ids.has(id)) problems.push(`${at}: operationId ${id} is also ${ids.get(id)}'s`);
    else ids.set(id, at);
    // An operation that can answer 401 needs a token, and says so; one that never does needs none.
    const needsToken = Object.keys(op.responses ?? {}).includes("401");
    const security = op.security ?? [];
    if (needsToken && security.length === 0) problems.push(`${at}: answers 401 but has no security`);
    if (!needsToken && security.length > 0) problems.push(`${at}: has security but never answers 401`);
    for (const requirement of security)
      for (const name of Object.keys(requirement))
        if (!(name in schemes)) problems.push(`${at}: security names ${name}, which is not a scheme`);
    const declared = [...(doc.paths[path]?.parameters ?? []), ...(op.parameters ?? [])].filter(
      (p) => p.in === "path",
    );
    const inTemplate = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
    for (const name of inTemplate) {
      const p = declared.find((x) => x.name === name);
      if (!p) problems.push(`${at}: path parameter ${name} is not declared`);
      else if (p.required !== true) problems.push(`${at}: path parameter ${name} is not required`);
    }
    for (const p of declared)
      if (!inTemplate.includes(p.name)) problems.push(`${at}: path parameter ${p.name} is not in the path`);
  }
  return problems;
}

import type { OperatorSpec } from "@chronolog/core";
import {
  type FilterImplOptions,
  type FS,
  Liquid,
  LiquidError,
  Tag,
  type TagToken,
  TokenizationError,
  type TopLevelToken,
  UndefinedVariableError,
} from "liquidjs";
import {
  type RenderContext,
  renderWatch,
  SECRET_PLACEHOLDER,
  SecretRef,
  type TemplateVariables,
  templateVariables,
} from "./context.js";
import { envNameOf } from "./environment.js";
import { TemplateError, type TemplateProblem } from "./errors.js";
import { misplacedMessage, misplacedPlaceholders } from "./shell-placeholders.js";

/**
 * Payload templates: Liquid (liquidjs) with Jinja-style `{{ expr | filter }}` output tags and
 * `{% if %}`/`{% for %}` tags. Liquid, unlike Jinja/nunjucks, has no function calls and no access
 * to prototypes, so a template written by another team can read only the context it is given.
 *
 * The engine is locked down:
 * - `strictVariables` (a typo is an error, not an empty string; `| default:` and `{% if %}` still
 *   test for an optional value) and `strictFilters`; `ownPropertyOnly` (no `constructor`,
 *   `__proto__`, `toString`...);
 * - no file system: `include`, `render` and `layout` are refused at parse time, and the `fs`
 *   given to the engine refuses every read;
 * - bounded: template length (`parseLimit`), render time (`renderLimit`) and allocations
 *   (`memoryLimit`) per field;
 * - deterministic: the date filters refuse `"now"`/`"today"` (render from `logical_date`), and
 *   format in the task's time zone, never the host's.
 *
 * Objects and arrays render as JSON, `null` as an empty string.
 *
 * Safe by default: in the two fields where an interpolated value could change what runs, the
 * engine escapes every output itself (liquidjs `outputEscape`, appended to every `{{ }}`,
 * `{% echo %}` and `{% cycle %}` output whose last filter is not a raw one):
 * - a shell operator's `command` (and an alert sink's): every value is one shell word,
 *   single-quoted (`shellQuote`); `| shell_quote` as the last filter quotes once, not twice.
 *   That holds only where the shell reads plain words, so a command whose placeholder or tag
 *   stands inside quotes, a here-document, backquotes, `$(...)`, a comment (see `scanShell`) is
 *   refused before anything renders, at declare as at run time: its values are in the
 *   environment instead (`"$CHRONOLOG_PARAM_NOTE"`, see `taskEnvironment`);
 * - an http operator's `url`: every value is URL-encoded (`encodeURIComponent`); `| url_encode`
 *   as the last filter encodes once, not twice.
 * `| raw` as the last filter writes a value as is, for values the declaration fixes (`config`,
 * the builtins). It is refused in a template of those fields that reads `params` at all (a
 * param's value can reach an output through `assign`, `capture` or a filter argument, so the
 * rule holds for the whole template): a value given to `trigger --param` is always escaped.
 * Other fields (`cwd`, `env` values, http headers and body, node args, the cache key) are
 * rendered as they are: they are data handed to the program, not code a shell parses.
 */

export interface RenderLimits {
  /** Longest template, in characters, per field. Default 1,000,000. */
  readonly parseLimit?: number;
  /**
   * Longest render, in milliseconds: per template for `renderTemplate`, for all the fields
   * together for `renderOperator` (rendering is synchronous, so this bounds how long a template
   * can hold the caller's event loop). Default 200.
   */
  readonly renderLimit?: number;
  /** Allocation budget per field (roughly characters and array items). Default 16,000,000. */
  readonly memoryLimit?: number;
}

const DEFAULT_LIMITS = { parseLimit: 1_000_000, renderLimit: 200, memoryLimit: 16_000_000 } as const;

/**
 * POSIX shell quoting: wraps the text in single quotes, each `'` becoming `'\''`. Inside single
 * quotes the shell interprets nothing (`$`, backquotes, `\`, newlines), so the result is one word
 * whose value is exactly the input. A NUL byte cannot be passed to a process and is refused.
 */
export function shellQuote(value: unknown): string {
  const text = outputText(value);
  if (text.includes("\u0000")) throw new Error("shell_quote: the value contains a NUL byte");
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** How a value is written into the output: objects and arrays as JSON, null as nothing. */
function outputText(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (value instanceof SecretRef) {
    if (renderWatch.current) renderWatch.current.secretsOut = (renderWatch.current.secretsOut ?? 0) + 1;
    return value.placeholder;
  }
  if (typeof value === "object") return JSON.stringify(value) ?? "";
  return String(value);
}

const refuse = (): never => {
  throw new Error("templates cannot read files");
};

/** A file system that has no files. */
const NO_FILES: FS = {
  exists: async () => false,
  existsSync: () => false,
  readFile: async () => refuse(),
  readFileSync: () => refuse(),
  resolve: (_dir, file) => file,
  contains: async () => false,
  containsSync: () => false,
  sep: "/",
  dirname: () => "/",
};

class ForbiddenTag extends Tag {
  constructor(token: TagToken, remainTokens: TopLevelToken[], liquid: Liquid) {
    super(token, remainTokens, liquid);
    throw new Error(`the {% ${token.name} %} tag is not allowed: templates cannot read files`);
  }
  *render(): Generator<unknown, void, unknown> {}
}

type FilterHandler = Extract<FilterImplOptions, (...args: never[]) => unknown>;
type FilterThis = ThisParameterType<FilterHandler>;

const DATE_FILTERS = ["date", "date_to_xmlschema", "date_to_rfc822", "date_to_string", "date_to_long_string"];

/** How a field's outputs are escaped: not at all, as shell words, or URL-encoded. */
export type OutputEscaping = "none" | "shell" | "url";

const urlEncode = (value: unknown): string => encodeURIComponent(outputText(value));

/** Writes a value as is (the last filter of an output): noted, so params and raw never mix. */
const raw = (value: unknown): unknown => {
  if (renderWatch.current) renderWatch.current.rawUsed = true;
  return value;
};

const RAW_FILTER = /\|\s*raw\b/;
const READS_PARAMS = /\bparams\b/;
const RAW_WITH_PARAMS =
  "the raw filter is not allowed in a template that reads params: a param's value is always escaped";

const engines = new Map<string, Liquid>();

function engine(timezone: string, parseLimit: number, escaping: OutputEscaping): Liquid {
  const cacheKey = `${timezone}\u0000${parseLimit}\u0000${escaping}`;
  const cached = engines.get(cacheKey);
  if (cached) return cached;
  const liquid = new Liquid({
    strictVariables: true,
    strictFilters: true,
    ownPropertyOnly: true,
    lenientIf: true,
    fs: NO_FILES,
    root: [],
    partials: [],
    layouts: [],
    relativeReference: false,
    dynamicPartials: false,
    cache: false,
    timezoneOffset: timezone,
    outputEscape: escaping === "shell" ? shellQuote : escaping === "url" ? urlEncode : outputText,
    parseLimit,
  });
  for (const name of ["include", "render", "layout"]) liquid.registerTag(name, ForbiddenTag);
  liquid.registerFilter("raw", { raw: true, handler: raw });
  // Already escaped for its field: as the last filter, the engine does not escape it again.
  liquid.registerFilter("shell_quote", { raw: escaping === "shell", handler: shellQuote });
  const urlEncodeFilter = liquid.filters.url_encode;
  if (urlEncodeFilter) {
    const handler = typeof urlEncodeFilter === "function" ? urlEncodeFilter : urlEncodeFilter.handler;
    liquid.registerFilter("url_encode", { raw: escaping === "url", handler });
  }
  for (const name of DATE_FILTERS) {
    const original = liquid.filters[name];
    if (!original) continue;
    const handler: FilterHandler = typeof original === "function" ? original : original.handler;
    liquid.registerFilter(name, function (this: FilterThis, value: unknown, ...args: unknown[]) {
      if (typeof value === "string" && /^\s*(now|today)\s*$/i.test(value)) {
        throw new Error(
          `${name}: "${value.trim()}" is not available: a payload renders from its logical date (use logical_date)`,
        );
      }
      return handler.call(this, value, ...args);
    });
  }
  if (engines.size >= 64) engines.clear();
  engines.set(cacheKey, liquid);
  return liquid;
}

function classify(error: unknown): {
  problem: TemplateProblem;
  detail: string;
  line?: number;
  column?: number;
} {
  const message = error instanceof Error ? error.message : String(error);
  const located = /^([\s\S]*?), line:(\d+), col:(\d+)$/.exec(message.split("\n")[0] ?? "");
  const detail = located ? (located[1] as string) : message;
  const where = located ? { line: Number(located[2]), column: Number(located[3]) } : {};
  let problem: TemplateProblem = "render";
  if (error instanceof UndefinedVariableError) problem = "undefined_variable";
  else if (/^undefined filter: /.test(detail)) problem = "unknown_filter";
  else if (/limit exceeded/.test(detail)) problem = "limit";
  else if (
    error instanceof TokenizationError ||
    (error instanceof LiquidError && error.name === "ParseError")
  ) {
    problem = "syntax";
  }
  const readable =
    problem === "undefined_variable"
      ? detail.replace(/^undefined variable: (.*)$/, 'undefined variable "$1"')
      : problem === "unknown_filter"
        ? detail.replace(/^undefined filter: (.*)$/, 'unknown filter "$1"')
        : detail;
  return { problem, detail: readable, ...where };
}

/**
 * Renders one template with already-built variables. Throws `TemplateError` naming `field`.
 * Text with no `{{` or `{%` is returned as is.
 */
export function renderTemplateWith(
  template: string,
  variables: TemplateVariables,
  field: string,
  options: {
    timezone?: string;
    limits?: RenderLimits /** `performance.now()` deadline */;
    deadline?: number;
    /** How outputs are escaped (default `none`): see the module's comment. */
    escaping?: OutputEscaping;
    /**
     * With `shell` escaping: the environment variable that holds what an output reads (for the
     * fix a refused placeholder's message gives). Default: a task's (`envNameOf`).
     */
    envName?: (expression: string) => string | undefined;
  } = {},
): string {
  if (!template.includes("{{") && !template.includes("{%")) return template;
  const escaping = options.escaping ?? "none";
  if (variables.secrets === undefined && READS_SECRETS.test(template)) {
    throw new TemplateError(field, "render", secretsRefused(field, template));
  }
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const liquid = engine(options.timezone ?? "UTC", limits.parseLimit, escaping);
  if (escaping === "shell") refuseMisplaced(template, liquid, field, options.envName ?? envNameOf);
  if (escaping !== "none" && RAW_FILTER.test(template) && READS_PARAMS.test(template)) {
    throw new TemplateError(field, "render", RAW_WITH_PARAMS);
  }
  const renderLimit =
    options.deadline === undefined ? limits.renderLimit : Math.max(1, options.deadline - performance.now());
  const outer = renderWatch.current;
  const watch: { paramsRead: boolean; rawUsed: boolean; secretsOut?: number; secretMisused?: boolean } = {
    paramsRead: false,
    rawUsed: false,
  };
  renderWatch.current = watch;
  let out: string;
  try {
    out = String(
      liquid.parseAndRenderSync(template, variables as unknown as Record<string, unknown>, {
        renderLimit,
        memoryLimit: limits.memoryLimit,
      }),
    );
  } catch (error) {
    const c = classify(error);
    throw new TemplateError(field, c.problem, c.detail, c.line, c.column);
  } finally {
    renderWatch.current = outer;
  }
  // The text test above misses a param reached without the word (it cannot be, today): this
  // is the guarantee.
  if (escaping !== "none" && watch.rawUsed && watch.paramsRead) {
    throw new TemplateError(field, "render", RAW_WITH_PARAMS);
  }
  // Every placeholder the worker will fill in must be one a secret reference wrote: not a
  // param's value (which would read a secret it was not given), nor a filtered reference.
  if (variables.secrets !== undefined) {
    const placeholders = out.match(SECRET_PLACEHOLDER)?.length ?? 0;
    if (watch.secretMisused || placeholders !== (watch.secretsOut ?? 0)) {
      throw new TemplateError(
        field,
        "render",
        "a secret is written as {{ secrets.NAME }} with no filter, and no other value may look like one",
      );
    }
  }
  return out;
}

/** `secrets.NAME` or `secrets[...]` in a tag (not `config.secrets`, a key of some value). */
const READS_SECRETS = /(\{\{|\{%)[^}]*?(?<![.\w"'-])secrets\s*[.[]/;

/** Why a field may not read `secrets`, with what to do instead. */
function secretsRefused(field: string, template: string): string {
  const name = /\bsecrets\.([A-Za-z_][A-Za-z0-9_]*)/.exec(template)?.[1];
  if (field === "operator.command") {
    return `secrets cannot be written into a shell command: the task finds each in its environment (use "$${name ?? "NAME"}")`;
  }
  return `secrets may be written only into an http operator's headers and body, not ${field}: shell and node tasks find each in their environment${name ? ` ($${name})` : ""}`;
}

/**
 * What the scan found in each (short) command seen lately: a task's command is rendered every
 * interval, the same text each time.
 */
const misplacedCache = new Map<string, ReturnType<typeof misplacedPlaceholders>>();

/**
 * Refuses a shell command whose placeholder or tag does not stand in plain words (the first,
 * at its line and column). A template too long or that does not tokenize is left to the render,
 * which says what is wrong with it.
 */
function refuseMisplaced(
  template: string,
  liquid: Liquid,
  field: string,
  envName: (expression: string) => string | undefined,
): void {
  if (template.length > (liquid.options.parseLimit ?? Number.POSITIVE_INFINITY)) return;
  let found = misplacedCache.get(template);
  if (!found) {
    try {
      found = misplacedPlaceholders(template, liquid);
    } catch {
      return;
    }
    if (template.length <= 10_000) {
      if (misplacedCache.size >= 1024) misplacedCache.clear();
      misplacedCache.set(template, found);
    }
  }
  const first = found[0];
  if (!first) return;
  throw new TemplateError(
    field,
    "quoting",
    misplacedMessage(first, envName, found.length - 1),
    first.line,
    first.column,
  );
}

/** Renders one template against a render context (see `renderOperator`). */
export function renderTemplate(
  template: string,
  context: RenderContext,
  field = "template",
  limits?: RenderLimits,
): string {
  return renderTemplateWith(template, templateVariables(context), field, {
    timezone: context.timezone ?? "UTC",
    ...(limits ? { limits } : {}),
  });
}

/**
 * Renders every templated string of an operator: shell `command` (every output shell-quoted),
 * `cwd` and `env` values; http `url` (every output URL-encoded), `headers` values and `body`; node `args` strings at any depth (keys are not rendered).
 * Other fields (`type`, `method`, `module`, `export`, timeouts) are data, not templates. Returns
 * a new operator; throws `TemplateError` naming the first field that fails
 * (`operator.command`, `operator.headers.Authorization`, `operator.args.tables[1]`).
 */
export function renderOperator(
  operator: OperatorSpec,
  context: RenderContext,
  limits?: RenderLimits,
): OperatorSpec {
  // Nothing to render: the variables (zoned dates among them) would be made for nothing, once
  // per task at declare and once per dispatch.
  if (operator.type === "noop" || operator.type === "external") return { ...operator };
  const variables = templateVariables(context);
  const deadline = performance.now() + (limits?.renderLimit ?? DEFAULT_LIMITS.renderLimit);
  const options = { timezone: context.timezone ?? "UTC", deadline, ...(limits ? { limits } : {}) };
  const render = (text: string, field: string, escaping: OutputEscaping = "none") =>
    renderTemplateWith(text, variables, field, { ...options, escaping });
  const renderValues = (record: Readonly<Record<string, string>>, field: string) =>
    Object.fromEntries(Object.entries(record).map(([k, v]) => [k, render(v, `${field}.${k}`)]));

  switch (operator.type) {
    case "shell":
      return {
        ...operator,
        command: render(operator.command, "operator.command", "shell"),
        ...(operator.cwd !== undefined ? { cwd: render(operator.cwd, "operator.cwd") } : {}),
        env: renderValues(operator.env, "operator.env"),
      };
    case "http": {
      // Headers and body, and only they, may write the task's secrets (as placeholders).
      const secrets = Object.fromEntries((context.secrets ?? []).map((n) => [n, new SecretRef(n)]));
      const withSecrets = { ...variables, secrets };
      const renderSecret = (text: string, field: string) =>
        renderTemplateWith(text, withSecrets, field, { ...options, escaping: "none" });
      return {
        ...operator,
        url: render(operator.url, "operator.url", "url"),
        headers: Object.fromEntries(
          Object.entries(operator.headers).map(([k, v]) => [k, renderSecret(v, `operator.headers.${k}`)]),
        ),
        ...(operator.body !== undefined ? { body: renderSecret(operator.body, "operator.body") } : {}),
      };
    }
    case "node":
    case "python":
      return {
        ...operator,
        args: renderDeep(operator.args, "operator.args", render) as Record<string, unknown>,
      };
  }
}

function renderDeep(value: unknown, field: string, render: (text: string, field: string) => string): unknown {
  if (typeof value === "string") return render(value, field);
  if (Array.isArray(value)) return value.map((v, i) => renderDeep(v, `${field}[${i}]`, render));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [
        k,
        renderDeep(v, `${field}.${k}`, render),
      ]),
    );
  }
  return value;
}

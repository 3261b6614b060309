import { Lexer, parseDocument } from "yaml";
import { ValidationError } from "../errors.js";
import { NOT_PLAIN, readPlainYaml } from "./plain-yaml.js";

export type DeclarationFormat = "yaml" | "json";

/** One declaration file, parsed but not yet validated. */
export interface DeclarationSource {
  readonly filename: string;
  readonly document: unknown;
}

export interface ParsedDeclaration extends DeclarationSource {
  readonly format: DeclarationFormat;
}

/**
 * A declaration file that is not well-formed YAML or JSON. It is a `ValidationError` (nothing was
 * written) whose subject is the file and whose single issue's path is `line L, column C`.
 */
export class DeclarationSyntaxError extends ValidationError {
  constructor(
    readonly filename: string,
    readonly format: DeclarationFormat,
    readonly line: number,
    readonly column: number,
    readonly problem: string,
    /** The offending line with a caret under the column, for terminals. */
    readonly excerpt: string,
  ) {
    super(filename, [{ path: `line ${line}, column ${column}`, message: problem }]);
    this.name = "DeclarationSyntaxError";
  }
}

/** `.json` files are JSON; everything else (`.yaml`, `.yml`, stdin) is YAML. */
export function declarationFormatOf(filename: string): DeclarationFormat {
  return /\.json$/i.test(filename) ? "json" : "yaml";
}

/**
 * Parses the text of one declaration file into its raw document (validate it with
 * `validateDeclarations`). Throws `DeclarationSyntaxError` naming the file, line and column when
 * the text is not well-formed. Duplicate keys in a mapping are an error in both formats.
 */
export function parseDeclarationText(
  text: string,
  options: { filename: string; format?: DeclarationFormat },
): ParsedDeclaration {
  const { filename } = options;
  const format = options.format ?? declarationFormatOf(filename);
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  // Before either parser sees it: a document nested thousands deep costs them seconds.
  const deep = format === "json" ? jsonTooDeep(source) : yamlTooDeep(source);
  if (deep >= 0) fail(source, filename, format, deep, TOO_DEEP);
  const document = format === "json" ? parseJson(source, filename) : parseYaml(source, filename);
  const odd = oddValue(document);
  if (odd)
    fail(
      source,
      filename,
      format,
      offsetOf(source, odd.path),
      odd.problem === TOO_DEEP ? TOO_DEEP : `${pathText(odd.path)}: ${odd.problem}`,
    );
  return { filename, format, document };
}

/**
 * The first value in a parsed document that JSON cannot hold (the log records a declaration as
 * JSON, and compares it as such): a number not finite (`.nan`, `.inf`, `1e400`), or a tagged
 * value read as something else than a string, number, boolean, null, list or mapping
 * (`!!binary`, `!!set`, `!!omap`, `!!timestamp`). Stored, each would be another value (`null`,
 * `{}`), and the next declaration of the same file would record it as changed. A `-0` is made
 * `0` on the way.
 */
function oddValue(value: unknown, depth = 0): { path: Array<string | number>; problem: string } | null {
  if (typeof value === "number") {
    return Number.isFinite(value)
      ? null
      : {
          path: [],
          problem: `${value} is not a number a declaration can hold (it is recorded as JSON): write a finite number, or a string`,
        };
  }
  if (typeof value !== "object" || value === null) return null;
  // Nesting the check before parsing did not see (it reads lines, not the whole grammar).
  if (depth >= MAX_NESTING) return { path: [], problem: TOO_DEEP };
  // (The path is made on the way back from a value found, not on the way down to each.)
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (Object.is(value[i], -0)) value[i] = 0;
      const odd = oddValue(value[i], depth + 1);
      if (odd) {
        odd.path.unshift(i);
        return odd;
      }
    }
    return null;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const what =
      value instanceof Date
        ? "a timestamp"
        : value instanceof Uint8Array
          ? "binary data"
          : value instanceof Set
            ? "a set"
            : value instanceof Map
              ? "an ordered map"
              : "a tagged value";
    return {
      path: [],
      problem: `${what} (a YAML tag) is not a value a declaration holds: write it as a string, a list or a mapping`,
    };
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    if (Object.is(record[key], -0)) record[key] = 0;
    const odd = oddValue(record[key], depth + 1);
    if (odd) {
      odd.path.unshift(key);
      return odd;
    }
  }
  return null;
}

const pathText = (path: ReadonlyArray<string | number>): string =>
  path.reduce<string>((out, p) => (typeof p === "number" ? `${out}[${p}]` : out ? `${out}.${p}` : p), "") ||
  "the document";

/** Where the value at `path` starts in the text (read again as a YAML document: JSON is YAML too), or 0. */
function offsetOf(text: string, path: ReadonlyArray<string | number>): number {
  const node = parseDocument(text, { logLevel: "silent" }).getIn(path, true) as
    | { range?: [number, number, number] }
    | undefined;
  return node?.range?.[0] ?? 0;
}

function fail(
  text: string,
  filename: string,
  format: DeclarationFormat,
  offset: number,
  problem: string,
): never {
  // A parser that ran out of stack met nesting the check before parsing did not see.
  if (problem.includes("Maximum call stack size exceeded")) problem = TOO_DEEP;
  const { line, column } = lineColumn(text, offset);
  const lineText = text.split(/\r?\n/)[line - 1] ?? "";
  // A window of the line around the column: a line may be the whole (minified) document.
  const start = Math.max(0, column - 1 - EXCERPT_SIDE);
  const shown = lineText.slice(start, column - 1 + EXCERPT_SIDE);
  const before = start > 0 ? "…" : "";
  const after = start + shown.length < lineText.length ? "…" : "";
  const excerpt = `${before}${shown}${after}\n${" ".repeat(before.length + column - 1 - start)}^`;
  throw new DeclarationSyntaxError(filename, format, line, column, problem, excerpt);
}

/** Characters of the offending line an excerpt shows on either side of the column. */
const EXCERPT_SIDE = 80;

/** How deep a declaration may nest (mappings, sequences, flow collections): refused past it. */
export const MAX_NESTING = 64;

const TOO_DEEP = `nesting is deeper than ${MAX_NESTING} levels, the most a declaration may have`;

/** The offset where a JSON text nests past MAX_NESTING (brackets outside strings), or -1. */
function jsonTooDeep(text: string): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // A string: on past its closing quote (a backslash escapes the next character).
      for (i++; i < text.length && text.charCodeAt(i) !== 34; i++) if (text.charCodeAt(i) === 92) i++;
    } else if (c === 91 || c === 123) {
      if (++depth > MAX_NESTING) return i;
    } else if (c === 93 || c === 125) depth--;
  }
  return -1;
}

/**
 * A space or a flow collection's punctuation: what ends a tag or an anchor, and what may follow
 * the `:` of a flow mapping's key.
 */
const BREAKS = new Set([" ", "\t", ",", "[", "]", "{", "}"]);

/**
 * The offset where a YAML text nests past MAX_NESTING, or -1: a line's depth is the block
 * levels it is indented under, plus the `- ` and `key: ` it opens on the line, plus the flow
 * collections (`[`, `{`) open there. It may count more than the parser would (a block
 * scalar's indented lines), never less.
 */
function yamlTooDeep(text: string): number {
  const indents: number[] = [];
  let flow = 0;
  // Line by line, without splitting the whole text at once (a catalogue has millions of lines).
  for (let next = 0; next <= text.length; ) {
    const lineStart = next;
    let lineEnd = text.indexOf("\n", lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    const line = text.slice(lineStart, lineEnd);
    next = lineEnd + 1;
    let i = 0;
    while (line[i] === " ") i++;
    if (flow === 0) {
      if (i === line.length || line[i] === "#" || line[i] === "\r") continue;
      while (indents.length > 0 && (indents.at(-1) as number) >= i) indents.pop();
      indents.push(i);
    }
    let depth = indents.length;
    let valueStart = true;
    for (let j = i; j < line.length; j++) {
      const c = line[j];
      if (c === "#" && (j === 0 || line[j - 1] === " ")) break;
      // A tag or an anchor before a node (`!!str 'x'`, `&a [`): the node starts after it.
      if ((c === "!" || c === "&") && valueStart) {
        while (j + 1 < line.length && !BREAKS.has(line[j + 1] as string)) j++;
        continue;
      }
      // A complex key (`? `) opens an entry, as `- ` does.
      if (c === "?" && valueStart && (line[j + 1] === " " || j + 1 === line.length)) {
        depth++;
        if (depth + flow > MAX_NESTING) return lineStart + j;
        continue;
      }
      // A quote starts a quoted scalar only where a node starts: in a plain scalar (`x'`) it is
      // a character, and taking it for one would skip what follows it.
      if ((c === "'" || c === '"') && valueStart) {
        // A quoted scalar: on past its closing quote ('' and \" escape one).
        let k = j + 1;
        while (k < line.length) {
          if (c === '"' && line[k] === "\\") k += 2;
          else if (line[k] === c && c === "'" && line[k + 1] === "'") k += 2;
          else if (line[k] === c) break;
          else k++;
        }
        j = k;
        valueStart = false;
        continue;
      }
      if ((c === "[" || c === "{") && (valueStart || flow > 0)) {
        flow++;
        if (depth + flow > MAX_NESTING) return lineStart + j;
        valueStart = true;
        continue;
      }
      if ((c === "]" || c === "}") && flow > 0) {
        flow--;
        continue;
      }
      if (c === "-" && valueStart && flow === 0 && (line[j + 1] === " " || j + 1 === line.length)) {
        depth++;
        if (depth + flow > MAX_NESTING) return lineStart + j;
        continue;
      }
      if (c === ":" && (line[j + 1] === " " || j + 1 === line.length) && flow === 0) {
        depth++;
        if (depth > MAX_NESTING) return lineStart + j;
        valueStart = true;
        continue;
      }
      // A flow mapping's value (`{a: 'x'}`, `[a: "y"]`) starts a node too.
      if (c === ":" && flow > 0 && (j + 1 === line.length || BREAKS.has(line[j + 1] as string))) {
        valueStart = true;
        continue;
      }
      if (c === " " || c === "\t" || c === ",") {
        if (c === "," && flow > 0) valueStart = true;
        continue;
      }
      valueStart = false;
    }
    if (depth + flow > MAX_NESTING) return lineStart + i;
  }
  return -1;
}

/**
 * The offset where a YAML text nests past MAX_NESTING, or -1, read on the tokens of the `yaml`
 * library's lexer (linear, and no recursion however deep the text): each line's depth is the
 * block levels it is indented under, plus the `- `, `? ` and `: ` indicators on it, plus the flow
 * collections open. Quoted and block scalars, comments and document markers are its tokens, not
 * guesses. Used before the library parses a text the plain reader declined.
 */
function lexedTooDeep(text: string): number {
  const indents: number[] = [];
  let flow = 0;
  let depth = 0;
  let offset = 0;
  let lineStart = true;
  let indent = 0;
  for (const token of new Lexer().lex(text)) {
    const at = offset;
    // The lexer's marks (a document's or a scalar's start, one control character) are not text.
    if (token.length === 1 && token < " " && token !== "\n" && token !== "\t" && token !== "\r") continue;
    offset += token.length;
    if (token === "\n" || token === "\r\n") {
      if (flow === 0) lineStart = true;
      indent = 0;
      continue;
    }
    if (lineStart && flow === 0) {
      // A line's indentation, then its first token: a comment's line is no line of the document.
      if (/^[ \t]+$/.test(token)) {
        indent = token.length;
        continue;
      }
      if (token.startsWith("#")) continue;
      while (indents.length > 0 && (indents.at(-1) as number) >= indent) indents.pop();
      indents.push(indent);
      depth = indents.length;
      lineStart = false;
    }
    if (token === "[" || token === "{") flow++;
    else if (token === "]" || token === "}") flow = Math.max(0, flow - 1);
    else if (token === "-" || token === "?" || token === ":") depth++;
    // A scalar of several lines (a block scalar's text) ends its last line.
    else if (token.endsWith("\n") && flow === 0) {
      lineStart = true;
      indent = 0;
    }
    if (depth + flow > MAX_NESTING) return at;
  }
  return -1;
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(offset, text.length);
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

// ---- YAML --------------------------------------------------------------------------------------

/**
 * YAML as the `yaml` library's document gives it. The plain subset a catalogue is written in is
 * read straight to values (see plain-yaml.ts, the same values); any other text, and any text
 * with an error, is read as a document, which says where the problem is.
 */
function parseYaml(text: string, filename: string): unknown {
  const plain = readPlainYaml(text);
  if (plain !== NOT_PLAIN) return plain;
  // The library's parser nests as the document does, and its stack running out is not always
  // an error it can throw: what the line check missed is measured on the library's own tokens.
  const deep = lexedTooDeep(text);
  if (deep >= 0) fail(text, filename, "yaml", deep, TOO_DEEP);
  const doc = parseDocument(text, {
    prettyErrors: false,
    uniqueKeys: true,
    strict: true,
    logLevel: "silent",
  });
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    let message = problem.message.split("\n")[0]?.replace(/ at line \d+, column \d+:?$/, "") ?? "";
    // An unquoted cron such as `cron: * * * * *` reads as a YAML alias (`*name`).
    const line = text.slice(0, problem.pos[0]).split("\n").length;
    if (/alias/i.test(message) && /:\s*\*/.test(text.split(/\r?\n/)[line - 1] ?? ""))
      message += ': a value starting with * must be quoted, e.g. cron: "* * * * *"';
    // The key a mapping holds twice, as JSON's refusal names it.
    const key = /^Map keys must be unique/.test(message)
      ? /^\s*(?:"([^"]*)"|'([^']*)'|([^:,{}[\]\s][^:,{}[\]]*?))\s*:/.exec(text.slice(problem.pos[0]))
      : null;
    if (key) message = `duplicate key "${key[1] ?? key[2] ?? key[3]}"`;
    fail(text, filename, "yaml", problem.pos[0], message);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Excessive aliasing ("billion laughs") and similar structural problems.
    fail(text, filename, "yaml", 0, error instanceof Error ? error.message : String(error));
  }
}

// ---- JSON --------------------------------------------------------------------------------------

/** Objects nested deeper than this are refused. */
const MAX_DEPTH = 512;

/**
 * JSON as `JSON.parse` reads it, when that is what the strict reader below would give: the text
 * parses, its objects hold as many members as it names (a duplicate key leaves one member fewer)
 * and it nests no deeper than MAX_DEPTH. Otherwise the strict reader reads it, and says where
 * and what the problem is. `JSON.parse` reads a catalogue of 100,000 tasks about ten times as
 * fast.
 */
function parseJson(text: string, filename: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return parseJsonStrictly(text, filename);
  }
  const members = membersOf(value, 0);
  return members >= 0 && members === membersNamed(text) ? value : parseJsonStrictly(text, filename);
}

/** The members of every object in a parsed value, or -1 past MAX_DEPTH. */
function membersOf(value: unknown, depth: number): number {
  if (typeof value !== "object" || value === null) return 0;
  if (depth >= MAX_DEPTH) return -1;
  let n = 0;
  if (Array.isArray(value)) {
    for (const item of value) {
      const m = membersOf(item, depth + 1);
      if (m < 0) return -1;
      n += m;
    }
    return n;
  }
  for (const key in value) {
    const m = membersOf((value as Record<string, unknown>)[key], depth + 1);
    if (m < 0) return -1;
    n += m + 1;
  }
  return n;
}

/** The members a JSON text names: its colons outside strings. */
function membersNamed(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 58) n++;
    if (c !== 34) {
      i++;
      continue;
    }
    // A string: on to its closing quote, the first one not escaped.
    for (let q = text.indexOf('"', i + 1); ; q = text.indexOf('"', q + 1)) {
      if (q < 0) return -1;
      let slashes = 0;
      while (text.charCodeAt(q - 1 - slashes) === 92) slashes++;
      if (slashes % 2 === 0) {
        i = q + 1;
        break;
      }
    }
  }
  return n;
}

/**
 * A small strict JSON parser (RFC 8259): unlike `JSON.parse` it reports where the problem is on
 * every Node version, and rejects duplicate keys as YAML does.
 */
function parseJsonStrictly(text: string, filename: string): unknown {
  let pos = 0;
  const error = (message: string, at = pos): never => fail(text, filename, "json", at, message);

  const skipSpace = () => {
    while (pos < text.length) {
      const c = text[pos];
      if (c === " " || c === "\t" || c === "\n" || c === "\r") pos++;
      else break;
    }
  };
  const describe = () => (pos >= text.length ? "end of input" : `${JSON.stringify(text[pos])}`);

  const parseString = (): string => {
    const start = pos;
    pos++; // opening quote
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c === 34) {
        pos++;
        return JSON.parse(text.slice(start, pos)) as string;
      }
      if (c === 92) {
        const next = text[pos + 1];
        if (next === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(pos + 2, pos + 6))) error("invalid \\u escape");
          pos += 6;
        } else if (next !== undefined && '"\\/bfnrt'.includes(next)) pos += 2;
        else error("invalid escape in string");
      } else if (c < 0x20) error("control character in string (escape it)");
      else pos++;
    }
    return error("unterminated string", start);
  };

  const parseValue = (depth: number): unknown => {
    if (depth > MAX_DEPTH) error("nesting is too deep");
    skipSpace();
    const c = text[pos];
    if (c === "{") {
      pos++;
      const out: Record<string, unknown> = {};
      skipSpace();
      if (text[pos] === "}") {
        pos++;
        return out;
      }
      for (;;) {
        skipSpace();
        if (text[pos] !== '"') error(`expected a double-quoted property name, found ${describe()}`);
        const keyAt = pos;
        const key = parseString();
        if (Object.hasOwn(out, key)) error(`duplicate key ${JSON.stringify(key)}`, keyAt);
        skipSpace();
        if (text[pos] !== ":") error(`expected ':' after property name, found ${describe()}`);
        pos++;
        const value = parseValue(depth + 1);
        Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
        skipSpace();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "}") {
          pos++;
          return out;
        }
        error(`expected ',' or '}' after property value, found ${describe()}`);
      }
    }
    if (c === "[") {
      pos++;
      const out: unknown[] = [];
      skipSpace();
      if (text[pos] === "]") {
        pos++;
        return out;
      }
      for (;;) {
        out.push(parseValue(depth + 1));
        skipSpace();
        if (text[pos] === ",") {
          pos++;
          continue;
        }
        if (text[pos] === "]") {
          pos++;
          return out;
        }
        error(`expected ',' or ']' after array element, found ${describe()}`);
      }
    }
    if (c === '"') return parseString();
    const rest = text.slice(pos);
    const number = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(rest);
    if (number && number[0] !== "-") {
      pos += number[0].length;
      return Number(number[0]);
    }
    for (const [word, value] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (rest.startsWith(word)) {
        pos += word.length;
        return value;
      }
    }
    return error(`unexpected ${describe()}`);
  };

  skipSpace();
  if (pos >= text.length) return null; // an empty file declares nothing
  const value = parseValue(0);
  skipSpace();
  if (pos < text.length) error(`unexpected ${describe()} after the end of the document`);
  return value;
}

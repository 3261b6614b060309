import { describe, expect, it } from "vitest";
import { parseDocument } from "yaml";
import { seededRandom } from "../../../test/support/random.js";
import { NOT_PLAIN, readPlainYaml } from "../src/declare/plain-yaml.js";
import { DeclarationSyntaxError, parseDeclarationText } from "../src/index.js";

/** What the library reads, with the options the declaration parser gives it: a value or an error. */
function library(text: string): { value: unknown } | { error: string } {
  const doc = parseDocument(text, {
    prettyErrors: false,
    uniqueKeys: true,
    strict: true,
    logLevel: "silent",
  });
  const problem = doc.errors[0] ?? doc.warnings[0];
  if (problem) return { error: problem.message };
  try {
    return { value: doc.toJS({ maxAliasCount: 100 }) };
  } catch (error) {
    return { error: String(error) };
  }
}

/** The reader agrees with the library on a text it reads; returns whether it read it. */
function agrees(text: string): boolean {
  const fast = readPlainYaml(text);
  if (fast === NOT_PLAIN) return false;
  const lib = library(text);
  expect(lib, JSON.stringify(text)).not.toHaveProperty("error");
  expect(fast, JSON.stringify(text)).toStrictEqual((lib as { value: unknown }).value);
  return true;
}

/** Plain scalars that mean something else to YAML 1.1, 1.2 or JSON, or almost do. */
const TRICKY_PLAIN = [
  "yes",
  "no",
  "on",
  "off",
  "y",
  "n",
  "Yes",
  "ON",
  "true",
  "True",
  "TRUE",
  "tRue",
  "false",
  "False",
  "FALSE",
  "null",
  "Null",
  "NULL",
  "nULL",
  "~",
  "0x1F",
  "0x1f",
  "0X1F",
  "0xG",
  "0o17",
  "0o8",
  "017",
  "08",
  "1e3",
  "1E3",
  "1.5e-3",
  "1e",
  "e3",
  ".5",
  "5.",
  "+1",
  "-1",
  "-0",
  "+0.5",
  "-.5",
  "1.0",
  "1.10",
  ".inf",
  "-.inf",
  "+.Inf",
  ".INF",
  ".NaN",
  ".nan",
  ".NAN",
  ".Nan",
  "1_000",
  "1,000",
  "12:30",
  "12:30:00",
  "2026-12-01",
  "2026-12-01T00:00:00Z",
  "a b c",
  "x/y/z",
  "0 * * * *",
  "http://x.y/z?a=b",
  "a#b",
  "a:b",
  "9007199254740993",
  "123456789012345678901234567890",
  "1e400",
  "0x",
  "--x",
  "-x",
  "é",
  "日本語",
  "a'b",
  'a"b',
  "<<x",
  "=",
  "a\\nb",
  "null0",
  "truex",
  "0.",
  "+",
  ".",
  "..",
  "a.b",
  "x%",
  "x@",
  "1:2",
  "-.inf0",
  "0b101",
  "0o",
  "00",
  "+0",
];
const TRICKY_STRINGS = [
  ...TRICKY_PLAIN,
  "",
  " ",
  " lead",
  "trail ",
  "it's",
  'say "hi"',
  "a: b",
  "a #b",
  "#x",
  "- x",
  "[x]",
  "{x}",
  "a, b",
  "*x",
  "&x",
  "!x",
  "|",
  ">",
  "?",
  ":",
  "\u00e9\u0085",
  "tab\there",
  "nl\nhere",
  "back\\slash",
  "\u{1F600}",
  "\u0000",
  "\u001b",
];
const KEYS = [
  "name",
  "project",
  "account",
  "cron",
  "parents",
  "a:b",
  "a b",
  "a#b",
  "yes",
  "on",
  "No",
  "x-y",
  "x_y",
  "Ünï",
  "k1",
  "tasks",
  "x.y",
  "nullx",
  "a'b",
];

/** A string as YAML writes it, in one of the styles the reader takes. */
function quote(s: string, rnd: () => number, flow: boolean): string {
  const r = rnd();
  const plainOk = TRICKY_PLAIN.includes(s) && !(flow && /[,[\]{}]/.test(s));
  if (plainOk && r < 0.4) return s;
  const controls = [...s].some((ch) => (ch.codePointAt(0) as number) < 0x20 || ch === "\u0085");
  if (r < 0.7 && !controls) return `'${s.replaceAll("'", "''")}'`;
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0) as number;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += rnd() < 0.5 ? "\\\\" : "\\x5c";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\t") out += rnd() < 0.5 ? "\\t" : "\\u0009";
    else if (ch === "/") out += rnd() < 0.5 ? "\\/" : "/";
    else if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else if (code > 0xffff) out += rnd() < 0.5 ? `\\U${code.toString(16).padStart(8, "0")}` : ch;
    else if (code > 0x7f && rnd() < 0.5) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return `${out}"`;
}

type Value = null | boolean | number | string | Value[] | { [k: string]: Value };

function pick<T>(xs: readonly T[], rnd: () => number): T {
  return xs[Math.floor(rnd() * xs.length)] as T;
}

/** A random value: collections down to `depth`, scalars from the tricky lists. */
function value(rnd: () => number, depth: number): Value {
  const r = rnd();
  if (depth > 0 && r < 0.25) {
    const n = Math.floor(rnd() * 4);
    return Array.from({ length: n }, () => value(rnd, depth - 1));
  }
  if (depth > 0 && r < 0.5) {
    const out: Record<string, Value> = {};
    const n = Math.floor(rnd() * 4);
    for (let i = 0; i < n; i++) out[pick(KEYS, rnd)] = value(rnd, depth - 1);
    return out;
  }
  return pick(TRICKY_STRINGS, rnd);
}

const comment = (rnd: () => number) => (rnd() < 0.15 ? ` # note: 'x' "y" #z` : rnd() < 0.1 ? "   " : "");
const key = (k: string, rnd: () => number) =>
  /^[A-Za-z\u00c0-\u024f][\w.' -]*$/.test(k) && !/ $/.test(k) && rnd() < 0.7 && !TRICKY_PLAIN.includes(k)
    ? k
    : quote(k, rnd, false);

function flow(v: Value, rnd: () => number): string {
  if (Array.isArray(v)) return `[${v.map((x) => flow(x, rnd)).join(rnd() < 0.5 ? ", " : ",")}]`;
  if (v !== null && typeof v === "object") {
    const inner = Object.entries(v)
      .map(([k, x]) => `${key(k, rnd)}: ${flow(x, rnd)}`)
      .join(", ");
    return inner === "" ? "{}" : rnd() < 0.5 ? `{ ${inner} }` : `{${inner}}`;
  }
  return quote(String(v), rnd, true);
}

const isCollection = (v: Value): v is Value[] | { [k: string]: Value } => v !== null && typeof v === "object";
const empty = (v: Value) =>
  Array.isArray(v) ? v.length === 0 : isCollection(v) && Object.keys(v).length === 0;

/** A collection in block style at an indentation, as lines. */
function block(v: Value[] | { [k: string]: Value }, indent: number, rnd: () => number): string[] {
  const pad = " ".repeat(indent);
  const step = rnd() < 0.7 ? 2 : 4;
  const lines: string[] = [];
  const blank = () => {
    if (rnd() < 0.05) lines.push("");
    if (rnd() < 0.05) lines.push(`${" ".repeat(Math.floor(rnd() * 6))}# a comment: [x] "y"`);
  };
  if (Array.isArray(v)) {
    for (const item of v) {
      blank();
      if (!isCollection(item) || empty(item) || rnd() < 0.2)
        lines.push(
          `${pad}- ${isCollection(item) ? flow(item, rnd) : quote(String(item), rnd, false)}${comment(rnd)}`,
        );
      else if (Array.isArray(item)) lines.push(`${pad}-${comment(rnd)}`, ...block(item, indent + step, rnd));
      else {
        // A compact mapping: its first entry on the entry's line.
        const inner = block(item, indent + 2, rnd);
        const first = inner.findIndex(
          (l) => l.startsWith(`${pad}  `) && l[indent + 2] !== " " && l[indent + 2] !== "#",
        );
        lines.push(
          ...inner.slice(0, first),
          `${pad}- ${(inner[first] as string).slice(indent + 2)}`,
          ...inner.slice(first + 1),
        );
      }
    }
    return lines;
  }
  for (const [k, x] of Object.entries(v)) {
    blank();
    const head = `${pad}${key(k, rnd)}${rnd() < 0.1 ? "  " : ""}:`;
    if (x === null && rnd() < 0.3) lines.push(`${head}${comment(rnd)}`);
    else if (!isCollection(x) || empty(x) || rnd() < 0.2)
      lines.push(`${head} ${isCollection(x) ? flow(x, rnd) : quote(String(x), rnd, false)}${comment(rnd)}`);
    else if (Array.isArray(x))
      lines.push(`${head}${comment(rnd)}`, ...block(x, rnd() < 0.5 ? indent : indent + step, rnd));
    else lines.push(`${head}${comment(rnd)}`, ...block(x, indent + step, rnd));
  }
  return lines;
}

function documentOf(rnd: () => number, depth: number): string {
  let v = value(rnd, depth);
  if (!isCollection(v) || empty(v)) v = { tasks: [v] };
  const head = rnd() < 0.1 ? ["---"] : rnd() < 0.1 ? ["# a catalogue", "---"] : [];
  return `${[...head, ...block(v, 0, rnd)].join("\n")}${rnd() < 0.9 ? "\n" : ""}`;
}

describe("the plain YAML reader", () => {
  it("reads what the library reads, for hand-written texts in the subset", () => {
    const texts = [
      "",
      "# only a comment\n",
      "---\n",
      "---\na: 1\n",
      "a: 1",
      "a:   b   \n",
      "a: b # c\n",
      "a: 'b # c'\n",
      'a: "b # c"\n',
      "a: b#c\n",
      "a#b: c\n",
      "a:b: c\n",
      "a  : b\n",
      "'a: b': c\n",
      '"a: b": c\n',
      "'it''s': 'it''s'\n",
      'a: "\\u00e9\\x41\\U0001F600\\t\\n\\\\\\"\\/\\0\\e\\N\\_\\L\\P\\ "\n',
      "a: yes\nb: on\nc: 0x1F\nd: 1e3\ne: .inf\nf: ~\ng: -.inf\nh: .NaN\ni: 0o17\nj: 017\nk: +12\nl: -0\n",
      "a: 1.0\nb: 1.\nc: .5\nd: 1_000\ne: 12:30\nf: 2026-12-01\ng: True\nh: NULL\ni:\nj: nULL\n",
      "a: 9007199254740993\nb: 1e400\nc: 123456789012345678901234567890\n",
      "tasks:\n- a\n- b\n",
      "tasks:\n  - a\n  -   b\n",
      "tasks:\n  -\n    a: 1\n  - # c\n    b: 2\n  -\n  - c\n",
      "- a:\n  - x\n  b: 2\n- c\n",
      "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n",
      "a: [1, 'b', \"c\", [d, {e: f}], {}, []]\n",
      "a: {x: 1, 'y': 2, \"z\": [3]}\n",
      '- { project: a, name: t1, cron: "0 * * * *", parents: [x/y/z] }\n',
      "a: [a b, c:d, -1, -x]\n",
      "a:\n\n  # between\n  b: 1\n\n",
      "a: 1   \nb: 2  # trailing\n",
      "a: --\n",
      "a: x-y\n",
      "toString: 1\nconstructor: 2\nvalueOf: 3\n",
    ];
    for (const text of texts) expect(agrees(text), JSON.stringify(text)).toBe(true);
  });

  it("declines what is outside the subset, and the library reads it or says what is wrong", () => {
    const texts = [
      "a: &x 1\nb: *x\n",
      "a: !!str 1\n",
      "a: |\n  text\n",
      "a: >\n  text\n",
      "a: b\n  c\n",
      "a: 'b\n  c'\n",
      "a: [1,\n  2]\n",
      "a: 1\n---\nb: 2\n",
      "%YAML 1.2\n---\na: 1\n",
      "a: 1\na: 2\n",
      "a: b: c\n",
      "a:\tb\n",
      "a: b\r\n",
      "? a\n: b\n",
      "1: a\n",
      "true: a\n",
      "null: a\n",
      "<<: {a: 1}\n",
      "__proto__: 1\n",
      "a: [1, 2, ]\n",
      "a: {b}\n",
      "a: [b: c]\n",
      "- - a\n",
      "a\n",
      "  a: 1\n",
      "a: 1\n b: 2\n",
      'a: "\\q"\n',
      'a: "x\n',
      "a: 'x\n",
      "a: [x\n",
      "a: @x\n",
      "a: `x\n",
      "cron: * * * * *\n",
      "a: b\n...\n",
      "a: -\n",
    ];
    for (const text of texts) {
      expect(readPlainYaml(text), JSON.stringify(text)).toBe(NOT_PLAIN);
      library(text);
    }
  });

  it("reads generated catalogues exactly as the library does", () => {
    const rnd = seededRandom(20261206);
    for (let i = 0; i < 1500; i++) {
      const text = documentOf(rnd, 1 + (i % 4));
      expect(agrees(text), text).toBe(true);
    }
  });

  it("never reads a mutated text differently from the library", () => {
    const rnd = seededRandom(7);
    const alphabet = [..." \n:-#'\"[]{},&*!|>?%@`\\xa01.~\t\r", "  ", "- ", ": ", " #"];
    let read = 0;
    for (let i = 0; i < 4000; i++) {
      let text = documentOf(rnd, 1 + (i % 3));
      for (let edits = 1 + Math.floor(rnd() * 3); edits > 0; edits--) {
        const at = Math.floor(rnd() * (text.length + 1));
        const r = rnd();
        if (r < 0.5) text = text.slice(0, at) + pick(alphabet, rnd) + text.slice(at);
        else if (r < 0.8) text = text.slice(0, at) + text.slice(at + 1);
        else {
          // A line repeated (a duplicate key or entry) or moved in or out.
          const lines = text.split("\n");
          const l = Math.floor(rnd() * lines.length);
          if (rnd() < 0.5) lines.splice(l, 0, lines[l] as string);
          else lines[l] = rnd() < 0.5 ? ` ${lines[l]}` : (lines[l] as string).replace(/^ /, "");
          text = lines.join("\n");
        }
      }
      if (agrees(text)) read++;
    }
    // Most mutations leave a text the reader still reads: the comparison above is not idle.
    expect(read).toBeGreaterThan(1000);
  });

  it("leaves errors to the library: the file, line and column as before", () => {
    const text = "tasks:\n  - project: p\n    name: a\n    name: b\n";
    let caught: DeclarationSyntaxError | undefined;
    try {
      parseDeclarationText(text, { filename: "teams/a.yaml" });
    } catch (e) {
      caught = e as DeclarationSyntaxError;
    }
    expect(caught).toBeInstanceOf(DeclarationSyntaxError);
    expect([caught?.line, caught?.column]).toEqual([4, 5]);
    expect(caught?.message).toMatch(/^teams\/a\.yaml: line 4, column 5: duplicate key "name"/);
    expect(() => parseDeclarationText("a: b: c\n", { filename: "b.yaml" })).toThrow(
      /b\.yaml: line 1, column 4: /,
    );
  });
});

/**
 * A reader for the plain subset of YAML a catalogue is written in, straight to JavaScript values:
 * block mappings and sequences, flow mappings and sequences on one line, plain, single- and
 * double-quoted scalars on one line, comments, and plain scalars typed by the YAML 1.2 core
 * schema (null, booleans, integers, floats, strings). For every text it reads it gives what the
 * `yaml` library's `parseDocument(...).toJS()` gives; anything else (anchors, aliases, tags,
 * block or multi-line scalars, several documents, duplicate keys, tabs, any error, anything
 * uncertain) it declines with NOT_PLAIN, and the caller reads the text with the library, which
 * says where the problem is. It builds no node per scalar and keeps no source ranges: a
 * catalogue of 100,000 tasks reads in a fraction of the library's time and memory.
 */

/** What `readPlainYaml` returns for a text outside the subset. */
export const NOT_PLAIN: unique symbol = Symbol("not plain YAML");

/** Thrown inside the reader to give up; caught at its top. */
const DECLINE = { declined: true };

/** Characters that make the reader decline wherever they are: tabs, CR, controls, odd breaks. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters refused
const REFUSED = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\ufeff\ufffe\uffff]/;

/** The longest plain or quoted key the reader takes (the library refuses implicit keys past 1024). */
const MAX_KEY = 1000;

const SPACE = 32;
const HASH = 35;
const COLON = 58;
const DASH = 45;
const DQUOTE = 34;
const SQUOTE = 39;
const COMMA = 44;
const LBRACKET = 91;
const RBRACKET = 93;
const LBRACE = 123;
const RBRACE = 125;
const BACKSLASH = 92;

/**
 * The value of a YAML text as `parseDocument(text).toJS()` gives it, or NOT_PLAIN when the text
 * is outside the subset this reader takes (or has an error).
 */
export function readPlainYaml(text: string): unknown {
  if (REFUSED.test(text)) return NOT_PLAIN;
  try {
    return new Reader(text).document();
  } catch (error) {
    if (error === DECLINE) return NOT_PLAIN;
    // The stack overflows only on nesting the depth check lets through; the library says more.
    if (error instanceof RangeError) return NOT_PLAIN;
    throw error;
  }
}

function decline(): never {
  throw DECLINE;
}

class Reader {
  /** The current line: its start, its first character that is not a space, its end (the NL). */
  private lineStart = 0;
  private indent = 0;
  private lineEnd = 0;
  /** No content line is left. */
  private atEnd = false;
  /** A content line was read: document markers are declined from here on. */
  private started = false;

  constructor(private readonly text: string) {}

  document(): unknown {
    const t = this.text;
    this.lineEnd = -1;
    this.nextContentLine();
    if (this.atEnd) return null;
    // A `---` line may open the (single) document.
    if (this.indent === 0 && t.startsWith("---", this.lineStart)) {
      const after = this.lineStart + 3;
      const rest = this.skipSpaces(after);
      if (
        after !== this.lineEnd &&
        (rest === after || (rest !== this.lineEnd && t.charCodeAt(rest) !== HASH))
      )
        decline();
      this.nextContentLine();
      if (this.atEnd) return null;
    }
    if (this.indent !== 0) decline();
    const value = this.blockNode(this.lineStart + this.indent);
    if (!this.atEnd) decline();
    return value;
  }

  /** Moves to the next line that is neither blank nor a comment alone (or to the end). */
  private nextContentLine(): void {
    const t = this.text;
    const n = t.length;
    let start = this.lineEnd + 1;
    while (start < n) {
      let end = t.indexOf("\n", start);
      if (end < 0) end = n;
      let i = start;
      while (i < end && t.charCodeAt(i) === SPACE) i++;
      if (i < end && t.charCodeAt(i) !== HASH) {
        this.lineStart = start;
        this.indent = i - start;
        this.lineEnd = end;
        // Document markers and directives at the start of a line: not for this reader.
        if (i === start) {
          const c = t.charCodeAt(i);
          if (c === 37 /* % */) decline();
          if (t.startsWith("...", i) || (t.startsWith("---", i) && this.started)) {
            const after = t.charCodeAt(i + 3);
            if (i + 3 >= end || after === SPACE) decline();
          }
        }
        this.started = true;
        return;
      }
      start = end + 1;
    }
    this.atEnd = true;
    this.lineStart = n;
    this.lineEnd = n;
    this.indent = -1;
  }

  private skipSpaces(i: number): number {
    const t = this.text;
    while (i < this.lineEnd && t.charCodeAt(i) === SPACE) i++;
    return i;
  }

  /** Whether a `-` at i opens a block sequence entry (it is followed by a space or the line end). */
  private isEntry(i: number): boolean {
    return (
      this.text.charCodeAt(i) === DASH && (i + 1 === this.lineEnd || this.text.charCodeAt(i + 1) === SPACE)
    );
  }

  /** Past the spaces from i the line must end, or hold only a comment. */
  private endOfLine(i: number): void {
    const j = this.skipSpaces(i);
    if (j === this.lineEnd) return;
    if (j > i && this.text.charCodeAt(j) === HASH) return;
    decline();
  }

  /** A block collection starting at column `at` of the current line (its indentation is there). */
  private blockNode(at: number): unknown {
    if (this.isEntry(at)) return this.blockSequence(at - this.lineStart);
    const key = this.keyAt(at);
    if (key === null) decline();
    return this.blockMapping(at - this.lineStart, at);
  }

  private blockSequence(n: number): unknown[] {
    const t = this.text;
    const out: unknown[] = [];
    for (;;) {
      // The current line has its `-` at column n.
      const p = this.skipSpaces(this.lineStart + n + 1);
      if (p === this.lineEnd || t.charCodeAt(p) === HASH) {
        // The entry's node is on the lines below, or it is empty.
        this.nextContentLine();
        if (!this.atEnd && this.indent > n) out.push(this.blockNode(this.lineStart + this.indent));
        else out.push(null);
      } else if (this.isEntry(p)) {
        decline();
      } else if (this.keyAt(p) !== null) {
        out.push(this.blockMapping(p - this.lineStart, p));
      } else {
        out.push(this.inlineValue(p));
        this.nextContentLine();
      }
      if (this.atEnd || this.indent < n) return out;
      if (this.indent > n || !this.isEntry(this.lineStart + n)) {
        // The next line is deeper (a scalar going on, or an error), or a key at the entries'
        // column: the parent mapping takes it only when the sequence is its value at its column.
        if (this.indent > n) decline();
        return out;
      }
    }
  }

  private blockMapping(n: number, first: number): Record<string, unknown> {
    const t = this.text;
    const out: Record<string, unknown> = {};
    let at = first;
    for (;;) {
      const key = this.keyAt(at);
      if (key === null) decline();
      if (Object.hasOwn(out, key.key) || key.key === "__proto__" || key.key === "<<") decline();
      let value: unknown;
      const p = this.skipSpaces(key.after);
      if (p === this.lineEnd || t.charCodeAt(p) === HASH) {
        this.nextContentLine();
        if (this.atEnd || this.indent < n) value = null;
        else if (this.indent > n) value = this.blockNode(this.lineStart + this.indent);
        else if (this.isEntry(this.lineStart + n)) value = this.blockSequence(n);
        else value = null;
      } else {
        if (this.isEntry(p)) decline();
        value = this.inlineValue(p);
        this.nextContentLine();
      }
      out[key.key] = value;
      if (this.atEnd || this.indent < n) return out;
      if (this.indent > n) decline();
      at = this.lineStart + n;
      if (this.isEntry(at)) {
        // A sequence entry at the mapping's column ends the mapping only when the mapping is an
        // entry's (compact) mapping of a sequence further left; else it is an error.
        decline();
      }
    }
  }

  /**
   * The implicit key at i on the current line (plain or quoted, then `:` and a space or the line
   * end): the key and the offset past its colon; null when the line holds no key there.
   */
  private keyAt(i: number): { key: string; after: number } | null {
    const t = this.text;
    const c = t.charCodeAt(i);
    // A flow collection: a value (as a key, `[a]: b`, it is declined past its end).
    if (c === LBRACKET || c === LBRACE) return null;
    if (c === DQUOTE || c === SQUOTE) {
      const q = c === DQUOTE ? this.doubleQuoted(i) : this.singleQuoted(i);
      const j = this.skipSpaces(q.end);
      if (t.charCodeAt(j) !== COLON || j >= this.lineEnd) return null;
      if (j + 1 < this.lineEnd && t.charCodeAt(j + 1) !== SPACE) decline();
      if (q.value.length > MAX_KEY) decline();
      return { key: q.value, after: j + 1 };
    }
    // A plain key: up to the first `:` followed by a space or the line end.
    let j = i;
    for (; j < this.lineEnd; j++) {
      const d = t.charCodeAt(j);
      if (d === COLON && (j + 1 === this.lineEnd || t.charCodeAt(j + 1) === SPACE)) break;
      if (d === HASH && j > i && t.charCodeAt(j - 1) === SPACE) return null;
    }
    if (j === this.lineEnd) return null;
    if (!plainStart(t, i, this.lineEnd) || c === DASH) decline();
    let end = j;
    while (end > i && t.charCodeAt(end - 1) === SPACE) end--;
    const raw = t.slice(i, end);
    if (raw.length > MAX_KEY || /[[\]{},]/.test(raw)) decline();
    const key = resolvePlain(raw);
    if (typeof key !== "string") decline();
    return { key, after: j + 1 };
  }

  /** A value that starts at i and ends on the current line: a scalar or a flow collection. */
  private inlineValue(i: number): unknown {
    const t = this.text;
    const c = t.charCodeAt(i);
    if (c === DQUOTE || c === SQUOTE) {
      const q = c === DQUOTE ? this.doubleQuoted(i) : this.singleQuoted(i);
      this.endOfLine(q.end);
      return q.value;
    }
    if (c === LBRACKET || c === LBRACE) {
      const f = this.flow(i, 0);
      this.endOfLine(f.end);
      return f.value;
    }
    if (!plainStart(t, i, this.lineEnd)) decline();
    // A plain scalar: to a comment or the line's end.
    let end = this.lineEnd;
    for (let j = i + 1; j < this.lineEnd; j++) {
      const d = t.charCodeAt(j);
      if (d === HASH && t.charCodeAt(j - 1) === SPACE) {
        end = j;
        break;
      }
      // `key: a: b` is an error; `a:b` is a scalar.
      if (d === COLON && (j + 1 === this.lineEnd || t.charCodeAt(j + 1) === SPACE)) decline();
    }
    while (end > i && t.charCodeAt(end - 1) === SPACE) end--;
    return resolvePlain(t.slice(i, end));
  }

  /** A flow collection at i, closed on the same line; nesting past `depth` is declined. */
  private flow(i: number, depth: number): { value: unknown; end: number } {
    if (depth > 64) decline();
    const t = this.text;
    const seq = t.charCodeAt(i) === LBRACKET;
    const close = seq ? RBRACKET : RBRACE;
    const list: unknown[] = [];
    const map: Record<string, unknown> = {};
    let j = this.skipSpaces(i + 1);
    if (t.charCodeAt(j) === close && j < this.lineEnd) return { value: seq ? list : map, end: j + 1 };
    for (;;) {
      if (j >= this.lineEnd) decline();
      if (seq) {
        const item = this.flowItem(j, depth);
        list.push(item.value);
        j = this.skipSpaces(item.end);
      } else {
        const c = t.charCodeAt(j);
        let key: string;
        let after: number;
        if (c === DQUOTE || c === SQUOTE) {
          const q = c === DQUOTE ? this.doubleQuoted(j) : this.singleQuoted(j);
          key = q.value;
          after = q.end;
        } else {
          const s = this.flowPlain(j);
          if (typeof s.value !== "string") decline();
          key = s.value;
          after = s.end;
        }
        if (key.length > MAX_KEY) decline();
        after = this.skipSpaces(after);
        if (t.charCodeAt(after) !== COLON || after + 1 >= this.lineEnd || t.charCodeAt(after + 1) !== SPACE)
          decline();
        if (Object.hasOwn(map, key) || key === "__proto__" || key === "<<") decline();
        const v = this.skipSpaces(after + 1);
        const cv = t.charCodeAt(v);
        if (v >= this.lineEnd || cv === COMMA || cv === close) decline();
        const item = this.flowItem(v, depth);
        map[key] = item.value;
        j = this.skipSpaces(item.end);
      }
      if (j >= this.lineEnd) decline();
      const d = t.charCodeAt(j);
      if (d === close) return { value: seq ? list : map, end: j + 1 };
      if (d !== COMMA) decline();
      j = this.skipSpaces(j + 1);
      // `[a, ]` and `[a,,]`: declined, the library reads them its own way.
      if (j >= this.lineEnd || t.charCodeAt(j) === close || t.charCodeAt(j) === COMMA) decline();
    }
  }

  /** A value inside a flow collection: a nested collection, a quoted or a plain scalar. */
  private flowItem(j: number, depth: number): { value: unknown; end: number } {
    const t = this.text;
    const c = t.charCodeAt(j);
    let r: { value: unknown; end: number };
    if (c === LBRACKET || c === LBRACE) r = this.flow(j, depth + 1);
    else if (c === DQUOTE) r = this.doubleQuoted(j);
    else if (c === SQUOTE) r = this.singleQuoted(j);
    else r = this.flowPlain(j);
    // An implicit pair in a flow sequence (`[a: b]`) or a key with a collection: declined.
    const k = this.skipSpaces(r.end);
    if (t.charCodeAt(k) === COLON && k < this.lineEnd) decline();
    return r;
  }

  /** A plain scalar inside a flow collection: up to `,`, `]`, `}` or `: `. */
  private flowPlain(i: number): { value: unknown; end: number } {
    const t = this.text;
    if (!plainStart(t, i, this.lineEnd)) decline();
    let j = i;
    for (; j < this.lineEnd; j++) {
      const d = t.charCodeAt(j);
      if (d === COMMA || d === RBRACKET || d === RBRACE) break;
      if (d === LBRACKET || d === LBRACE) decline();
      if (d === COLON) {
        const e = t.charCodeAt(j + 1);
        if (j + 1 >= this.lineEnd || e === SPACE || e === COMMA || e === RBRACKET || e === RBRACE) break;
      }
      if (d === HASH && t.charCodeAt(j - 1) === SPACE) decline();
    }
    if (j >= this.lineEnd) decline();
    let end = j;
    while (end > i && t.charCodeAt(end - 1) === SPACE) end--;
    if (end === i) decline();
    return { value: resolvePlain(t.slice(i, end)), end };
  }

  /** A single-quoted scalar at i, closed on the same line (`''` is a quote). */
  private singleQuoted(i: number): { value: string; end: number } {
    const t = this.text;
    let out = "";
    let from = i + 1;
    for (;;) {
      const q = t.indexOf("'", from);
      if (q < 0 || q >= this.lineEnd) decline();
      out += t.slice(from, q);
      if (t.charCodeAt(q + 1) === SQUOTE && q + 1 < this.lineEnd) {
        out += "'";
        from = q + 2;
        continue;
      }
      return { value: out, end: q + 1 };
    }
  }

  /** A double-quoted scalar at i, closed on the same line, its escapes read. */
  private doubleQuoted(i: number): { value: string; end: number } {
    const t = this.text;
    let out = "";
    let from = i + 1;
    for (let j = from; ; j++) {
      if (j >= this.lineEnd) decline();
      const c = t.charCodeAt(j);
      if (c === DQUOTE) return { value: out + t.slice(from, j), end: j + 1 };
      if (c !== BACKSLASH) continue;
      out += t.slice(from, j);
      const e = t[j + 1];
      if (j + 1 >= this.lineEnd || e === undefined) decline();
      const simple = ESCAPES[e];
      if (simple !== undefined) {
        out += simple;
        j += 1;
      } else {
        const digits = e === "x" ? 2 : e === "u" ? 4 : e === "U" ? 8 : 0;
        if (digits === 0) decline();
        const hex = t.slice(j + 2, j + 2 + digits);
        if (hex.length !== digits || !/^[0-9a-fA-F]+$/.test(hex) || j + 2 + digits > this.lineEnd) decline();
        const code = Number.parseInt(hex, 16);
        if ((code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) decline();
        out += String.fromCodePoint(code);
        j += 1 + digits;
      }
      from = j + 1;
    }
  }
}

/** YAML 1.2's one-character escapes in double-quoted scalars. */
const ESCAPES: Record<string, string> = {
  __proto__: null as unknown as string,
  "0": "\0",
  a: "\x07",
  b: "\b",
  t: "\t",
  n: "\n",
  v: "\v",
  f: "\f",
  r: "\r",
  e: "\x1b",
  " ": " ",
  '"': '"',
  "/": "/",
  "\\": "\\",
  N: "\u0085",
  _: "\u00a0",
  L: "\u2028",
  P: "\u2029",
};

/**
 * Whether a plain scalar may start at i: not with an indicator; `-` only before a character
 * that is not a space (`-1`, `-x`); `?` and `:` never (declined, though YAML allows some).
 */
function plainStart(t: string, i: number, lineEnd: number): boolean {
  if (i >= lineEnd) return false;
  switch (t.charCodeAt(i)) {
    case DASH: {
      // Followed by a character a plain scalar may hold anywhere (`-1`, `-x`; not `-]`).
      if (i + 1 >= lineEnd) return false;
      const d = t.charCodeAt(i + 1);
      return d !== SPACE && d !== COMMA && d !== LBRACKET && d !== RBRACKET && d !== LBRACE && d !== RBRACE;
    }
    case 63: // ?
    case COLON:
    case COMMA:
    case LBRACKET:
    case RBRACKET:
    case LBRACE:
    case RBRACE:
    case HASH:
    case 38: // &
    case 42: // *
    case 33: // !
    case 124: // |
    case 62: // >
    case SQUOTE:
    case DQUOTE:
    case 37: // %
    case 64: // @
    case 96: // `
    case SPACE:
      return false;
    default:
      return true;
  }
}

/** A plain scalar typed by the YAML 1.2 core schema, as the `yaml` library resolves it. */
export function resolvePlain(s: string): unknown {
  if (s.length === 0) return null;
  const c = s.charCodeAt(0);
  // Only these can start anything but a string.
  if (
    !(
      (c >= 48 && c <= 57) ||
      c === 43 ||
      c === DASH ||
      c === 46 ||
      c === 126 ||
      /[nNtTfF]/.test(s[0] as string)
    )
  )
    return s;
  if (/^(?:~|[Nn]ull|NULL)$/.test(s)) return null;
  if (/^(?:[Tt]rue|TRUE)$/.test(s)) return true;
  if (/^(?:[Ff]alse|FALSE)$/.test(s)) return false;
  if (/^0o[0-7]+$/.test(s)) return Number.parseInt(s.slice(2), 8);
  if (/^[-+]?[0-9]+$/.test(s)) return Number.parseInt(s, 10);
  if (/^0x[0-9a-fA-F]+$/.test(s)) return Number.parseInt(s.slice(2), 16);
  if (/^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/.test(s))
    return s.slice(-3).toLowerCase() === "nan"
      ? Number.NaN
      : s[0] === "-"
        ? Number.NEGATIVE_INFINITY
        : Number.POSITIVE_INFINITY;
  if (/^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/.test(s)) return Number.parseFloat(s);
  if (/^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/.test(s)) return Number.parseFloat(s);
  return s;
}

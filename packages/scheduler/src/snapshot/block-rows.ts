/*
 * A block of tasks read a row at a time from its line, for a read of a few tasks (`why`, a page
 * of `tasks`), which needs one or two of a block's 4,096 tasks: parsing the whole line made every
 * id and number of the block (most of such a read's time at 1,000,000 tasks, 25 blocks for a
 * page). Here the line is stepped through with regular expressions, which run as native code
 * from a command's first call, 64 values a step: each column's start and the start of every
 * 64th value are noted, and only the values of the rows asked for are parsed.
 *
 * Only the common line is read so: columns of plain values (strings without escapes, numbers,
 * null), `{ "same": value }` columns, no extra fields, no task written whole. For any other,
 * `BlockRows.of` gives null and the block is parsed whole.
 */

import { SAME_COLUMNS, TASK_FIELDS, type TaskBlock } from "./columns.js";

/** A plain value: a string without escapes, a number, true, false or null. */
const VALUE = String.raw`(?:"[^"\\]*"|-?[0-9][0-9.eE+-]*|true|false|null)`;
/** Values a step. */
const STEP = 64;
const steps: RegExp[] = [];
/** `count` values, each with the comma after it. */
function skip(count: number): RegExp {
  let re = steps[count];
  if (re === undefined) {
    re = new RegExp(`(?:${VALUE},){${count}}`, "y");
    steps[count] = re;
  }
  return re;
}
const ONE = new RegExp(VALUE, "y");
const NAME = /"([A-Za-z]+)":/y;
const SAME = new RegExp(`\\{"same":(${VALUE})\\}`, "y");
const EMPTY = /\{\}/y;

/** Where the regular expression matches at `at` ends, or -1. */
function matchEnd(re: RegExp, text: string, at: number): number {
  re.lastIndex = at;
  return re.test(text) ? re.lastIndex : -1;
}

/** A column of plain values: the start of every STEP-th value, and how many values it holds. */
interface Column {
  readonly marks: number[];
  readonly n: number;
}

/** The columns in the order the column writer writes them. */
const ORDER = ["id", "keyParts", "key", "decl", "parents", "parentRefs", ...TASK_FIELDS, "extras", "whole"];

export class BlockRows {
  private readonly columns = new Map<string, Column>();
  /** The columns written `{ "same": value }`, each as its one value. */
  private readonly same = new Map<string, unknown>();
  readonly keyParts: string[] = [];
  /** Tasks in the block. */
  n = 0;
  /** Where each task's parents start in `parentRefs` (made when first needed). */
  private refsFrom: Int32Array | null = null;

  private constructor(private readonly t: string) {}

  /** The block of this line read by rows, or null if it is not of the common kind (see above). */
  static of(line: string): BlockRows | null {
    const rows = new BlockRows(line);
    return rows.walk() ? rows : null;
  }

  private walk(): boolean {
    const t = this.t;
    let q = 1;
    if (t.charCodeAt(0) !== 123) return false;
    for (const [k, name] of ORDER.entries()) {
      if (k > 0) {
        if (t.charCodeAt(q) !== 44) return false;
        q += 1;
      }
      NAME.lastIndex = q;
      const named = NAME.exec(t);
      if (named === null || named[1] !== name) return false;
      q = NAME.lastIndex;
      if (name === "extras" || name === "whole") {
        q = matchEnd(EMPTY, t, q);
      } else if (t.charCodeAt(q) === 91) {
        q = this.column(name, q);
      } else {
        SAME.lastIndex = q;
        const same = SAME.exec(t);
        if (same === null || !(SAME_COLUMNS as readonly string[]).includes(name)) return false;
        this.same.set(name, JSON.parse(same[1] as string));
        q = SAME.lastIndex;
      }
      if (q < 0) return false;
    }
    if (q !== t.length - 1 || t.charCodeAt(q) !== 125) return false;
    const n = this.columns.get("id")?.n ?? -1;
    for (const [name, c] of this.columns) {
      const expected = name === "key" ? 3 * n : name === "keyParts" || name === "parentRefs" ? c.n : n;
      if (c.n !== expected) return false;
    }
    this.n = n;
    const parts = this.columns.get("keyParts") as Column;
    for (let k = 0; k < parts.n; k++) {
      const part = this.at("keyParts", k);
      if (typeof part !== "string" || part.includes("/")) return false;
      this.keyParts.push(part);
    }
    return n > 0;
  }

  /** Steps through the array of plain values at `p` (its "["); returns just past its "]". */
  private column(name: string, p: number): number {
    const t = this.t;
    const marks: number[] = [];
    let q = p + 1;
    let n = 0;
    if (t.charCodeAt(q) === 93) {
      this.columns.set(name, { marks, n });
      return q + 1;
    }
    const step = skip(STEP);
    for (;;) {
      if (n % STEP === 0) marks.push(q);
      const next = n % STEP === 0 ? matchEnd(step, t, q) : -1;
      if (next >= 0) {
        q = next;
        n += STEP;
        continue;
      }
      // Fewer than STEP values with a comma after each: one at a time, to the last.
      const end = matchEnd(ONE, t, q);
      if (end < 0) return -1;
      n += 1;
      if (t.charCodeAt(end) === 93) {
        this.columns.set(name, { marks, n });
        return end + 1;
      }
      if (t.charCodeAt(end) !== 44) return -1;
      q = end + 1;
    }
  }

  /** The value at place `k` of an array column. */
  private at(name: string, k: number): unknown {
    const c = this.columns.get(name);
    if (c === undefined || k < 0 || k >= c.n)
      throw new Error(`a block of tasks has no value ${k} of "${name}"`);
    let q = c.marks[Math.floor(k / STEP)] as number;
    // The values between the mark and it, in steps of 32, 16, ... 1 (a few expressions in all).
    const rest = k % STEP;
    for (let bit = STEP >> 1; bit > 0 && q >= 0; bit >>= 1)
      if (rest & bit) q = matchEnd(skip(bit), this.t, q);
    const end = q < 0 ? -1 : matchEnd(ONE, this.t, q);
    if (q < 0 || end < 0) throw new Error(`a block of tasks has no value ${k} of "${name}"`);
    return JSON.parse(this.t.slice(q, end));
  }

  /** A task's value of a column (a column written as one value: that value). */
  private value(name: string, i: number): unknown {
    return this.same.has(name) ? this.same.get(name) : this.at(name, i);
  }

  /** Where the parents of task `i` start in `parentRefs`. */
  private refsAt(i: number): number {
    if (this.refsFrom === null) {
      const from = new Int32Array(this.n + 1);
      if (this.same.has("parents")) {
        const each = this.same.get("parents") as number;
        for (let k = 0; k < this.n; k++) from[k + 1] = (k + 1) * each;
      } else {
        const c = this.columns.get("parents") as Column;
        const start = c.marks[0] as number;
        const counts = JSON.parse(`[${this.t.slice(start, this.t.indexOf("]", start))}]`) as unknown[];
        if (counts.length !== this.n)
          throw new Error('a block of tasks has no column "parents" as long as its ids');
        for (let k = 0; k < this.n; k++) {
          const count = counts[k];
          if (typeof count !== "number" || !Number.isInteger(count) || count < 0)
            throw new Error("the parents of a task are not in its block");
          from[k + 1] = (from[k] as number) + count;
        }
      }
      if (from[this.n] !== (this.columns.get("parentRefs") as Column).n)
        throw new Error("a block of tasks holds more parents than its tasks name");
      this.refsFrom = from;
    }
    return this.refsFrom[i] as number;
  }

  /** The parts of task `i`'s key, as a block of one task holds them (for `blockKey`). */
  keyOf(i: number): TaskBlock {
    const key = [this.at("key", 3 * i), this.at("key", 3 * i + 1), this.at("key", 3 * i + 2)] as number[];
    return { keyParts: this.keyParts, key } as TaskBlock;
  }

  /** The id of task `i`. */
  id(i: number): unknown {
    return this.at("id", i);
  }

  /**
   * Task `i` alone as a block of one task (its parents' references in `parentRefs`, its key's
   * parts in the block's table), as `blockKey` and `taskOfRow` take it.
   */
  row(i: number): TaskBlock {
    if (i < 0 || i >= this.n) throw new Error(`a block of tasks has no task ${i}`);
    const one = (name: string) => [this.value(name, i)];
    const count = this.value("parents", i);
    if (typeof count !== "number" || !Number.isInteger(count) || count < 0)
      throw new Error("the parents of a task are not in its block");
    const from = this.refsAt(i);
    const parentRefs: Array<number | string> = [];
    for (let j = 0; j < count; j++) parentRefs.push(this.at("parentRefs", from + j) as number | string);
    const row = {
      id: one("id"),
      keyParts: this.keyParts,
      key: this.keyOf(i).key,
      decl: one("decl"),
      parents: [count],
      parentRefs,
      extras: {},
      whole: {},
    } as Record<string, unknown>;
    for (const f of TASK_FIELDS) row[f] = one(f);
    return row as unknown as TaskBlock;
  }
}

/** A block parsed whole (one BlockRows does not read), with the same reads of its rows. */
export class ParsedRows {
  readonly n: number;
  private readonly refsFrom: Int32Array;

  constructor(private readonly b: TaskBlock) {
    this.n = b.id.length;
    const from = new Int32Array(this.n + 1);
    for (let i = 0; i < this.n; i++) from[i + 1] = (from[i] as number) + (b.parents[i] as number);
    this.refsFrom = from;
  }

  keyOf(i: number): TaskBlock {
    const { key } = this.b;
    return { keyParts: this.b.keyParts, key: [key[3 * i], key[3 * i + 1], key[3 * i + 2]] } as TaskBlock;
  }

  id(i: number): unknown {
    return this.b.id[i];
  }

  row(i: number): TaskBlock {
    const b = this.b;
    const from = this.refsFrom[i] as number;
    const row = {
      id: [b.id[i]],
      keyParts: b.keyParts,
      key: this.keyOf(i).key,
      decl: [b.decl[i]],
      parents: [b.parents[i]],
      parentRefs: b.parentRefs.slice(from, from + (b.parents[i] as number)),
      extras: b.extras[i] !== undefined ? { 0: b.extras[i] } : {},
      whole: b.whole[i] !== undefined ? { 0: b.whole[i] } : {},
    } as Record<string, unknown>;
    for (const f of TASK_FIELDS) row[f] = [b[f][i]];
    return row as unknown as TaskBlock;
  }
}

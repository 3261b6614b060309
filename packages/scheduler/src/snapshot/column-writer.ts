import type { SnapshotTask } from "@chronolog/core";
import { keyText, SAME_COLUMNS, TASK_BLOCK, TASK_FIELDS, type TaskBlock } from "./columns.js";

const emptyBlock = (): TaskBlock => ({
  id: [],
  keyParts: [],
  key: [],
  decl: [],
  parents: [],
  parentRefs: [],
  status: [],
  logicalDate: [],
  prevIntervalStart: [],
  nextRunDate: [],
  failure: [],
  backfill: [],
  revision: [],
  movedAt: [],
  extras: {},
  whole: {},
});

/**
 * Writes the tasks. Tasks declared alike (a schedule, an operator, a retry policy in common)
 * differ only in their key and parents, so a declaration is written once, with its key and
 * parents left out; its tasks name it by its place. Their instants (the same few for most
 * tasks) are places in a table of them, and a parent written before its child is its place in
 * the file. The tasks go in blocks of columns: a block is read with one parse, where a line per
 * task cost a parse, an array and a string per task. A record that would not read back exactly
 * (fields in another order, a key that is not its id) is written whole.
 */
export class ColumnWriter {
  private readonly index = new Map<string, number>();
  /** The place of each declaration object met so far in `specs`. */
  private readonly byObject = new Map<object, number>();
  /** The declarations' shared parts, as JSON, in the order of their indexes. */
  readonly specs: string[] = [];
  private readonly instantIndex = new Map<string, number>();
  /** The instants the tasks hold, in the order of their indexes. */
  readonly instants: string[] = [];
  /** Each task written compactly (its key is what its id says): its place in the file. */
  readonly places = new Map<string, number>();
  /** The ids of the tasks written whole. */
  readonly wholeIds = new Set<string>();
  /**
   * For the checkpoint's index, the tasks that name each id as a parent (their places, in
   * order): by the parent's place when it was written before them, else by its id.
   */
  readonly childrenByPlace: Array<number[] | undefined> = [];
  readonly childrenById = new Map<string, number[]>();
  private written = 0;
  readonly lines: string[] = [];
  private block = emptyBlock();
  /** The block's key parts, by their text. */
  private parts = new Map<string, number>();

  constructor(private readonly blockSize = TASK_BLOCK) {}

  private instant(text: string): number {
    let at = this.instantIndex.get(text);
    if (at === undefined) {
      at = this.instants.length;
      this.instantIndex.set(text, at);
      this.instants.push(text);
    }
    return at;
  }

  add(t: SnapshotTask): void {
    const b = this.block;
    const at = b.id.length;
    if (!this.compact(t, b)) {
      b.id.push(t.id);
      b.key.push(-1, -1, -1);
      b.decl.push(-1);
      b.parents.push(0);
      b.status.push(t.status);
      b.logicalDate.push(0);
      b.prevIntervalStart.push(null);
      b.nextRunDate.push(0);
      b.failure.push(null);
      b.backfill.push(null);
      b.revision.push(0);
      b.movedAt.push(0);
      b.whole[at] = t;
      this.wholeIds.add(t.id);
      for (const p of t.parents) this.child(`${p.project}/${p.account}/${p.name}/${p.partition}`);
    } else {
      this.places.set(t.id, this.written);
      const refs = b.parentRefs;
      for (let r = refs.length - (b.parents[at] as number); r < refs.length; r++)
        this.child(refs[r] as number | string);
    }
    this.written += 1;
    if (b.id.length >= this.blockSize) this.flush();
  }

  /** Notes the task being written as a child of a parent: its place, or its id. */
  private child(parent: number | string): void {
    const i = this.written;
    let list: number[] | undefined;
    if (typeof parent === "number") {
      list = this.childrenByPlace[parent];
      if (list === undefined) {
        this.childrenByPlace[parent] = [i];
        return;
      }
    } else {
      // A parent written whole, or after its child, or never declared.
      const place = this.places.get(parent);
      if (place !== undefined) {
        this.child(place);
        return;
      }
      list = this.childrenById.get(parent);
      if (list === undefined) {
        this.childrenById.set(parent, [i]);
        return;
      }
    }
    if (list[list.length - 1] !== i) list.push(i);
  }

  /** Ends the last block. */
  flush(): void {
    if (this.block.id.length === 0) return;
    const b = this.block as unknown as Record<string, unknown>;
    // A column of one value (tasks declared alike, on one schedule, at one revision) is written
    // as that value: most of a block's columns are, and are then not parsed a task at a time.
    for (const column of SAME_COLUMNS) {
      const values = b[column] as unknown[];
      const first = values[0];
      if ((typeof first !== "object" || first === null) && values.every((v) => v === first))
        b[column] = { same: first };
    }
    this.lines.push(JSON.stringify(this.block));
    this.block = emptyBlock();
    this.parts = new Map();
  }

  /** The place of a key's part in the block's table. */
  private part(text: string): number {
    let at = this.parts.get(text);
    if (at === undefined) {
      at = this.block.keyParts.length;
      this.parts.set(text, at);
      this.block.keyParts.push(text);
    }
    return at;
  }

  /** Adds the task to the block in its compact form, if it reads back exactly from it. */
  private compact(t: SnapshotTask, b: TaskBlock): boolean {
    const names = Object.keys(t);
    if (names[0] !== "key" || names[1] !== "id" || names[2] !== "spec" || names[3] !== "parents")
      return false;
    for (const [i, f] of TASK_FIELDS.entries()) if (names[4 + i] !== f || t[f] === undefined) return false;
    if (keyText(t.key) !== t.id) return false;
    if (typeof t.logicalDate !== "string" || typeof t.nextRunDate !== "string") return false;
    if (t.prevIntervalStart !== null && typeof t.prevIntervalStart !== "string") return false;
    if (!Array.isArray(t.parents)) return false;
    const refs: Array<number | string> = [];
    for (const p of t.parents) {
      const text = keyText(p);
      if (text === null) return false;
      refs.push(this.places.get(text) ?? text);
    }
    let extras: Record<string, unknown> | null = null;
    for (const name of names.slice(4 + TASK_FIELDS.length)) {
      const value = (t as unknown as Record<string, unknown>)[name];
      if (value === undefined) return false;
      extras ??= {};
      extras[name] = value;
    }
    // The declaration, but for its key and parents: tasks declared alike hold one object, so
    // most are found by the object, without writing it out again.
    let decl = this.byObject.get(t.spec);
    if (decl === undefined) {
      const shared = JSON.stringify(t.spec);
      decl = this.index.get(shared);
      if (decl === undefined) {
        decl = this.specs.length;
        this.index.set(shared, decl);
        this.specs.push(shared);
      }
      this.byObject.set(t.spec, decl);
    }
    if (extras !== null) b.extras[b.id.length] = extras;
    b.id.push(t.id);
    b.key.push(this.part(t.key.project), this.part(t.key.account), this.part(t.key.partition));
    b.decl.push(decl);
    b.parents.push(refs.length);
    for (const r of refs) b.parentRefs.push(r);
    b.status.push(t.status);
    b.logicalDate.push(this.instant(t.logicalDate));
    b.prevIntervalStart.push(t.prevIntervalStart === null ? null : this.instant(t.prevIntervalStart));
    b.nextRunDate.push(this.instant(t.nextRunDate));
    b.failure.push(t.failure);
    b.backfill.push(t.backfill);
    b.revision.push(counter(t.revision));
    b.movedAt.push(counter(t.movedAt));
    return true;
  }
}

/** A revision or position (a bigint's digits) as a JSON number, when it is one exactly. */
function counter(digits: string): number | string {
  const n = Number(digits);
  return Number.isSafeInteger(n) && String(n) === digits ? n : digits;
}

import { formatTaskKey } from "../keys.js";
import { findCycles } from "./cycle.js";
import type { IssueCollector } from "./issues.js";
import type { ParentRef } from "./parents.js";
import type { TaskDraft } from "./shape.js";
import { orList, TaskKeySuggester } from "./suggest.js";
import type { ExistingDeclarations } from "./validate.js";

/**
 * The fourth room: the graph of parents, over what is declared already and what these files
 * declare (a new declaration replaces a task's old parents). Every task declared here takes
 * part with the parents that could be read, whatever its other problems.
 */

/** A task declared here, with its parents that could be read. */
export interface GraphTask {
  readonly draft: TaskDraft;
  readonly parents: readonly ParentRef[];
}

/**
 * A parent declared nowhere (yet) is a warning, since another team may declare it later. A
 * cycle is an error at the parent entry of a new declaration that closes it, or a warning when
 * it is all old edges. `declared`: the keys of every task written here (a broken one too: it
 * is not missing); `fallbackFile`: where a warning that belongs to no file is reported.
 */
export function checkGraph(
  tasks: readonly GraphTask[],
  declared: Iterable<string>,
  existing: ExistingDeclarations,
  fallbackFile: string,
  issues: IssueCollector,
  /** The projects whose task keys a missing parent's suggestions may name (default: all). */
  visible?: (project: string) => boolean,
): void {
  // Every task numbered once (the known ones first), its parents as numbers: a catalogue of
  // many thousands of tasks is checked on arrays, where maps and sets of keys, entry by entry,
  // took more than a second at 100,000 tasks. The keys are looked at again only for a cycle.
  const ids = new Map<string, number>();
  const idOf = (key: string): number => {
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size;
      ids.set(key, id);
    }
    return id;
  };
  const declaredKeys = Array.isArray(declared) ? (declared as readonly string[]) : [...declared];
  const declaredIds = declaredKeys.map(idOf);
  const existingTasks = [...(existing.tasks ?? [])].map((t) => {
    const key = formatTaskKey(t.key);
    idOf(key);
    return { key, parents: t.parents.map(formatTaskKey) };
  });
  /** Keys numbered below this are declared here or already: a parent above it is missing. */
  const knownCount = ids.size;
  function* knownKeys(): Generator<string> {
    let i = 0;
    for (const k of ids.keys()) {
      if (i++ >= knownCount) return;
      if (visible === undefined || visible(k.slice(0, k.indexOf("/")))) yield k;
    }
  }
  const suggester = new TaskKeySuggester({ [Symbol.iterator]: knownKeys });
  /** Each task's parents, by number; a new declaration replaces a task's old parents. */
  const parentIds: Array<number[] | undefined> = [];
  for (const t of existingTasks) parentIds[idOf(t.key)] = t.parents.map(idOf);
  for (let i = 0; i < tasks.length; i++) {
    const t = tasks[i] as GraphTask;
    const own: number[] = [];
    for (const p of t.parents) {
      const id = idOf(p.label);
      own.push(id);
      if (id < knownCount) continue;
      const near = suggester.suggest(p.label);
      issues.warning(
        "parent_missing",
        { file: t.draft.file, path: p.path },
        `parent ${p.label} is not declared (yet)${near.length > 0 ? ` (did you mean ${orList(near)}?)` : ""}; the task will wait for it`,
        t.draft.label,
        near.length > 0 ? { suggestions: near } : undefined,
      );
    }
    // The tasks come in the order their keys are declared (validateDeclarations): a task's
    // number is then known without a lookup.
    const self = declaredKeys[i] === t.draft.label ? (declaredIds[i] as number) : idOf(t.draft.label);
    parentIds[self] = own;
  }
  if (isAcyclicByNumber(parentIds, ids.size)) return;
  reportCycles(tasks, existingTasks, fallbackFile, issues);
}

/**
 * Whether the graph of `parentIds` (each node's parents, by number, below `size`) has no cycle:
 * Kahn's algorithm, in linear time. A node is removed once all its parents are.
 */
function isAcyclicByNumber(parentIds: ReadonlyArray<readonly number[] | undefined>, size: number): boolean {
  // Each node's children, laid out one list after another (`first[n]` to `first[n + 1]`).
  const first = new Uint32Array(size + 1);
  const waiting = new Uint32Array(size);
  for (let n = 0; n < parentIds.length; n++) {
    const parents = parentIds[n];
    if (parents === undefined) continue;
    waiting[n] = parents.length;
    for (const p of parents) first[p + 1] = (first[p + 1] as number) + 1;
  }
  for (let n = 0; n < size; n++) first[n + 1] = (first[n + 1] as number) + (first[n] as number);
  const children = new Uint32Array(first[size] as number);
  const filled = first.slice(0, size);
  for (let n = 0; n < parentIds.length; n++)
    for (const p of parentIds[n] ?? []) {
      children[filled[p] as number] = n;
      filled[p] = (filled[p] as number) + 1;
    }
  const ready: number[] = [];
  for (let n = 0; n < size; n++) if (waiting[n] === 0) ready.push(n);
  let removed = 0;
  while (ready.length > 0) {
    const n = ready.pop() as number;
    removed += 1;
    for (let c = first[n] as number; c < (first[n + 1] as number); c++) {
      const child = children[c] as number;
      waiting[child] = (waiting[child] as number) - 1;
      if (waiting[child] === 0) ready.push(child);
    }
  }
  return removed === size;
}

/** The cycles of a graph that has one, each where it is blamed (see checkGraph). */
function reportCycles(
  tasks: readonly GraphTask[],
  existingTasks: ReadonlyArray<{ key: string; parents: string[] }>,
  fallbackFile: string,
  issues: IssueCollector,
): void {
  const edges = new Map<string, string[]>();
  const parentsOf = new Map<string, string[]>();
  for (const t of existingTasks) {
    edges.set(t.key, []);
    parentsOf.set(t.key, t.parents);
  }
  for (const t of tasks)
    parentsOf.set(
      t.draft.label,
      t.parents.map((p) => p.label),
    );

  // Edges point parent -> child, so a cycle reads in the order data flows.
  for (const [child, parents] of parentsOf) {
    if (!edges.has(child)) edges.set(child, []);
    for (const p of parents) {
      // Added to in place: copying the list for every child made a parent of k children cost k².
      const children = edges.get(p);
      if (children) children.push(child);
      else edges.set(p, [child]);
    }
  }
  const byKey = new Map(tasks.map((t) => [t.draft.label, t]));
  for (const cycle of findCycles(edges, (node) => byKey.has(node))) {
    const text = cycle.join(" -> ");
    // Blame the first edge of the cycle that a new declaration introduces.
    let blamed: { task: GraphTask; path: string } | undefined;
    for (let i = 0; i + 1 < cycle.length && !blamed; i++) {
      const child = byKey.get(cycle[i + 1] as string);
      const parent = child?.parents.find((p) => p.label === cycle[i]);
      if (child && parent) blamed = { task: child, path: parent.path };
    }
    if (blamed) {
      issues.error(
        "cycle",
        { file: blamed.task.draft.file, path: blamed.path },
        `dependency cycle (each task is a parent of the next): ${text}`,
        blamed.task.draft.label,
      );
    } else {
      issues.warning("cycle", { file: fallbackFile, path: "" }, `already declared dependency cycle: ${text}`);
    }
  }
}

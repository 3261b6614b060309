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
): void {
  const known = new Set<string>(declared);
  const edges = new Map<string, string[]>();
  const parentsOf = new Map<string, string[]>();
  for (const t of existing.tasks ?? []) {
    const k = formatTaskKey(t.key);
    known.add(k);
    edges.set(k, []);
    parentsOf.set(k, t.parents.map(formatTaskKey));
  }
  const suggester = new TaskKeySuggester(known);
  for (const t of tasks) {
    parentsOf.set(
      t.draft.label,
      t.parents.map((p) => p.label),
    );
    for (const p of t.parents) {
      if (known.has(p.label)) continue;
      const near = suggester.suggest(p.label);
      issues.warning(
        "parent_missing",
        { file: t.draft.file, path: p.path },
        `parent ${p.label} is not declared (yet)${near.length > 0 ? ` (did you mean ${orList(near)}?)` : ""}; the task will wait for it`,
        t.draft.label,
        near.length > 0 ? { suggestions: near } : undefined,
      );
    }
  }

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

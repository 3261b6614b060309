/*
 * The shape of a block of tasks in a snapshot file, which the column writer makes and the
 * column reader takes apart: the tasks' fields in their order, the block's columns, and the key
 * a task's id must spell for the task to be written in columns.
 */

import { formatTaskKey, type SnapshotTask, type TaskKey } from "@chronolog/core";

/** Tasks in one block line of a `lines/3` file. */
export const TASK_BLOCK = 4096;

/** A task's fields after its key, id and declaration, in the order the fold makes them. */
export const TASK_FIELDS = [
  "status",
  "logicalDate",
  "prevIntervalStart",
  "nextRunDate",
  "failure",
  "backfill",
  "revision",
  "movedAt",
] as const;

export const KEY_FIELDS = ["project", "account", "name", "partition"] as const;

/** The key as `formatTaskKey` writes it, if it reads back as the same key (else null). */
export function keyText(key: TaskKey): string | null {
  const names = Object.keys(key);
  if (names.length !== KEY_FIELDS.length) return null;
  for (const [i, f] of KEY_FIELDS.entries()) {
    const part = key[f];
    if (names[i] !== f || typeof part !== "string" || part.includes("/")) return null;
  }
  return formatTaskKey(key);
}

/**
 * A block of tasks as its line holds it: a column per field, each as long as `id`. `decl` is
 * the place of a task's declaration in the file's table (-1: the task is in `whole`, by its
 * place in the block, written whole); `parents` how many parents each names, their references
 * one after another in `parentRefs`: a number is the place in the file of a task written before
 * (its key is that task's), a string a task id. The instant fields hold places in the file's
 * table of instants; `extras` holds a task's fields past the usual ones, by its place. `key`
 * holds three numbers a task, the places of its key's project, account and partition in the
 * block's `keyParts` (the name is what its id has between them; -1 for a task written whole):
 * a key is then made without cutting its id into parts and looking each one up. A column in
 * SAME_COLUMNS whose tasks all hold one value is written `{ "same": value }`.
 */
export interface TaskBlock {
  id: string[];
  keyParts: string[];
  key: number[];
  decl: number[];
  parents: number[];
  parentRefs: Array<number | string>;
  status: string[];
  logicalDate: number[];
  prevIntervalStart: Array<number | null>;
  nextRunDate: number[];
  failure: unknown[];
  backfill: unknown[];
  revision: Array<number | string>;
  movedAt: Array<number | string>;
  extras: Record<string, Record<string, unknown>>;
  whole: Record<string, SnapshotTask>;
}

/** The columns of a block, each as long as its `id`. */
export const BLOCK_COLUMNS = ["id", "decl", "parents", ...TASK_FIELDS] as const;

/**
 * The columns a block writes as `{ "same": value }` when every task holds that value: all but
 * the ids and the positions, which differ from task to task.
 */
export const SAME_COLUMNS = BLOCK_COLUMNS.filter((c) => c !== "id" && c !== "movedAt");

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

import { z } from "zod";
import { compiled } from "./compiled.js";
import { lazySchema } from "./lazy-schema.js";

const KEY_PART = /^[A-Za-z0-9_.=:@+-]{1,128}$/;

/** What `keyPart` accepts, without it. */
const isKeyPart = (text: string | undefined): text is string => text !== undefined && KEY_PART.test(text);

/** One component of a task key: letters, digits and `_ . - = : @ +`. */
export const keyPart = lazySchema(() =>
  z
    .string()
    .min(1, "must not be empty")
    .max(128, "must be at most 128 characters")
    .regex(/^[A-Za-z0-9_.=:@+-]+$/, "may contain only letters, digits and _ . - = : @ +"),
);

export const taskKeySchema = lazySchema(() =>
  z
    .object({
      project: keyPart,
      account: keyPart,
      name: keyPart,
      partition: keyPart.default("ALL"),
    })
    .strict(),
);

export type TaskKey = z.output<typeof taskKeySchema>;

/**
 * Where a key object keeps its text once made: a property of its own, not enumerable (so not
 * in its JSON, its copies or comparisons). Keys are never changed once made, and one key object
 * is shared by every later state of it. (A WeakMap from key to text took an entry for every key
 * read from the log, most of them left at once, which the collector had to clear.)
 */
const TEXT = Symbol("chronolog.taskKeyText");

/** `project/account/name/partition`, the form used in streams, the CLI and messages. */
export function formatTaskKey(key: TaskKey): string {
  const held = (key as { [TEXT]?: string })[TEXT];
  if (held !== undefined) return held;
  const text = taskKeyText(key);
  if (Object.isExtensible(key)) Object.defineProperty(key, TEXT, { value: text });
  return text;
}

/**
 * The same text, made anew each time: for a key formatted once, as a declaration's keys are.
 * Remembering a declaration's keys too made the memo of formatTaskKey hold millions of keys
 * for a catalogue of 1,000,000 tasks, where each lookup cost tens of microseconds.
 */
export function taskKeyText(key: TaskKey): string {
  return `${key.project}/${key.account}/${key.name}/${key.partition}`;
}

/**
 * Parses `project/account/name[/partition]` (partition defaults to `ALL`).
 * Returns a description of the problem instead of throwing, so callers can name the field.
 */
export function parseTaskKey(text: string): { ok: true; key: TaskKey } | { ok: false; error: string } {
  const parts = text.split("/");
  if (parts.length < 3 || parts.length > 4) {
    return { ok: false, error: `task key "${text}" must be project/account/name[/partition]` };
  }
  const [project, account, name, partition] = parts;
  // Parts that are plainly valid need no schema (its first use compiles a parser, a few ms of
  // a short command); any other goes to the schema, which says what is wrong with it.
  if (
    isKeyPart(project) &&
    isKeyPart(account) &&
    isKeyPart(name) &&
    (partition === undefined || isKeyPart(partition))
  )
    return { ok: true, key: { project, account, name, partition: partition ?? "ALL" } };
  const parsed = compiled(taskKeySchema).safeParse({ project, account, name, partition });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, error: `task key "${text}": ${issue?.path.join(".")} ${issue?.message}` };
  }
  return { ok: true, key: parsed.data };
}

export function sameTaskKey(a: TaskKey, b: TaskKey): boolean {
  return (
    a.project === b.project && a.account === b.account && a.name === b.name && a.partition === b.partition
  );
}

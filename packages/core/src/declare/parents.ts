import { compiled } from "../compiled.js";
import { parseTaskKey, type TaskKey, taskKeySchema, taskKeyText } from "../keys.js";
import type { IssueCollector, Located } from "./issues.js";
import { isPlainObject } from "./merge.js";
import type { TaskDraft, WorkflowDraft } from "./shape.js";
import { nearestWord } from "./suggest.js";

/** A task's parent as declared: its full key, its label, and where it is written. */
export interface ParentRef {
  readonly key: TaskKey;
  readonly label: string;
  readonly path: string;
}

/**
 * A task's parents as full keys. Each is a full key (a string or an object), or inside a
 * workflow a sibling's bare name. One that is wrong is reported at its `parents[i]` and left
 * out; the others are the task's edges all the same, so a cycle through them is found now.
 */
export function resolveParents(d: TaskDraft, issues: IssueCollector): ParentRef[] {
  const parents: ParentRef[] = [];
  const list = d.decl.parents ?? [];
  // Made only for two parents or more: most tasks have fewer.
  const seen = list.length > 1 ? new Map<string, number>() : undefined;
  list.forEach((raw, i) => {
    const at = { file: d.file, path: `${d.path}.parents[${i}]` };
    const key = parseParent(raw, d.workflow, at, d.label, issues);
    if (!key) return;
    const parentLabel = taskKeyText(key);
    const dup = seen?.get(parentLabel);
    if (dup !== undefined) {
      issues.error("parent", at, `parent ${parentLabel} is listed twice (also parents[${dup}])`, d.label);
      return;
    }
    seen?.set(parentLabel, i);
    parents.push({ key, label: parentLabel, path: at.path });
  });
  return parents;
}

function parseParent(
  raw: unknown,
  wf: WorkflowDraft | undefined,
  at: Located,
  label: string,
  issues: IssueCollector,
): TaskKey | undefined {
  if (typeof raw === "string") {
    if (!raw.includes("/")) return siblingParent(raw, wf, at, label, issues);
    const parsed = parseTaskKey(raw);
    if (!parsed.ok) {
      issues.error("parent", at, `parent ${parsed.error}`, label);
      return undefined;
    }
    return parsed.key;
  }
  if (isPlainObject(raw)) {
    const parsed = compiled(taskKeySchema).safeParse(raw);
    if (!parsed.success) {
      issues.schema(at, parsed.error.issues, label);
      return undefined;
    }
    return parsed.data;
  }
  issues.error(
    "parent",
    at,
    "a parent is a task key: project/account/name[/partition] or { project, account, name, partition }",
    label,
  );
  return undefined;
}

/** A bare name: the sibling of that name in the task's workflow (its ALL partition if several). */
function siblingParent(
  name: string,
  wf: WorkflowDraft | undefined,
  at: Located,
  label: string,
  issues: IssueCollector,
): TaskKey | undefined {
  if (!wf) {
    issues.error(
      "parent",
      at,
      `parent "${name}" must be project/account/name[/partition] (bare names are for siblings in a workflow)`,
      label,
    );
    return undefined;
  }
  const candidates = wf.siblings.get(name) ?? [];
  const all = candidates.filter((k) => k.partition === "ALL");
  const chosen = all.length === 1 ? all[0] : candidates.length === 1 ? candidates[0] : undefined;
  if (!chosen) {
    const near = candidates.length === 0 ? nearestWord(name, wf.siblings.keys()) : undefined;
    issues.error(
      "parent",
      at,
      candidates.length === 0
        ? near
          ? `parent "${name}" is not a task of workflow "${wf.spec.name}" (did you mean "${near}"?)`
          : `parent "${name}" is not a task of workflow "${wf.spec.name}" (write project/account/name for a task elsewhere)`
        : `parent "${name}" is ambiguous in workflow "${wf.spec.name}": write the full key with its partition`,
      label,
    );
  }
  return chosen;
}

import type { TaskKey } from "../keys.js";
import type { ConnectionSpec, OperatorType, Secrets, TaskSpec, WorkflowSpec } from "../spec.js";
import { checkGraph } from "./graph.js";
import { type DeclarationIssue, IssueCollector } from "./issues.js";
import { checkDeclaredTasks, checkNames } from "./names.js";
import type { DeclarationSource } from "./parse.js";
import { type ResolvedTask, resolveTask } from "./resolve-task.js";
import { readShapes } from "./shape.js";

/** What is already declared (by earlier files, other teams): the checks see the union. */
export interface ExistingDeclarations {
  /** Declared tasks; `TaskSpec` fits. `operator` and `connection` let re-declared connections be checked. */
  readonly tasks?: Iterable<{
    readonly key: TaskKey;
    readonly parents: readonly TaskKey[];
    readonly connection?: string | undefined;
    readonly operator?: { readonly type: OperatorType };
    /** The workflow it belongs to, if any (see checkDeclaredTasks). */
    readonly workflow?: string | undefined;
    readonly retired?: boolean;
  }>;
  /** Declared connections; `ConnectionSpec` fits. */
  readonly connections?: Iterable<{
    readonly name: string;
    readonly operators: readonly OperatorType[];
    readonly secrets?: Secrets | undefined;
  }>;
  /** Declared workflows; `WorkflowSpec` fits. A name belongs to one project/account. */
  readonly workflows?: Iterable<{
    readonly name: string;
    readonly project: string;
    readonly account: string;
  }>;
}

/**
 * One problem a renderer found in a task's templates: the field (`operator.command`,
 * `alerts[0].http.url`), what is wrong, and where in the template's text.
 */
export interface TemplateIssue {
  readonly field?: string;
  readonly message: string;
  readonly line?: number;
  readonly column?: number;
}

/**
 * Renders the templates of one task (with its workflow's declared params) and says what does
 * not render. The core renders nothing itself: the caller brings the renderer.
 */
export type TemplateCheck = (
  spec: TaskSpec,
  params: Readonly<Record<string, string>>,
) => readonly TemplateIssue[];

export interface ValidationOptions {
  /** Checks the templates of every task whose spec could be made, problems elsewhere or not. */
  readonly checkTemplates?: TemplateCheck;
  /**
   * The projects a problem may name what is declared in (default: all): a producer whose
   * token may read only some is told of no task or owner in the others (a missing parent's
   * suggestions, a workflow name's owner).
   */
  readonly visible?: (project: string) => boolean;
}

export type DeclarationResult =
  | {
      readonly ok: true;
      readonly tasks: TaskSpec[];
      /** Where each of `tasks` (same order) is declared: `file` and its `path` in it (`tasks[0]`). */
      readonly taskLocations: ReadonlyArray<{ readonly file: string; readonly path: string }>;
      readonly connections: ConnectionSpec[];
      readonly workflows: WorkflowSpec[];
      readonly warnings: DeclarationIssue[];
    }
  | { readonly ok: false; readonly errors: DeclarationIssue[]; readonly warnings: DeclarationIssue[] };

/**
 * Validates a set of parsed declaration files against each other and against what is already
 * declared, and normalises them into specs. Pure. Any error fails the whole set: on `ok: false`
 * the caller must write nothing. Missing parents are warnings (another team may declare them
 * later); everything else listed in `DeclarationIssueCode` is an error.
 *
 * Every problem is reported in one round. The checks run room by room, each in a file of its
 * own: the shape of each item (`shape.ts`), names (`names.ts`), each task resolved
 * (`resolve-task.ts`, which says how a task is normalised), the graph of parents (`graph.ts`),
 * then the templates of each task, with the renderer `options.checkTemplates` brings; one
 * `IssueCollector` gathers what they find. Each room works on all that the rooms before it
 * could make sense of: an item with a broken shape is not resolved, but its neighbours are; a
 * task with an unknown connection still has its parents in the graph and its templates checked.
 */
export function validateDeclarations(
  docs: readonly DeclarationSource[],
  existing: ExistingDeclarations = {},
  options: ValidationOptions = {},
): DeclarationResult {
  const issues = new IssueCollector();
  const shapes = readShapes(docs, issues);
  const names = checkNames(shapes, existing, issues, options.visible);
  const resolved: ResolvedTask[] = [];
  for (const d of names.tasks.values()) resolved.push(resolveTask(d, names, issues));
  checkDeclaredTasks(existing, names, issues, options.visible);
  const declared = [...names.tasks.keys(), ...shapes.broken];
  checkGraph(resolved, declared, existing, docs[0]?.filename ?? "", issues, options.visible);
  if (options.checkTemplates) checkTemplates(resolved, options.checkTemplates, issues);

  if (issues.errorCount > 0) return { ok: false, errors: issues.errors, warnings: issues.warnings };
  const tasks: TaskSpec[] = [];
  for (const r of resolved) if (r.spec) tasks.push(r.spec);
  return {
    ok: true,
    tasks,
    taskLocations: resolved.map((r) => ({ file: r.draft.file, path: r.draft.path })),
    connections: [...names.declaredConnections.values()].map((c) => c.spec),
    workflows: [...names.declaredWorkflows.values()].map((w) => w.spec),
    warnings: issues.warnings,
  };
}

/** The templates of every task that has a spec, each problem at its field. */
function checkTemplates(resolved: readonly ResolvedTask[], check: TemplateCheck, issues: IssueCollector) {
  for (const { draft, spec } of resolved) {
    if (!spec) continue;
    for (const t of check(spec, draft.workflow?.spec.params ?? {})) {
      const path = t.field ? `${draft.path}.${t.field}` : draft.path;
      const position = t.line !== undefined ? { line: t.line, column: t.column ?? 1 } : undefined;
      const where = position ? ` (line ${position.line}, column ${position.column})` : "";
      issues.error("template", { file: draft.file, path }, `${t.message}${where}`, draft.label, position);
    }
  }
}

import { formatTaskKey } from "../keys.js";
import type { OperatorType, Secrets } from "../spec.js";
import type { IssueCollector, Located } from "./issues.js";
import type { ConnectionDraft, Shapes, TaskDraft, WorkflowDraft } from "./shape.js";
import type { ExistingDeclarations } from "./validate.js";

/**
 * The second room: names. A connection, a workflow and a task key are each declared once in a
 * set of files, and a workflow name stays with the project and account it belongs to. The
 * first declaration of a name is kept; a later one is reported where it is written.
 */

export interface Names {
  /** Every connection a task may name, with the operators it allows: declared already, or here. */
  readonly connections: ReadonlyMap<
    string,
    { readonly operators: readonly OperatorType[]; readonly secrets?: Secrets | undefined }
  >;
  /** The connections declared here, each at its first declaration. */
  readonly declaredConnections: ReadonlyMap<string, ConnectionDraft>;
  /** The workflows declared here, each at its first declaration. */
  readonly declaredWorkflows: ReadonlyMap<string, WorkflowDraft>;
  /** The tasks declared here by key (`p/a/name/ALL`), each at its first declaration, in order. */
  readonly tasks: ReadonlyMap<string, TaskDraft>;
}

export function checkNames(
  shapes: Shapes,
  existing: ExistingDeclarations,
  issues: IssueCollector,
  visible?: (project: string) => boolean,
): Names {
  const connections = new Map<
    string,
    { operators: readonly OperatorType[]; secrets?: Secrets | undefined }
  >();
  for (const c of existing.connections ?? []) {
    connections.set(c.name, { operators: c.operators, secrets: c.secrets });
  }
  const declaredConnections = new Map<string, ConnectionDraft>();
  for (const c of shapes.connections) {
    const first = declaredConnections.get(c.spec.name);
    if (first) {
      issues.error(
        "duplicate",
        at(c, "name"),
        `connection "${c.spec.name}" is declared twice (also at ${first.file}: ${first.path})`,
      );
      continue;
    }
    declaredConnections.set(c.spec.name, c);
    connections.set(c.spec.name, { operators: c.spec.operators, secrets: c.spec.secrets });
  }

  const existingWorkflows = new Map<string, { project: string; account: string }>();
  for (const w of existing.workflows ?? []) existingWorkflows.set(w.name, w);
  const declaredWorkflows = new Map<string, WorkflowDraft>();
  for (const w of shapes.workflows) {
    const first = declaredWorkflows.get(w.spec.name);
    if (first) {
      issues.error(
        "duplicate",
        at(w, "name"),
        `workflow "${w.spec.name}" is declared twice (also at ${first.file}: ${first.path})`,
      );
      continue;
    }
    declaredWorkflows.set(w.spec.name, w);
    const old = existingWorkflows.get(w.spec.name);
    if (old && (old.project !== w.spec.project || old.account !== w.spec.account)) {
      issues.error(
        "workflow",
        at(w, "name"),
        visible === undefined || visible(old.project)
          ? `workflow "${w.spec.name}" already belongs to ${old.project}/${old.account}; workflow names are unique`
          : `workflow "${w.spec.name}" already belongs to another project; workflow names are unique`,
      );
    }
  }

  // Task keys are unique across every file of the set.
  const tasks = new Map<string, TaskDraft>();
  for (const d of shapes.tasks) {
    const first = tasks.get(d.label);
    if (first) {
      issues.error(
        "duplicate",
        at(d, "name"),
        `duplicate task key (also declared at ${first.file}: ${first.path})`,
        d.label,
      );
      continue;
    }
    tasks.set(d.label, d);
  }
  return { connections, declaredConnections, declaredWorkflows, tasks };
}

/**
 * What a set may not do to the tasks already declared, unless it declares them again too,
 * checked in one walk of them (a catalogue may hold a million):
 *
 * - A connection declared again must still allow the operators of its tasks.
 * - A task of a workflow is moved out of it (into another workflow, or out of any) only by a
 *   set that declares that workflow too, without it: taken by a declaration of another
 *   workflow or a task alone, it would leave that workflow's declaration naming a task it no
 *   longer holds (empty, perhaps, and its runs waiting on it), changed by a producer that did
 *   not declare it, perhaps of another project.
 */
export function checkDeclaredTasks(
  existing: ExistingDeclarations,
  names: Names,
  issues: IssueCollector,
  visible?: (project: string) => boolean,
): void {
  let projectOf: Map<string, string> | undefined;
  for (const t of existing.tasks ?? []) {
    // A connection declared again that no longer allows the task's operator.
    const operator = t.operator?.type;
    const c = t.connection && operator ? names.declaredConnections.get(t.connection) : undefined;
    const allowed = c ? names.connections.get(c.spec.name)?.operators : undefined;
    const refused =
      operator !== undefined && allowed !== undefined && allowed.length > 0 && !allowed.includes(operator);
    const workflow =
      t.workflow !== undefined && !t.retired && !names.declaredWorkflows.has(t.workflow)
        ? t.workflow
        : undefined;
    if (!refused && workflow === undefined) continue;
    const label = formatTaskKey(t.key);
    const d = names.tasks.get(label);
    if (refused && c && !d)
      issues.error(
        "connection_operator",
        at(c, "operators"),
        `connection "${t.connection}" would no longer allow operator ${operator}, used by this already declared task`,
        label,
      );
    if (workflow === undefined || !d || d.workflow?.spec.name === workflow) continue;
    projectOf ??= new Map([...(existing.workflows ?? [])].map((w) => [w.name, w.project]));
    const owner = projectOf.get(workflow);
    // (A workflow of a project the producer may not read is not named.)
    if (visible !== undefined && (owner === undefined || !visible(owner))) {
      issues.error("workflow", at(d, "name"), `${label} is a task of a workflow of another project`, label);
      continue;
    }
    issues.error(
      "workflow",
      at(d, "name"),
      `${label} is a task of workflow "${workflow}": to move it ${d.workflow ? `into workflow "${d.workflow.spec.name}"` : "out of it"}, declare "${workflow}" without it in the same declaration`,
      label,
    );
  }
}

function at(item: Located, field: string): Located {
  return { file: item.file, path: `${item.path}.${field}` };
}

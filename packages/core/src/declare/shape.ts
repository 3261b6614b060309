import { compiled } from "../compiled.js";
import { type TaskKey, taskKeyText } from "../keys.js";
import {
  type AlertSink,
  alertSinkSchema,
  type ConnectionSpec,
  httpUrlProblem,
  type OperatorSpec,
  operatorSchema,
  paramEnvName,
  type WorkflowSpec,
  workflowSpecSchema,
} from "../spec.js";
import { type IssueCollector, joinPath, type Located } from "./issues.js";
import { isPlainObject } from "./merge.js";
import type { DeclarationSource } from "./parse.js";
import { checkSchedule } from "./schedule-check.js";
import {
  type DeclaredStandaloneTask,
  type DeclaredWorkflow,
  type DeclaredWorkflowTask,
  declarationDocumentSchema,
  declaredConnectionSchema,
  declaredStandaloneTaskSchema,
  declaredWorkflowSchema,
  declaredWorkflowTaskSchema,
} from "./schema.js";

/**
 * The first room of validation: the shape of each file and of each item in it, against the
 * schemas. What is well shaped comes out as drafts for the later rooms (names, resolving each
 * task, the graph); what is not is reported and left out, item by item, so one broken item
 * hides none of the problems of its neighbours.
 */

export interface ConnectionDraft extends Located {
  readonly spec: ConnectionSpec;
}

export interface WorkflowDraft extends Located {
  readonly decl: DeclaredWorkflow;
  readonly spec: WorkflowSpec;
  /** Siblings by name, from the raw task list (so a sibling with its own errors still resolves). */
  readonly siblings: ReadonlyMap<string, TaskKey[]>;
}

export interface TaskDraft extends Located {
  readonly decl: DeclaredWorkflowTask | DeclaredStandaloneTask;
  readonly workflow?: WorkflowDraft;
  readonly key: TaskKey;
  readonly label: string;
}

/** The well-shaped items of a set of files, in the order they are written. */
export interface Shapes {
  readonly connections: ConnectionDraft[];
  readonly workflows: WorkflowDraft[];
  readonly tasks: TaskDraft[];
  /** The keys of the tasks written with a broken shape: not missing, as parents, only broken. */
  readonly broken: Set<string>;
}

export function readShapes(docs: readonly DeclarationSource[], issues: IssueCollector): Shapes {
  const shapes: Shapes = { connections: [], workflows: [], tasks: [], broken: new Set() };
  for (const { filename, document } of docs) readDocument(filename, document, issues, shapes);
  return shapes;
}

function readDocument(file: string, document: unknown, issues: IssueCollector, shapes: Shapes): void {
  if (document === null || document === undefined) {
    issues.error("document", { file, path: "" }, "the file is empty: it declares nothing");
    return;
  }
  if (!isPlainObject(document)) {
    issues.error(
      "document",
      { file, path: "" },
      "a declaration file must be a mapping with `connections`, `workflows` and/or `tasks`",
    );
    return;
  }
  checkProtoKeys(file, document, issues);
  const top = declarationDocumentSchema.safeParse(document);
  // A problem at the top (a misspelt key, a list that is not one) hides none of the lists that
  // are lists: their items are checked all the same.
  if (!top.success) issues.schema({ file, path: "" }, top.error.issues, undefined);
  const list = (name: "connections" | "workflows" | "tasks"): readonly unknown[] => {
    const value = top.success ? top.data[name] : document[name];
    return Array.isArray(value) ? value : [];
  };

  list("connections").forEach((raw, i) => {
    const path = `connections[${i}]`;
    const parsed = compiled(declaredConnectionSchema).safeParse(
      withoutSortOrder(raw, { file, path }, issues),
    );
    if (!parsed.success) issues.schema({ file, path }, parsed.error.issues, undefined);
    else shapes.connections.push({ file, path, spec: parsed.data });
  });
  list("workflows").forEach((raw, i) => {
    readWorkflow(raw, { file, path: `workflows[${i}]` }, issues, shapes);
  });
  list("tasks").forEach((raw, i) => {
    const path = `tasks[${i}]`;
    const t = compiled(declaredStandaloneTaskSchema).safeParse(raw);
    if (!t.success) {
      reportBrokenTask(raw, { file, path }, t.error.issues, rawLabel(raw, undefined), issues, shapes);
      return;
    }
    const key = {
      project: t.data.project,
      account: t.data.account,
      name: t.data.name,
      partition: t.data.partition ?? "ALL",
    };
    shapes.tasks.push({ file, path, decl: t.data, key, label: taskKeyText(key) });
  });
}

/** Two params that a shell task would find in one environment variable (`dry-run`, `dry_run`). */
function checkParamEnvNames(params: Readonly<Record<string, string>>, at: Located, issues: IssueCollector) {
  const seen = new Map<string, string>();
  for (const name of Object.keys(params)) {
    const variable = paramEnvName(name);
    const other = seen.get(variable);
    if (other === undefined) seen.set(variable, name);
    else
      issues.error(
        "workflow",
        { file: at.file, path: `${at.path}.params.${name}` },
        `params "${other}" and "${name}" would both be given to shell tasks as ${variable}: rename one`,
      );
  }
}

function readWorkflow(raw: unknown, at: Located, issues: IssueCollector, shapes: Shapes): void {
  const parsed = compiled(declaredWorkflowSchema).safeParse(raw);
  if (!parsed.success) {
    issues.schema(at, parsed.error.issues, undefined);
    checkTasksOfBrokenWorkflow(raw, at, issues, shapes);
    return;
  }
  const decl = parsed.data;
  const spec = workflowSpecSchema.parse({
    name: decl.name,
    project: decl.project,
    account: decl.account,
    cron: decl.cron,
    timezone: decl.timezone,
    maxActiveRuns: decl.maxActiveRuns,
    maxActiveTasks: decl.maxActiveTasks,
    failurePolicy: decl.failurePolicy,
    config: decl.config ?? {},
    params: decl.params ?? {},
    alerts: parseSinks(decl.alerts, at, undefined, issues),
    ...(decl.secrets ? { secrets: decl.secrets } : {}),
  });
  const workflow: WorkflowDraft = { ...at, decl, spec, siblings: siblingsOf(decl) };
  shapes.workflows.push(workflow);
  checkParamEnvNames(spec.params, at, issues);
  checkSchedule(decl, at, undefined, issues);

  decl.tasks.forEach((rawTask, j) => {
    const taskAt = { file: at.file, path: `${at.path}.tasks[${j}]` };
    const label = rawLabel(rawTask, decl);
    const t = compiled(declaredWorkflowTaskSchema).safeParse(rawTask);
    if (!t.success) {
      reportBrokenTask(rawTask, taskAt, t.error.issues, label, issues, shapes);
      return;
    }
    const key = {
      project: t.data.project ?? decl.project,
      account: t.data.account ?? decl.account,
      name: t.data.name,
      partition: t.data.partition ?? "ALL",
    };
    shapes.tasks.push({ ...taskAt, decl: t.data, workflow, key, label: taskKeyText(key) });
  });
}

/** Each task of a workflow by name, as written (a task with problems of its own included). */
function siblingsOf(decl: DeclaredWorkflow): Map<string, TaskKey[]> {
  const siblings = new Map<string, TaskKey[]>();
  for (const rawTask of decl.tasks) {
    if (!isPlainObject(rawTask) || typeof rawTask.name !== "string") continue;
    const key = {
      project: typeof rawTask.project === "string" ? rawTask.project : decl.project,
      account: typeof rawTask.account === "string" ? rawTask.account : decl.account,
      name: rawTask.name,
      partition: typeof rawTask.partition === "string" ? rawTask.partition : "ALL",
    };
    siblings.set(key.name, [...(siblings.get(key.name) ?? []), key]);
  }
  return siblings;
}

/**
 * The tasks of a workflow that is itself broken cannot inherit from it, so they are not
 * resolved; their own shape and operator are still checked, so they need no second round.
 */
function checkTasksOfBrokenWorkflow(raw: unknown, at: Located, issues: IssueCollector, shapes: Shapes): void {
  if (!isPlainObject(raw) || !Array.isArray(raw.tasks)) return;
  const wf = {
    project: typeof raw.project === "string" ? raw.project : undefined,
    account: typeof raw.account === "string" ? raw.account : undefined,
  };
  raw.tasks.forEach((rawTask, j) => {
    const taskAt = { file: at.file, path: `${at.path}.tasks[${j}]` };
    const t = compiled(declaredWorkflowTaskSchema).safeParse(rawTask);
    const label = rawLabel(rawTask, wf);
    reportBrokenTask(rawTask, taskAt, t.success ? [] : t.error.issues, label, issues, shapes);
  });
}

/** A task that will not be resolved: its schema problems, and its operator's. */
function reportBrokenTask(
  raw: unknown,
  at: Located,
  schemaIssues: Parameters<IssueCollector["schema"]>[1],
  label: string | undefined,
  issues: IssueCollector,
  shapes: Shapes,
): void {
  if (label !== undefined) shapes.broken.add(label);
  issues.schema(at, schemaIssues, label);
  if (isPlainObject(raw)) checkOperator(raw.operator, at, label, issues);
}

/** Operator: `{ type, ...fields, config? }`; `config` is the inline config level. */
export function checkOperator(
  raw: unknown,
  task: Located,
  label: string | undefined,
  issues: IssueCollector,
): { operator: OperatorSpec | undefined; inline: Record<string, unknown> | undefined } {
  const at: Located = { file: task.file, path: `${task.path}.operator` };
  let operator: OperatorSpec | undefined;
  let inline: Record<string, unknown> | undefined;
  if (raw === undefined) {
    issues.error("required", at, "operator is required, e.g. { type: shell, command: ... }", label);
  } else if (!isPlainObject(raw)) {
    issues.error("operator", at, "operator must be a mapping such as { type: noop }", label);
  } else {
    const { config: inlineConfig, ...fields } = raw;
    if (inlineConfig !== undefined && !isPlainObject(inlineConfig)) {
      issues.error(
        "operator",
        { file: at.file, path: `${at.path}.config` },
        "operator.config must be a mapping",
        label,
      );
    } else {
      inline = inlineConfig;
    }
    const parsed = compiled(operatorSchema).safeParse(fields);
    if (parsed.success) operator = parsed.data;
    else issues.schema(at, parsed.error.issues, label);
    const problem = operator?.type === "http" ? httpUrlProblem(operator.url) : undefined;
    if (problem) {
      issues.error("operator", { file: at.file, path: `${at.path}.url` }, problem, label);
      operator = undefined;
    }
  }
  return { operator, inline };
}

/** Alert sinks, each checked against its schema (errors at `at.alerts[k]`); the valid ones. */
export function parseSinks(
  raw: readonly unknown[] | undefined,
  at: Located,
  task: string | undefined,
  issues: IssueCollector,
): AlertSink[] {
  const out: AlertSink[] = [];
  (raw ?? []).forEach((sink, k) => {
    const parsed = compiled(alertSinkSchema).safeParse(sink);
    const where = `${at.path}.alerts[${k}]`;
    const problem = parsed.success && parsed.data.http ? httpUrlProblem(parsed.data.http.url) : undefined;
    if (problem) issues.error("schema", { file: at.file, path: `${where}.http.url` }, problem, task);
    else if (parsed.success) out.push(parsed.data);
    else issues.schema({ file: at.file, path: where }, parsed.error.issues, task);
  });
  return out;
}

/**
 * `__proto__` keys are refused wherever they appear: they would mean different things to
 * different consumers (and to `zod`, which drops them silently).
 */
function checkProtoKeys(file: string, document: Record<string, unknown>, issues: IssueCollector): void {
  const visit = (v: unknown, path: string): void => {
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        visit(x, `${path}[${i}]`);
      });
    } else if (isPlainObject(v)) {
      for (const k of Object.keys(v)) {
        const p = joinPath(path, k);
        if (k === "__proto__") {
          issues.error(
            "config",
            { file, path: p },
            'the key "__proto__" is not allowed',
            labelAt(document, p),
          );
        } else visit(v[k], p);
      }
    }
  };
  visit(document, "");
}

/** The key of the task a raw document path lies in (`tasks[i]…`, `workflows[i].tasks[j]…`). */
function labelAt(document: Record<string, unknown>, path: string): string | undefined {
  const standalone = /^tasks\[(\d+)\]/.exec(path);
  if (standalone) {
    const tasks = document.tasks;
    return Array.isArray(tasks) ? rawLabel(tasks[Number(standalone[1])], undefined) : undefined;
  }
  const inWorkflow = /^workflows\[(\d+)\]\.tasks\[(\d+)\]/.exec(path);
  if (!inWorkflow) return undefined;
  const workflows = document.workflows;
  const wf = Array.isArray(workflows) ? workflows[Number(inWorkflow[1])] : undefined;
  if (!isPlainObject(wf) || !Array.isArray(wf.tasks)) return undefined;
  return rawLabel(wf.tasks[Number(inWorkflow[2])], {
    project: typeof wf.project === "string" ? wf.project : undefined,
    account: typeof wf.account === "string" ? wf.account : undefined,
  });
}

/** The key of a task as written, even before its shape is checked; undefined without a name. */
function rawLabel(
  raw: unknown,
  wf: { project?: string | undefined; account?: string | undefined } | undefined,
): string | undefined {
  if (!isPlainObject(raw)) return undefined;
  const part = (v: unknown, fallback: string | undefined) => (typeof v === "string" ? v : fallback);
  const project = part(raw.project, wf?.project);
  const account = part(raw.account, wf?.account);
  const name = part(raw.name, undefined);
  // Name the task even when its project or account is missing (`p/?/name/ALL`).
  if (name === undefined) return undefined;
  return `${project ?? "?"}/${account ?? "?"}/${name}/${part(raw.partition, "ALL")}`;
}

/**
 * A connection's `sortOrder`, which nothing ever read, is said and left out: the tasks'
 * priorities order every connection's waiters (higher first, then the oldest interval).
 */
function withoutSortOrder(raw: unknown, at: Located, issues: IssueCollector): unknown {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw) || !("sortOrder" in raw)) return raw;
  const { sortOrder: _dropped, ...rest } = raw as Record<string, unknown>;
  issues.warning(
    "unknown_field",
    { file: at.file, path: `${at.path}.sortOrder` },
    "sortOrder is no longer read (it never changed the order): a connection's free slots go to the highest priority first, then the oldest interval; set priority on tasks or workflows, and remove sortOrder",
  );
  return rest;
}

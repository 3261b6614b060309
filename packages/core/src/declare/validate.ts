import { CronExpressionParser } from "cron-parser";
import { remember } from "../cache.js";
import { compiled } from "../compiled.js";
import type { FieldIssue } from "../errors.js";
import { ValidationError } from "../errors.js";
import { formatTaskKey, parseTaskKey, type TaskKey, taskKeySchema } from "../keys.js";
import {
  type AlertSink,
  alertSinkSchema,
  type ConnectionSpec,
  type OperatorSpec,
  type OperatorType,
  operatorSchema,
  type TaskSpec,
  type TaskSpecInput,
  taskSpecSchema,
  type WorkflowSpec,
  workflowSpecSchema,
} from "../spec.js";
import { findCycles } from "./cycle.js";
import { isPlainObject, mergeTaskConfig } from "./merge.js";
import type { DeclarationSource } from "./parse.js";
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
import { suggestField } from "./suggest.js";

export type DeclarationIssueCode =
  | "document"
  | "unknown_field"
  | "schema"
  | "required"
  | "cron"
  | "timezone"
  | "date"
  | "operator"
  | "config"
  | "connection_unknown"
  | "connection_operator"
  | "duplicate"
  | "parent"
  | "parent_missing"
  | "cycle"
  | "workflow";

/**
 * One problem found in a set of declaration files. `path` is the field inside `file`
 * (`workflows[0].tasks[2].cron`); `task` is the key of the task concerned, when one is, and the
 * message starts with it too so the plain `path: message` text names both.
 */
export interface DeclarationIssue extends FieldIssue {
  readonly severity: "error" | "warning";
  readonly code: DeclarationIssueCode;
  readonly file: string;
  readonly task?: string;
}

/** What is already declared (by earlier files, other teams): the checks see the union. */
export interface ExistingDeclarations {
  /** Declared tasks; `TaskSpec` fits. `operator` and `connection` let re-declared connections be checked. */
  readonly tasks?: Iterable<{
    readonly key: TaskKey;
    readonly parents: readonly TaskKey[];
    readonly connection?: string | undefined;
    readonly operator?: { readonly type: OperatorType };
  }>;
  /** Declared connections; `ConnectionSpec` fits. */
  readonly connections?: Iterable<{ readonly name: string; readonly operators: readonly OperatorType[] }>;
  /** Declared workflows; `WorkflowSpec` fits. A name belongs to one project/account. */
  readonly workflows?: Iterable<{
    readonly name: string;
    readonly project: string;
    readonly account: string;
  }>;
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

/** `file: path: message`, one line per issue, for terminals and logs. */
export function formatDeclarationIssue(issue: DeclarationIssue): string {
  const where = issue.path ? `${issue.file}: ${issue.path}` : issue.file;
  return `${issue.severity === "warning" ? "warning: " : ""}${where}: ${issue.message}`;
}

/** The errors of a failed validation as one `ValidationError` (nothing was written). */
export function declarationValidationError(errors: readonly DeclarationIssue[]): ValidationError {
  return new ValidationError(
    "declarations",
    errors.map((e) => ({ path: e.path ? `${e.file}: ${e.path}` : e.file, message: e.message })),
  );
}

// ---- internal shapes ---------------------------------------------------------------------------

interface Located {
  readonly file: string;
  readonly path: string;
}

interface WorkflowDraft extends Located {
  readonly decl: DeclaredWorkflow;
  readonly spec: WorkflowSpec;
  /** Siblings by name, from the raw task list (so a sibling with its own errors still resolves). */
  readonly siblings: ReadonlyMap<string, TaskKey[]>;
}

interface TaskDraft extends Located {
  readonly decl: DeclaredWorkflowTask | DeclaredStandaloneTask;
  readonly workflow?: WorkflowDraft;
  readonly key: TaskKey;
  readonly label: string;
}

interface ParentRef {
  readonly key: TaskKey;
  readonly label: string;
  readonly path: string;
}

interface ResolvedTask {
  readonly draft: TaskDraft;
  readonly spec: TaskSpec;
  readonly parents: ParentRef[];
}

const ALLOWED_CRON_ALIASES = new Set([
  "@yearly",
  "@annually",
  "@monthly",
  "@weekly",
  "@daily",
  "@hourly",
  "@minutely",
  "@weekdays",
  "@weekends",
]);

/** A fixed reference instant for cron checks, so validation never reads the clock. */
const CRON_CHECK_FROM = new Date(Date.UTC(2000, 0, 1));

// ---- entry point -------------------------------------------------------------------------------

/**
 * Validates a set of parsed declaration files against each other and against what is already
 * declared, and normalises them into specs. Pure. Any error fails the whole set: on `ok: false`
 * the caller must write nothing. Missing parents are warnings (another team may declare them
 * later); everything else listed in `DeclarationIssueCode` is an error.
 *
 * Normalisation: workflow tasks inherit cron, timezone, startDate, endDate, catchup, connection,
 * retry (field by field), idempotent, leaseSeconds, project and account from their workflow;
 * config is deep-merged workflow -> task -> inline (`operator.config`); dates become UTC instants
 * with milliseconds; parents become full keys.
 */
export function validateDeclarations(
  docs: readonly DeclarationSource[],
  existing: ExistingDeclarations = {},
): DeclarationResult {
  const errors: DeclarationIssue[] = [];
  const warnings: DeclarationIssue[] = [];
  const report = (
    severity: "error" | "warning",
    code: DeclarationIssueCode,
    at: Located,
    message: string,
    task?: string,
  ) => {
    const issue: DeclarationIssue = {
      severity,
      code,
      file: at.file,
      path: at.path,
      message: task ? `${task}: ${message}` : message,
      ...(task ? { task } : {}),
    };
    (severity === "error" ? errors : warnings).push(issue);
  };
  const error = (code: DeclarationIssueCode, at: Located, message: string, task?: string) =>
    report("error", code, at, message, task);
  const schemaErrors = (
    file: string,
    base: string,
    issues: ReadonlyArray<ZodIssueLike>,
    task: string | undefined,
  ) => {
    for (const issue of issues) {
      for (const i of describeZodIssue(issue)) {
        error(i.code, { file, path: joinPath(base, ...i.path) }, i.message, task);
      }
    }
  };

  /** Alert sinks, each checked against its schema (errors at `base.alerts[k]`). */
  const parseSinks = (
    raw: readonly unknown[] | undefined,
    file: string,
    base: string,
    task: string | undefined,
  ): AlertSink[] => {
    const out: AlertSink[] = [];
    (raw ?? []).forEach((sink, k) => {
      const parsed = compiled(alertSinkSchema).safeParse(sink);
      if (parsed.success) out.push(parsed.data);
      else schemaErrors(file, `${base}.alerts[${k}]`, parsed.error.issues, task);
    });
    return out;
  };

  // 1. Shape of each document and of each item in it.
  const connections: Array<Located & { spec: ConnectionSpec }> = [];
  const workflows: WorkflowDraft[] = [];
  const drafts: TaskDraft[] = [];

  for (const { filename: file, document } of docs) {
    if (document === null || document === undefined) {
      error("document", { file, path: "" }, "the file is empty: it declares nothing");
      continue;
    }
    if (!isPlainObject(document)) {
      error(
        "document",
        { file, path: "" },
        "a declaration file must be a mapping with `connections`, `workflows` and/or `tasks`",
      );
      continue;
    }
    checkProtoKeys(file, document);
    const top = declarationDocumentSchema.safeParse(document);
    if (!top.success) {
      schemaErrors(file, "", top.error.issues, undefined);
      continue;
    }

    (top.data.connections ?? []).forEach((raw, i) => {
      const path = `connections[${i}]`;
      const parsed = compiled(declaredConnectionSchema).safeParse(raw);
      if (!parsed.success) schemaErrors(file, path, parsed.error.issues, undefined);
      else connections.push({ file, path, spec: parsed.data });
    });

    (top.data.workflows ?? []).forEach((raw, i) => {
      const path = `workflows[${i}]`;
      const parsed = compiled(declaredWorkflowSchema).safeParse(raw);
      if (!parsed.success) {
        schemaErrors(file, path, parsed.error.issues, undefined);
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
        alerts: parseSinks(decl.alerts, file, path, undefined),
      });
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
      const workflow: WorkflowDraft = { file, path, decl, spec, siblings };
      workflows.push(workflow);
      checkSchedule(decl, { file, path }, undefined);

      decl.tasks.forEach((rawTask, j) => {
        const taskPath = `${path}.tasks[${j}]`;
        const label = rawLabel(rawTask, decl);
        const t = compiled(declaredWorkflowTaskSchema).safeParse(rawTask);
        if (!t.success) {
          schemaErrors(file, taskPath, t.error.issues, label);
          if (isPlainObject(rawTask)) checkOperator(rawTask.operator, { file, path: taskPath }, label);
          return;
        }
        const key = {
          project: t.data.project ?? decl.project,
          account: t.data.account ?? decl.account,
          name: t.data.name,
          partition: t.data.partition ?? "ALL",
        };
        drafts.push({ file, path: taskPath, decl: t.data, workflow, key, label: formatTaskKey(key) });
      });
    });

    (top.data.tasks ?? []).forEach((raw, i) => {
      const path = `tasks[${i}]`;
      const label = rawLabel(raw, undefined);
      const t = compiled(declaredStandaloneTaskSchema).safeParse(raw);
      if (!t.success) {
        schemaErrors(file, path, t.error.issues, label);
        if (isPlainObject(raw)) checkOperator(raw.operator, { file, path }, label);
        return;
      }
      const key = {
        project: t.data.project,
        account: t.data.account,
        name: t.data.name,
        partition: t.data.partition ?? "ALL",
      };
      drafts.push({ file, path, decl: t.data, key, label: formatTaskKey(key) });
    });
  }

  /** Cron and time zone written at one level (a workflow, or a task's own overrides). */
  function checkSchedule(
    decl: { cron?: string | undefined; timezone?: string | undefined },
    at: Located,
    task: string | undefined,
  ) {
    if (decl.cron !== undefined) {
      const problem = cronProblem(decl.cron);
      if (problem) error("cron", { file: at.file, path: `${at.path}.cron` }, problem, task);
    }
    if (decl.timezone !== undefined && !isTimeZone(decl.timezone)) {
      error(
        "timezone",
        { file: at.file, path: `${at.path}.timezone` },
        `unknown time zone ${JSON.stringify(decl.timezone)} (use an IANA name such as UTC or Europe/Paris)`,
        task,
      );
    }
  }

  // 2. Connections and workflows: unique names, and consistent with what exists.
  const connectionByName = new Map<string, { operators: readonly OperatorType[]; at?: Located }>();
  for (const c of existing.connections ?? []) connectionByName.set(c.name, { operators: c.operators });
  const declaredConnections = new Map<string, Located>();
  for (const c of connections) {
    const first = declaredConnections.get(c.spec.name);
    if (first) {
      error(
        "duplicate",
        { file: c.file, path: `${c.path}.name` },
        `connection "${c.spec.name}" is declared twice (also at ${first.file}: ${first.path})`,
      );
      continue;
    }
    declaredConnections.set(c.spec.name, c);
    connectionByName.set(c.spec.name, { operators: c.spec.operators, at: c });
  }

  const existingWorkflows = new Map<string, { project: string; account: string }>();
  for (const w of existing.workflows ?? []) existingWorkflows.set(w.name, w);
  const declaredWorkflows = new Map<string, Located>();
  for (const w of workflows) {
    const first = declaredWorkflows.get(w.spec.name);
    if (first) {
      error(
        "duplicate",
        { file: w.file, path: `${w.path}.name` },
        `workflow "${w.spec.name}" is declared twice (also at ${first.file}: ${first.path})`,
      );
      continue;
    }
    declaredWorkflows.set(w.spec.name, w);
    const old = existingWorkflows.get(w.spec.name);
    if (old && (old.project !== w.spec.project || old.account !== w.spec.account)) {
      error(
        "workflow",
        { file: w.file, path: `${w.path}.name` },
        `workflow "${w.spec.name}" already belongs to ${old.project}/${old.account}; workflow names are unique`,
      );
    }
  }

  // 3. Task keys are unique across every file of the set.
  const byKey = new Map<string, TaskDraft>();
  const unique: TaskDraft[] = [];
  for (const d of drafts) {
    const first = byKey.get(d.label);
    if (first) {
      error(
        "duplicate",
        { file: d.file, path: `${d.path}.name` },
        `duplicate task key (also declared at ${first.file}: ${first.path})`,
        d.label,
      );
      continue;
    }
    byKey.set(d.label, d);
    unique.push(d);
  }

  // 4. Each task: inherit, merge, check schedule, operator, connection and parents.
  const resolved: ResolvedTask[] = [];
  for (const d of unique) {
    const r = resolveTask(d);
    if (r) resolved.push(r);
  }

  function resolveTask(d: TaskDraft): ResolvedTask | undefined {
    const errorsBefore = errors.length;
    const { decl, workflow: wf, label } = d;
    const at = (field: string): Located => ({ file: d.file, path: `${d.path}.${field}` });
    /** The task's own value, else its workflow's, with where it was written. */
    function pick<K extends keyof DeclaredWorkflow & keyof DeclaredWorkflowTask>(field: K) {
      if (decl[field] !== undefined) return { value: decl[field], at: at(field) };
      if (wf && wf.decl[field] !== undefined) {
        return { value: wf.decl[field], at: { file: wf.file, path: `${wf.path}.${field}` } };
      }
      return undefined;
    }

    checkSchedule(decl, d, label);

    const cron = pick("cron");
    if (!cron) {
      error(
        "required",
        at("cron"),
        wf ? "cron is required: set it on the task or on its workflow" : "cron is required",
        label,
      );
    }
    const timezone = pick("timezone");
    const startDate = pick("startDate");
    if (!startDate) {
      error(
        "required",
        at("startDate"),
        wf ? "startDate is required: set it on the task or on its workflow" : "startDate is required",
        label,
      );
    }
    const endDate = pick("endDate");
    const start = startDate ? toInstant(startDate.value) : undefined;
    const end = endDate ? toInstant(endDate.value) : undefined;
    if (endDate && start && end && end <= start) {
      error("date", endDate.at, `endDate ${end} is not after startDate ${start}`, label);
    }

    const { operator, inline } = checkOperator(decl.operator, { file: d.file, path: d.path }, label);

    // Connection: known, and allowing this operator.
    const connection = pick("connection");
    if (connection) {
      const known = connectionByName.get(connection.value);
      if (!known) {
        error(
          "connection_unknown",
          connection.at,
          `connection "${connection.value}" is not declared (neither in these files nor already)`,
          label,
        );
      } else if (operator && known.operators.length > 0 && !known.operators.includes(operator.type)) {
        error(
          "connection_operator",
          connection.at,
          `connection "${connection.value}" allows operators ${known.operators.join(", ")}; ` +
            `this task's operator is ${operator.type}`,
          label,
        );
      }
    }

    // Parents: full keys (string or object), or a sibling's bare name inside a workflow.
    const parents: ParentRef[] = [];
    const seen = new Map<string, number>();
    (decl.parents ?? []).forEach((raw, i) => {
      const pat = at(`parents[${i}]`);
      const key = parseParent(raw, wf, pat, label);
      if (!key) return;
      const parentLabel = formatTaskKey(key);
      const dup = seen.get(parentLabel);
      if (dup !== undefined) {
        error("parent", pat, `parent ${parentLabel} is listed twice (also parents[${dup}])`, label);
        return;
      }
      seen.set(parentLabel, i);
      parents.push({ key, label: parentLabel, path: pat.path });
    });

    if (errors.length > errorsBefore || !cron || !start || !operator) return undefined;

    // The optional fields last: adding properties after spreading a non-empty object is the
    // engine's slow path. The schema gives the spec its fields in its own order.
    const input: TaskSpecInput = {
      key: d.key,
      cron: cron.value.trim(),
      timezone: timezone?.value ?? "UTC",
      startDate: start,
      catchup: pick("catchup")?.value,
      operator,
      parents: parents.map((p) => p.key),
      retry: retryFromRaw(wf, decl),
      idempotent: pick("idempotent")?.value,
      config: mergeTaskConfig(wf?.decl.config, decl.config, inline),
      leaseSeconds: pick("leaseSeconds")?.value,
      alerts: [...(wf?.spec.alerts ?? []), ...parseSinks(decl.alerts, d.file, d.path, label)],
      ...(wf ? { workflow: wf.spec.name } : {}),
      ...(end ? { endDate: end } : {}),
      ...(connection ? { connection: connection.value } : {}),
      ...(decl.cacheKey !== undefined ? { cacheKey: decl.cacheKey } : {}),
    };
    const spec = compiled(taskSpecSchema).safeParse(input);
    if (!spec.success) {
      schemaErrors(d.file, d.path, spec.error.issues, label);
      return undefined;
    }
    return { draft: d, spec: spec.data, parents };
  }

  function parseParent(raw: unknown, wf: WorkflowDraft | undefined, at: Located, label: string) {
    if (typeof raw === "string") {
      if (!raw.includes("/")) {
        if (!wf) {
          error(
            "parent",
            at,
            `parent "${raw}" must be project/account/name[/partition] (bare names are for siblings in a workflow)`,
            label,
          );
          return undefined;
        }
        const candidates = wf.siblings.get(raw) ?? [];
        const all = candidates.filter((k) => k.partition === "ALL");
        const chosen = all.length === 1 ? all[0] : candidates.length === 1 ? candidates[0] : undefined;
        if (!chosen) {
          error(
            "parent",
            at,
            candidates.length === 0
              ? `parent "${raw}" is not a task of workflow "${wf.spec.name}" (write project/account/name for a task elsewhere)`
              : `parent "${raw}" is ambiguous in workflow "${wf.spec.name}": write the full key with its partition`,
            label,
          );
          return undefined;
        }
        return chosen;
      }
      const parsed = parseTaskKey(raw);
      if (!parsed.ok) {
        error("parent", at, `parent ${parsed.error}`, label);
        return undefined;
      }
      return parsed.key;
    }
    if (isPlainObject(raw)) {
      const parsed = compiled(taskKeySchema).safeParse(raw);
      if (!parsed.success) {
        schemaErrors(at.file, at.path, parsed.error.issues, label);
        return undefined;
      }
      return parsed.data;
    }
    error(
      "parent",
      at,
      "a parent is a task key: project/account/name[/partition] or { project, account, name, partition }",
      label,
    );
    return undefined;
  }

  /** Operator: `{ type, ...fields, config? }`; `config` is the inline config level. */
  function checkOperator(raw: unknown, task: Located, label: string | undefined) {
    const at: Located = { file: task.file, path: `${task.path}.operator` };
    let operator: OperatorSpec | undefined;
    let inline: Record<string, unknown> | undefined;
    if (raw === undefined) {
      error("required", at, "operator is required, e.g. { type: shell, command: ... }", label);
    } else if (!isPlainObject(raw)) {
      error("operator", at, "operator must be a mapping such as { type: noop }", label);
    } else {
      const { config: inlineConfig, ...fields } = raw;
      if (inlineConfig !== undefined && !isPlainObject(inlineConfig)) {
        error(
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
      else schemaErrors(at.file, at.path, parsed.error.issues, label);
    }
    return { operator, inline };
  }

  /**
   * `__proto__` keys are refused wherever they appear: they would mean different things to
   * different consumers (and to `zod`, which drops them silently).
   */
  function checkProtoKeys(file: string, document: Record<string, unknown>) {
    const visit = (v: unknown, path: string): void => {
      if (Array.isArray(v)) {
        v.forEach((x, i) => {
          visit(x, `${path}[${i}]`);
        });
      } else if (isPlainObject(v)) {
        for (const k of Object.keys(v)) {
          const p = joinPath(path, k);
          if (k === "__proto__") {
            error("config", { file, path: p }, 'the key "__proto__" is not allowed', labelAt(document, p));
          } else visit(v[k], p);
        }
      }
    };
    visit(document, "");
  }

  // 5. Connections re-declared here must still allow the operators of tasks that use them.
  const redeclared = new Set(resolved.map((r) => r.draft.label));
  for (const t of existing.tasks ?? []) {
    if (!t.connection || !t.operator || redeclared.has(formatTaskKey(t.key))) continue;
    const c = declaredConnections.get(t.connection);
    const spec = connectionByName.get(t.connection);
    if (!c || !spec || spec.operators.length === 0 || spec.operators.includes(t.operator.type)) continue;
    error(
      "connection_operator",
      { file: c.file, path: `${c.path}.operators` },
      `connection "${t.connection}" would no longer allow operator ${t.operator.type}, used by this already declared task`,
      formatTaskKey(t.key),
    );
  }

  // 6. Parents that exist nowhere (yet): a warning, since another team may declare them later.
  const known = new Set<string>(byKey.keys());
  const edges = new Map<string, string[]>();
  for (const t of existing.tasks ?? []) {
    const k = formatTaskKey(t.key);
    known.add(k);
    edges.set(k, []);
  }
  const parentsOf = new Map<string, string[]>();
  for (const t of existing.tasks ?? []) parentsOf.set(formatTaskKey(t.key), t.parents.map(formatTaskKey));
  for (const r of resolved) {
    parentsOf.set(
      r.draft.label,
      r.parents.map((p) => p.label),
    );
    for (const p of r.parents) {
      if (!known.has(p.label)) {
        report(
          "warning",
          "parent_missing",
          { file: r.draft.file, path: p.path },
          `parent ${p.label} is not declared (yet); the task will wait for it`,
          r.draft.label,
        );
      }
    }
  }

  // 7. No cycle in the union of all parent edges (a new declaration replaces the old parents).
  //    Edges point parent -> child, so a cycle reads in the order data flows.
  for (const [child, parents] of parentsOf) {
    if (!edges.has(child)) edges.set(child, []);
    for (const p of parents) {
      // Added to in place: copying the list for every child made a parent of k children cost k².
      const children = edges.get(p);
      if (children) children.push(child);
      else edges.set(p, [child]);
    }
  }
  const resolvedByKey = new Map(resolved.map((r) => [r.draft.label, r]));
  for (const cycle of findCycles(edges, (node) => resolvedByKey.has(node))) {
    const text = cycle.join(" -> ");
    // Blame the first edge of the cycle that a new declaration introduces.
    let blamed: { task: ResolvedTask; path: string } | undefined;
    for (let i = 0; i + 1 < cycle.length && !blamed; i++) {
      const child = resolvedByKey.get(cycle[i + 1] as string);
      const parent = child?.parents.find((p) => p.label === cycle[i]);
      if (child && parent) blamed = { task: child, path: parent.path };
    }
    if (blamed) {
      error(
        "cycle",
        { file: blamed.task.draft.file, path: blamed.path },
        `dependency cycle (each task is a parent of the next): ${text}`,
        blamed.task.draft.label,
      );
    } else {
      const first = docs[0]?.filename ?? "";
      report("warning", "cycle", { file: first, path: "" }, `already declared dependency cycle: ${text}`);
    }
  }

  if (errors.length > 0) return { ok: false, errors, warnings };
  return {
    ok: true,
    tasks: resolved.map((r) => r.spec),
    taskLocations: resolved.map((r) => ({ file: r.draft.file, path: r.draft.path })),
    connections: connections.filter((c) => declaredConnections.get(c.spec.name) === c).map((c) => c.spec),
    workflows: workflows.filter((w) => declaredWorkflows.get(w.spec.name) === w).map((w) => w.spec),
    warnings,
  };
}

// ---- helpers -----------------------------------------------------------------------------------

/** Retry merged field by field: the task's fields over the workflow's; defaults fill the rest. */
function retryFromRaw(
  wf: WorkflowDraft | undefined,
  decl: DeclaredWorkflowTask | DeclaredStandaloneTask,
): TaskSpecInput["retry"] {
  const merged = { ...(wf?.decl.retry ?? {}), ...(decl.retry ?? {}) };
  return merged as TaskSpecInput["retry"];
}

/** A declared date as a UTC instant; a catalogue repeats a few, and each answer is kept. */
function toInstant(value: string): string {
  return (
    declaredInstants.get(value) ??
    remember(declaredInstants, value, new Date(value).toISOString(), CRON_PROBLEMS_KEPT)
  );
}

/** Declared date -> its instant. */
const declaredInstants = new Map<string, string>();

/** Undefined when the expression is a usable 5-field cron (or an allowed @alias). */
export function cronProblem(expression: string): string | undefined {
  // A catalogue repeats a few expressions over thousands of tasks, and parsing one is most of
  // what checking a declaration costs: each expression's answer is kept.
  const known = cronProblems.get(expression);
  if (known !== undefined) return known === "" ? undefined : known;
  const problem = findCronProblem(expression);
  remember(cronProblems, expression, problem ?? "", CRON_PROBLEMS_KEPT);
  return problem;
}

/** Expression -> its problem, or "" for none. */
const cronProblems = new Map<string, string>();
const CRON_PROBLEMS_KEPT = 1024;

function findCronProblem(expression: string): string | undefined {
  const expr = expression.trim();
  if (expr.startsWith("@")) {
    if (!ALLOWED_CRON_ALIASES.has(expr)) {
      return `invalid cron ${JSON.stringify(expression)}: unknown alias (use one of ${[...ALLOWED_CRON_ALIASES].join(", ")})`;
    }
  } else {
    const fields = expr.split(/\s+/).filter((f) => f !== "");
    if (fields.length !== 5) {
      return `invalid cron ${JSON.stringify(expression)}: expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
    }
    // `H` (hashed) picks a pseudo-random value: a schedule must be a function of its text. Month
    // and weekday names (THU) are removed first so their letters are not taken for `H`.
    if (fields.some((f) => /H/i.test(f.replace(/[a-z]{3}/gi, "")))) {
      return `invalid cron ${JSON.stringify(expression)}: hashed values (H) are not supported`;
    }
  }
  try {
    CronExpressionParser.parse(expr, {
      tz: "UTC",
      currentDate: CRON_CHECK_FROM,
      hashSeed: "chronolog",
    }).next();
    return undefined;
  } catch (e) {
    return `invalid cron ${JSON.stringify(expression)}: ${e instanceof Error ? e.message : String(e)}`;
  }
}

/** Whether the runtime knows this IANA time zone name. */
export function isTimeZone(name: string): boolean {
  if (name.trim() === "") return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
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

interface ZodIssueLike {
  readonly code?: string;
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
  readonly keys?: readonly string[];
}

function describeZodIssue(
  issue: ZodIssueLike,
): Array<{ code: DeclarationIssueCode; path: PropertyKey[]; message: string }> {
  if (issue.code === "unrecognized_keys" && issue.keys) {
    return issue.keys.map((k) => {
      const hint = suggestField(k);
      return {
        code: "unknown_field" as const,
        path: [...issue.path, k],
        message: `unknown field "${k}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
      };
    });
  }
  const field = issue.path.length > 0 ? String(issue.path[issue.path.length - 1]) : "value";
  if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) {
    return [{ code: "required", path: [...issue.path], message: `${field} is required` }];
  }
  // (A rule about the whole item, such as a sink's one-of, is said as is, at the item.)
  const message = issue.path.length > 0 ? `${field}: ${issue.message}` : issue.message;
  return [{ code: "schema", path: [...issue.path], message }];
}

function joinPath(base: string, ...segments: PropertyKey[]): string {
  let out = base;
  for (const s of segments) {
    if (typeof s === "number") out += `[${s}]`;
    else out += out === "" ? String(s) : `.${String(s)}`;
  }
  return out;
}

import {
  type AlertSink,
  type DeclarationIssue,
  type DeclarationOutcome,
  type DeclarationSource,
  dataInterval,
  decideDeclaration,
  declarationValidationError,
  formatTaskKey,
  type SchedulerProjection,
  type TaskSpec,
  type TaskSpecChange,
  ValidationError,
  validateDeclarations,
  type WorkflowSpec,
} from "@chronolog/core";
import type { AppendResult, EventLog, StreamWrite } from "@chronolog/log";
import { renderOperator, renderTemplate, renderTemplateWith, TemplateError } from "@chronolog/render";
import { alertVariables } from "./alerts.js";
import { catchUp } from "./checkpoint.js";
import { handleCommand } from "./command.js";

export interface DeclaredTaskOutcome {
  readonly task: string;
  readonly outcome: DeclarationOutcome;
  readonly changes: readonly TaskSpecChange[];
}

export interface DeclareOutcome {
  readonly tasks: readonly DeclaredTaskOutcome[];
  readonly connections: ReadonlyArray<{ name: string; outcome: DeclarationOutcome }>;
  readonly workflows: ReadonlyArray<{ name: string; outcome: DeclarationOutcome }>;
  readonly warnings: readonly DeclarationIssue[];
}

/**
 * Renders every task's templates once against its first interval, with its workflow's declared
 * params at their defaults, so a broken one is refused now, in the form of every other
 * declaration error: `file: path.to.field: task: message (line L, column C)`. A param the
 * workflow does not declare is refused even under `| default:` or `{% if %}`.
 */
function checkTemplates(
  tasks: readonly TaskSpec[],
  locations: ReadonlyArray<{ readonly file: string; readonly path: string }>,
  workflows: ReadonlyMap<string, WorkflowSpec>,
): void {
  const issues: Array<{ path: string; message: string }> = [];
  tasks.forEach((spec, i) => {
    const at = locations[i];
    const where = at ? `${at.file}: ${at.path}` : formatTaskKey(spec.key);
    const params = (spec.workflow ? workflows.get(spec.workflow)?.params : undefined) ?? {};
    try {
      const interval = dataInterval(spec.startDate, spec.cron, spec.timezone);
      const context = {
        task: spec.key,
        logicalDate: interval.start,
        dataIntervalEnd: interval.end,
        prevIntervalStart: null,
        timezone: spec.timezone,
        config: spec.config,
        params,
        declaredParams: Object.keys(params),
      };
      renderOperator(spec.operator, context);
      if (spec.cacheKey !== undefined) renderTemplate(spec.cacheKey, context, "cacheKey");
      for (const [k, sink] of spec.alerts.entries()) checkSink(sink, `alerts[${k}]`);
    } catch (error) {
      const label = formatTaskKey(spec.key);
      if (error instanceof TemplateError) {
        const located = error.line !== undefined ? ` (line ${error.line}, column ${error.column ?? 1})` : "";
        issues.push({ path: `${where}.${error.field}`, message: `${label}: ${error.detail}${located}` });
      } else issues.push({ path: where, message: `${label}: ${(error as Error).message}` });
    }
  });
  if (issues.length > 0) throw new ValidationError("declarations", issues);
}

/** A sample alert, for rendering a sink's templates at declare. */
const SAMPLE_ALERT = alertVariables({
  alertId: "task_failed:p/a/t/ALL@2026-01-01T00:00:00.000Z#r1",
  stream: "alert-sample",
  raisedAt: "2026-01-01T01:00:00.000Z",
  revision: 0n,
  sinks: [],
  raised: {
    alertId: "task_failed:p/a/t/ALL@2026-01-01T00:00:00.000Z#r1",
    kind: "task_failed",
    task: { project: "p", account: "a", name: "t", partition: "ALL" },
    workflow: "w",
    runId: "w@2026-01-01T00:00:00.000Z",
    logicalDate: "2026-01-01T00:00:00.000Z",
    reason: "exited with code 1",
    sinks: [],
  },
});

/** Renders an alert sink's templates against a sample alert (throws TemplateError naming the field). */
function checkSink(sink: AlertSink, at: string): void {
  if (sink.command !== undefined)
    renderTemplateWith(sink.command, SAMPLE_ALERT, `${at}.command`, { escaping: "shell" });
  if (sink.http) {
    renderTemplateWith(sink.http.url, SAMPLE_ALERT, `${at}.http.url`, { escaping: "url" });
    for (const [k, v] of Object.entries(sink.http.headers))
      renderTemplateWith(v, SAMPLE_ALERT, `${at}.http.headers.${k}`);
    if (sink.http.body !== undefined) renderTemplateWith(sink.http.body, SAMPLE_ALERT, `${at}.http.body`);
  }
}

export interface DeclareOptions {
  /** Declare retired tasks again (they are revived) instead of refusing them. */
  readonly revive?: boolean;
  /** Decide on the current state and say what would change, writing nothing. */
  readonly check?: boolean;
}

/**
 * Validates declaration files against what is declared already, then writes the core's
 * decision (connections, workflows, tasks declared, changed, retired or revived) as one atomic
 * append with the expected revision of every stream it writes: the declaration is written
 * whole or not at all. A conflict (another writer got in between) catches the projection up
 * and decides again; after the retries it fails with ConflictRetriesExhaustedError, having
 * written nothing. With `check`, it decides and returns the outcome without writing.
 */
export async function declare(
  log: EventLog,
  projection: SchedulerProjection,
  sources: readonly DeclarationSource[],
  nowMs: number,
  options: DeclareOptions = {},
): Promise<DeclareOutcome> {
  if (options.check) return checkDeclaration(projection, sources, nowMs, options);
  let warnings: readonly DeclarationIssue[] = [];
  const outcome = await handleCommand(log, {
    name: "declare",
    read: async (fresh) => {
      if (fresh) await catchUp(log, projection);
      return projection;
    },
    decide: (state) => {
      const decided = decideOn(state, sources, nowMs, options);
      warnings = decided.warnings;
      return { writes: decided.decision.writes, result: decided.decision };
    },
    append: (writes) => appendInBatches(log, writes),
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const { tasks, connections, workflows } = outcome.result;
  return { tasks, connections, workflows, warnings };
}

/**
 * Streams written in one atomic append at most. A declaration that touches no more is written
 * whole or not at all; a larger one (a catalogue of thousands of tasks) does not fit in one
 * append on every backend (a Kafka record holds about a megabyte) and is written in batches of
 * this many, in order: connections and workflows first, then tasks. A conflict in a later batch
 * is decided again on the state as it is then, where the batches already written are unchanged.
 */
export const DECLARATION_BATCH = 200;

async function appendInBatches(
  log: EventLog,
  writes: readonly StreamWrite[],
): Promise<readonly AppendResult[]> {
  if (writes.length <= DECLARATION_BATCH) return log.appendMany(writes);
  const results: AppendResult[] = [];
  for (let i = 0; i < writes.length; i += DECLARATION_BATCH)
    results.push(...(await log.appendMany(writes.slice(i, i + DECLARATION_BATCH))));
  return results;
}

/**
 * What declaring the files on `projection` would do, without writing: the same validation,
 * refusals and outcomes as `declare`.
 */
export function checkDeclaration(
  projection: SchedulerProjection,
  sources: readonly DeclarationSource[],
  nowMs: number,
  options: Pick<DeclareOptions, "revive"> = {},
): DeclareOutcome {
  const { decision, warnings } = decideOn(projection, sources, nowMs, options);
  const { tasks, connections, workflows } = decision;
  return { tasks, connections, workflows, warnings };
}

function decideOn(
  state: SchedulerProjection,
  sources: readonly DeclarationSource[],
  nowMs: number,
  options: Pick<DeclareOptions, "revive">,
) {
  const validated = validate(state, sources);
  const decision = decideDeclaration(state, {
    tasks: validated.tasks,
    connections: validated.connections,
    workflows: validated.workflows,
    now: nowMs,
    ...(options.revive ? { revive: true } : {}),
  });
  return { decision, warnings: validated.warnings };
}

/** The files checked against `state`; refused (a ValidationError carrying the warnings) if invalid. */
function validate(state: SchedulerProjection, sources: readonly DeclarationSource[]) {
  const result = validateDeclarations(sources, {
    tasks: [...state.tasks.values()].map((t) => t.spec),
    connections: state.connections.values(),
    workflows: state.workflows.values(),
  });
  if (!result.ok) {
    const error = declarationValidationError(result.errors);
    Object.assign(error, { warnings: result.warnings });
    throw error;
  }
  const workflows = new Map<string, WorkflowSpec>(state.workflows);
  for (const w of result.workflows) workflows.set(w.name, w);
  checkTemplates(result.tasks, result.taskLocations, workflows);
  return result;
}

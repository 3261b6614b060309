import {
  type AlertSink,
  ChronologError,
  type DeclarationDecision,
  type DeclarationIssue,
  type DeclarationOutcome,
  type DeclarationSource,
  dataInterval,
  decideDeclaration,
  declarationOf,
  declarationValidationError,
  type SchedulerProjection,
  type TaskSpecChange,
  type TemplateCheck,
  type TemplateIssue,
  validateDeclarations,
} from "@chronolog/core";
import {
  type AppendResult,
  checkWrites,
  type EventLog,
  type ExpectedRevision,
  type StreamCheck,
  type StreamWrite,
} from "@chronolog/log";
import {
  type RenderContext,
  renderOperator,
  renderTemplate,
  renderTemplateWith,
  TemplateError,
} from "@chronolog/render";
import { alertEnvName, alertVariables } from "./alerts.js";
import { handleCommand } from "./command.js";
import { catchUp } from "./projection-loader.js";
import { standingChecks } from "./standing-checks.js";

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
 * Renders a task's templates once against its first interval, with its workflow's declared
 * params at their defaults, so a broken one is refused now, with every other problem of the
 * files and in their form: `file: path.to.field: task: message (line L, column C)`. A param the
 * workflow does not declare is refused even under `| default:` or `{% if %}`. The operator, the
 * cache key and each alert sink are rendered apart: each says its own problem.
 */
const checkTemplates: TemplateCheck = (spec, params) => {
  let context: RenderContext;
  try {
    const interval = dataInterval(spec.startDate, spec.cron, spec.timezone);
    context = {
      task: spec.key,
      logicalDate: interval.start,
      dataIntervalEnd: interval.end,
      prevIntervalStart: null,
      timezone: spec.timezone,
      config: spec.config,
      params,
      declaredParams: Object.keys(params),
      secrets: Object.keys(spec.secrets ?? {}),
    };
  } catch (error) {
    return [templateIssue(error)];
  }
  const issues: TemplateIssue[] = [];
  const attempt = (render: () => unknown) => {
    try {
      render();
    } catch (error) {
      issues.push(templateIssue(error));
    }
  };
  attempt(() => renderOperator(spec.operator, context));
  const { cacheKey } = spec;
  if (cacheKey !== undefined) attempt(() => renderTemplate(cacheKey, context, "cacheKey"));
  for (const [k, sink] of spec.alerts.entries()) attempt(() => checkSink(sink, `alerts[${k}]`));
  return issues;
};

function templateIssue(error: unknown): TemplateIssue {
  if (!(error instanceof TemplateError)) return { message: (error as Error).message };
  const position = error.line !== undefined ? { line: error.line, column: error.column ?? 1 } : {};
  return { field: error.field, message: error.detail, ...position };
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
    renderTemplateWith(sink.command, SAMPLE_ALERT, `${at}.command`, {
      escaping: "shell",
      envName: alertEnvName,
    });
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
  /** The projects a refusal or warning may name what is declared in (see ValidationOptions). */
  readonly visible?: (project: string) => boolean;
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
  // What each declared thing was when first decided on (the ones declared then: a name the
  // first decision made and that is not here was not declared), and that decision: a retry that
  // finds one declared anew by someone else (and not to what this declaration says) refuses
  // rather than overwrite it. The rest is looked at only on a retry.
  let first: { versions: Map<string, string>; decision: Decided } | null = null;
  const outcome = await handleCommand(log, {
    name: "declare",
    // Always on the log as it is now (not only after a conflict): what this declaration finds
    // declared is what it knowingly replaces.
    read: async () => {
      await catchUp(log, projection);
      return projection;
    },
    decide: (state) => {
      const decided = decideOn(state, sources, nowMs, options);
      warnings = decided.warnings;
      if (first === null)
        first = { versions: declaredVersions(state, decided.decision), decision: decided.decision };
      else refuseIfDeclaredMeanwhile(state, decided.decision, first);
      return { writes: decided.decision.writes, result: decided.decision };
    },
    append: (writes) => appendInBatches(log, projection, writes),
    onConflict: () => "retry",
  });
  if (outcome.kind === "conflict") throw outcome.error;
  const { tasks, connections, workflows } = outcome.result;
  return { tasks, connections, workflows, warnings };
}

/** What a declaration decided: its writes, and each task, workflow and connection it names. */
type Decided = Pick<DeclarationDecision, "writes" | "tasks" | "workflows" | "connections">;

/**
 * Each task, workflow and connection a declaration names that the state declares now, as it
 * declares it: one not declared has no entry (see versionOf), so a catalogue of new tasks
 * keeps no entry for each.
 */
function declaredVersions(state: SchedulerProjection, decision: Decided): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of decision.tasks) {
    const task = state.tasks.get(t.task);
    if (task)
      out.set(`task ${t.task}`, `${task.status === "retired"} ${JSON.stringify(declarationOf(task))}`);
  }
  for (const w of decision.workflows) {
    const workflow = state.workflows.get(w.name);
    if (workflow) out.set(`workflow ${w.name}`, JSON.stringify(workflow));
  }
  for (const c of decision.connections) {
    const connection = state.connections.get(c.name);
    if (connection) out.set(`connection ${c.name}`, JSON.stringify(connection));
  }
  return out;
}

/** A thing's version in `declaredVersions`: "" when it was not declared. */
const versionOf = (versions: ReadonlyMap<string, string>, what: string): string => versions.get(what) ?? "";

/** What a decision names, as `task T`, `workflow W`, `connection C`, with its outcome and stream. */
function namedBy(decision: Decided) {
  return [
    ...decision.tasks.map((t) => ({ what: `task ${t.task}`, outcome: t.outcome, stream: `task-${t.task}` })),
    ...decision.workflows.map((w) => ({
      what: `workflow ${w.name}`,
      outcome: w.outcome,
      stream: `workflow-${w.name}`,
    })),
    ...decision.connections.map((c) => ({
      what: `connection ${c.name}`,
      outcome: c.outcome,
      stream: `connection-${c.name}`,
    })),
  ];
}

/**
 * After a conflict: a thing this declaration changes that was declared anew since it was first
 * decided on (by another producer) is not overwritten. Nothing is written; declaring again
 * applies this version over that one, knowingly. Things whose version is already what this
 * declaration says (an earlier batch of its own) are not conflicts.
 */
function refuseIfDeclaredMeanwhile(
  state: SchedulerProjection,
  decision: Decided,
  first: { versions: ReadonlyMap<string, string>; decision: Decided },
): void {
  const namedFirst = new Set(namedBy(first.decision).map((n) => n.what));
  const now = declaredVersions(state, decision);
  for (const item of namedBy(decision)) {
    if (item.outcome === "unchanged") continue;
    if (!namedFirst.has(item.what)) continue;
    const before = versionOf(first.versions, item.what);
    if (before === versionOf(now, item.what)) continue;
    const revision = (d: Decided) => d.writes.find((w) => w.streamId === item.stream)?.expectedRevision;
    throw new DeclaredMeanwhileError(item.what, item.stream, state, {
      expected: revision(first.decision),
      actual: revision(decision),
    });
  }
}

/** Another writer declared what this declaration changes while it was being written. */
export class DeclaredMeanwhileError extends ChronologError {
  readonly type = "wrong_expected_revision" as const;
  readonly streamId: string;
  /** The revision the stream was at when this declaration was decided on. */
  readonly expected: ExpectedRevision | undefined;
  /** The revision the other writer left it at. */
  readonly actual: ExpectedRevision | undefined;
  constructor(
    readonly subject: string,
    streamId: string,
    state: SchedulerProjection,
    revisions: { expected?: ExpectedRevision | undefined; actual?: ExpectedRevision | undefined } = {},
  ) {
    super(
      `${subject} was declared by another writer while this declaration was being written (the log is at position ${state.position}): nothing was written; declare again to put this version over that one`,
    );
    this.name = "DeclaredMeanwhileError";
    this.streamId = streamId;
    this.expected = revisions.expected;
    this.actual = revisions.actual;
  }
}

/**
 * A declaration is written in one atomic append when it touches no more streams than the log
 * takes in one (`streamsPerAppend`: 200 on Kafka and EventStoreDB, whose appends are bounded in
 * bytes, 5,000 on the embedded log): whole or not at all. A larger one (a catalogue of thousands
 * of tasks) is written in appends of that many, in order: connections and workflows first, then
 * tasks. A conflict in a later append is decided again on the state as it is then, where the
 * appends already written are unchanged.
 */
async function appendInBatches(
  log: EventLog,
  projection: SchedulerProjection,
  writes: readonly StreamWrite[],
): Promise<readonly AppendResult[]> {
  const batch = log.streamsPerAppend;
  // A task moved to its new schedule was not under way where it stood: each append checks that,
  // for the tasks it moves, as of the projection decided on (see standingChecks; taken now, in
  // the decision's turn, for every append).
  const reads: Array<Promise<StreamCheck[]>> = [];
  for (let i = 0; i < writes.length; i += batch)
    reads.push(standingChecks(log, projection, writes.slice(i, i + batch)));
  // (All read before the first append: a failed one is heard, not left behind a refused append.)
  const checks = await Promise.all(reads);
  if (writes.length <= batch) return log.appendMany(writes, { checks: checks[0] ?? [] });
  // Every event checked (its data, its size, the caller's limits) before the first append: a
  // refusal writes none of it.
  const prepared = log.prepare(writes);
  const results: AppendResult[] = [];
  for (let i = 0, k = 0; i < prepared.length; i += batch, k++)
    results.push(...(await log.appendPrepared(prepared.slice(i, i + batch), { checks: checks[k] ?? [] })));
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
  options: Pick<DeclareOptions, "revive" | "visible"> & {
    /** Make the log's checks of each event too (default); off for a plan a declare follows. */
    readonly checkEvents?: boolean;
  } = {},
): DeclareOutcome {
  const { decision, warnings } = decideOn(projection, sources, nowMs, options);
  // The checks the log would make of what is written (each event's data and size): a check
  // that passes is a declaration the log takes.
  if (options.checkEvents !== false && decision.writes.length > 0) checkWrites(decision.writes);
  const { tasks, connections, workflows } = decision;
  return { tasks, connections, workflows, warnings };
}

function decideOn(
  state: SchedulerProjection,
  sources: readonly DeclarationSource[],
  nowMs: number,
  options: Pick<DeclareOptions, "revive" | "visible">,
) {
  const validated = validate(state, sources, options.visible);
  const decision = decideDeclaration(state, {
    tasks: validated.tasks,
    connections: validated.connections,
    workflows: validated.workflows,
    now: nowMs,
    ...(options.revive ? { revive: true } : {}),
  });
  return { decision, warnings: validated.warnings };
}

/**
 * The files checked against `state`, templates included; refused (a ValidationError carrying
 * the warnings) if invalid.
 */
function validate(
  state: SchedulerProjection,
  sources: readonly DeclarationSource[],
  visible: ((project: string) => boolean) | undefined,
) {
  const result = validateDeclarations(
    sources,
    {
      // Made as each walk of them reads them, not held whole (a catalogue may hold a million).
      tasks: {
        *[Symbol.iterator]() {
          for (const t of state.tasks.values())
            yield {
              key: t.key,
              parents: t.parents,
              connection: t.spec.connection,
              operator: t.spec.operator,
              workflow: t.spec.workflow,
              retired: t.status === "retired",
            };
        },
      },
      // Each walked more than once: iterables, not one-pass iterators.
      connections: { [Symbol.iterator]: () => state.connections.values() },
      workflows: { [Symbol.iterator]: () => state.workflows.values() },
    },
    visible ? { checkTemplates, visible } : { checkTemplates },
  );
  if (!result.ok) {
    const error = declarationValidationError(result.errors);
    Object.assign(error, { warnings: result.warnings });
    throw error;
  }
  return result;
}

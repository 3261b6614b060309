import {
  connectionStream,
  type DeclarationIssue,
  type DeclarationOutcome,
  type DeclarationSource,
  type DomainEvent,
  dataInterval,
  decideConnectionDeclaration,
  decideTaskDeclaration,
  decideWorkflowDeclaration,
  declarationValidationError,
  formatTaskKey,
  type SchedulerProjection,
  type TaskSpec,
  type TaskSpecChange,
  taskStream,
  ValidationError,
  validateDeclarations,
  workflowStream,
} from "@chronolog/core";
import type { EventLog } from "@chronolog/log";
import { renderOperator, renderTemplate, TemplateError } from "@chronolog/render";

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

/** Renders every task's templates once against its first interval, so a broken one is refused now. */
function checkTemplates(tasks: readonly TaskSpec[]): void {
  const issues: Array<{ path: string; message: string }> = [];
  for (const spec of tasks) {
    try {
      const interval = dataInterval(spec.startDate, spec.cron, spec.timezone);
      const context = {
        task: spec.key,
        logicalDate: interval.start,
        dataIntervalEnd: interval.end,
        prevIntervalStart: null,
        timezone: spec.timezone,
        config: spec.config,
        params: {},
      };
      renderOperator(spec.operator, context);
      if (spec.cacheKey !== undefined) renderTemplate(spec.cacheKey, context, "cacheKey");
    } catch (error) {
      if (error instanceof TemplateError) {
        issues.push({ path: `${formatTaskKey(spec.key)}: ${error.field}`, message: error.message });
      } else issues.push({ path: formatTaskKey(spec.key), message: (error as Error).message });
    }
  }
  if (issues.length > 0) throw new ValidationError("declarations", issues);
}

/** Appends to a stream at the revision it has now: a writer that gets in between makes it fail. */
async function appendAtHead(log: EventLog, stream: string, events: readonly DomainEvent[]): Promise<unknown> {
  const revision = await log.streamRevision(stream);
  return log.append(stream, [...events], { expectedRevision: revision });
}

/**
 * Validates declaration files against what is declared already, then writes TaskDeclared /
 * TaskDeclarationChanged (nothing for an unchanged task), ConnectionDeclared and
 * WorkflowDeclared, each with compare-and-set. Any error: nothing is written. What each
 * declaration writes is the core's decision; this function reads, validates and appends.
 */
export async function declare(
  log: EventLog,
  projection: SchedulerProjection,
  sources: readonly DeclarationSource[],
  nowMs: number,
): Promise<DeclareOutcome> {
  const result = validateDeclarations(sources, {
    tasks: [...projection.tasks.values()].map((t) => t.spec),
    connections: projection.connections.values(),
    workflows: projection.workflows.values(),
  });
  if (!result.ok) {
    const error = declarationValidationError(result.errors);
    Object.assign(error, { warnings: result.warnings });
    throw error;
  }
  checkTemplates(result.tasks);

  const writes: Array<Promise<unknown>> = [];
  const connections: Array<{ name: string; outcome: DeclarationOutcome }> = [];
  for (const spec of result.connections) {
    const decision = decideConnectionDeclaration(projection.connections.get(spec.name), spec);
    connections.push({ name: spec.name, outcome: decision.outcome });
    if (decision.events.length > 0)
      writes.push(appendAtHead(log, connectionStream(spec.name), decision.events));
  }
  const workflows: Array<{ name: string; outcome: DeclarationOutcome }> = [];
  for (const spec of result.workflows) {
    const decision = decideWorkflowDeclaration(projection.workflows.get(spec.name), spec);
    workflows.push({ name: spec.name, outcome: decision.outcome });
    if (decision.events.length > 0)
      writes.push(appendAtHead(log, workflowStream(spec.name), decision.events));
  }
  // Connections and workflows first, so that no scheduler meets a task whose connection or
  // workflow it has not seen declared yet.
  const declared = await Promise.allSettled(writes.splice(0));
  const refused = declared.find((s) => s.status === "rejected");
  if (refused) throw (refused as PromiseRejectedResult).reason;
  const tasks: DeclaredTaskOutcome[] = [];
  for (const spec of result.tasks) {
    const id = formatTaskKey(spec.key);
    const before = projection.tasks.get(id);
    const decision = decideTaskDeclaration(before?.spec, spec, nowMs);
    tasks.push({ task: id, outcome: decision.outcome, changes: decision.changes });
    if (decision.events.length === 0) continue;
    writes.push(
      log.append(taskStream(spec.key), [...decision.events], {
        expectedRevision: before ? before.revision : "no_stream",
      }),
    );
  }
  // Issued together, the appends share one group commit on the embedded log.
  const settled = await Promise.allSettled(writes);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return { tasks, connections, workflows, warnings: result.warnings };
}

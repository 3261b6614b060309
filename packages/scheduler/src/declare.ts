import {
  connectionStream,
  type DeclarationIssue,
  type DeclarationSource,
  type DomainEvent,
  dataInterval,
  declarationValidationError,
  deepEqual,
  diffTaskSpecs,
  formatTaskKey,
  initialPosition,
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
  readonly outcome: "declared" | "changed" | "unchanged";
  readonly changes: readonly TaskSpecChange[];
}

export interface DeclareOutcome {
  readonly tasks: readonly DeclaredTaskOutcome[];
  readonly connections: ReadonlyArray<{ name: string; outcome: "declared" | "changed" | "unchanged" }>;
  readonly workflows: ReadonlyArray<{ name: string; outcome: "declared" | "changed" | "unchanged" }>;
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

/**
 * Validates declaration files against what is declared already, then writes TaskDeclared /
 * TaskDeclarationChanged (nothing for an unchanged task), ConnectionDeclared and
 * WorkflowDeclared, each with compare-and-set. Any error: nothing is written.
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
  const connections: Array<{ name: string; outcome: "declared" | "changed" | "unchanged" }> = [];
  for (const spec of result.connections) {
    const before = projection.connections.get(spec.name);
    if (before && deepEqual(before, spec)) {
      connections.push({ name: spec.name, outcome: "unchanged" });
      continue;
    }
    connections.push({ name: spec.name, outcome: before ? "changed" : "declared" });
    const stream = connectionStream(spec.name);
    writes.push(
      log
        .streamRevision(stream)
        .then((rev) =>
          log.append(stream, [{ type: "ConnectionDeclared", data: { spec } }], { expectedRevision: rev }),
        ),
    );
  }
  const workflows: Array<{ name: string; outcome: "declared" | "changed" | "unchanged" }> = [];
  for (const spec of result.workflows) {
    const before = projection.workflows.get(spec.name);
    if (before && deepEqual(before, spec)) {
      workflows.push({ name: spec.name, outcome: "unchanged" });
      continue;
    }
    workflows.push({ name: spec.name, outcome: before ? "changed" : "declared" });
    const stream = workflowStream(spec.name);
    writes.push(
      log
        .streamRevision(stream)
        .then((rev) =>
          log.append(stream, [{ type: "WorkflowDeclared", data: { spec } }], { expectedRevision: rev }),
        ),
    );
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
    let events: DomainEvent[];
    if (!before) {
      const position = initialPosition(spec, new Date(nowMs));
      events = [
        {
          type: "TaskDeclared",
          data: { key: spec.key, spec, logicalDate: position.logicalDate, nextRunDate: position.nextRunDate },
        },
      ];
      tasks.push({ task: id, outcome: "declared", changes: [] });
    } else {
      const changes = diffTaskSpecs(before.spec, spec);
      if (changes.length === 0) {
        tasks.push({ task: id, outcome: "unchanged", changes });
        continue;
      }
      events = [{ type: "TaskDeclarationChanged", data: { key: spec.key, spec, changes: [...changes] } }];
      tasks.push({ task: id, outcome: "changed", changes });
    }
    writes.push(
      log.append(taskStream(spec.key), events, { expectedRevision: before ? before.revision : "no_stream" }),
    );
  }
  // Issued together, the appends share one group commit on the embedded log.
  const settled = await Promise.allSettled(writes);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return { tasks, connections, workflows, warnings: result.warnings };
}

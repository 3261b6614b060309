import {
  alertMessage,
  counted,
  formatTaskKey,
  lastLineOf,
  PROCESS_ENDED,
  shortInstant,
} from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";
import type { Logger } from "./logger.js";

/**
 * The service log: one line per thing that happened, whoever did it. Intervals completed and
 * failed, attempts failed (with the last line of their stderr) and abandoned, runs started and
 * finished, and what operators and producers did from other processes (declarations, pauses,
 * resumes, retirements, retries, marks, backfills), each with its actor. Declarations are summed up per actor,
 * one line for all that one declare changed.
 */
export function progressLogger(logger: Logger, stopping: () => boolean = () => false) {
  const declared = new Map<string, Map<string, number>>();
  let flushing = false;
  const flushDeclared = () => {
    flushing = false;
    for (const [actor, counts] of declared) {
      const what = [...counts].map(([k, n]) => counted(n, k)).join(", ");
      logger.info({ actor }, `declared: ${what}`);
    }
    declared.clear();
  };
  const countDeclared = (actor: string, what: string) => {
    let counts = declared.get(actor);
    if (!counts) {
      counts = new Map();
      declared.set(actor, counts);
    }
    counts.set(what, (counts.get(what) ?? 0) + 1);
    if (!flushing) {
      flushing = true;
      setImmediate(flushDeclared);
    }
  };
  return (e: RecordedEvent) => {
    const actor = e.metadata.actor;
    switch (e.type) {
      case "IntervalCompleted":
        logger.info(
          { task: formatTaskKey(e.data.key), interval: shortInstant(e.data.logicalDate) },
          "interval completed",
        );
        return;
      case "IntervalFailed":
        logger.warn(
          {
            task: formatTaskKey(e.data.key),
            interval: shortInstant(e.data.logicalDate),
            reason: e.data.reason,
          },
          "interval failed",
        );
        return;
      case "AttemptFailed": {
        if (e.data.error.kind === "interrupted") {
          // Stopped by a shutdown (this service's, or a remote worker's while this one goes on),
          // or gone with its scheduler process: not a failure of the task.
          const ended = e.data.error.message.includes(PROCESS_ENDED);
          const ours = !ended && stopping();
          logger.info(
            {
              stream: e.streamId,
              attempt: e.data.attempt,
              reason: e.data.error.message,
              next: e.data.retryAt
                ? ours
                  ? "runs again at once after the restart"
                  : "runs again at once"
                : "not run again on its own (see why)",
            },
            ended
              ? "attempt interrupted: its scheduler process ended"
              : ours
                ? "attempt interrupted by the shutdown"
                : "attempt interrupted: its worker stopped",
          );
          return;
        }
        const stderr = lastLineOf(e.data.output?.stderrTail ?? "");
        logger.warn(
          {
            stream: e.streamId,
            attempt: e.data.attempt,
            failure: e.data.error.message,
            ...(stderr ? { stderr } : {}),
            ...(e.data.retryAt ? { retryAt: e.data.retryAt } : {}),
          },
          "attempt failed",
        );
        return;
      }
      case "AttemptAbandoned":
        logger.warn(
          { stream: e.streamId, attempt: e.data.attempt, reason: e.data.reason, actor },
          "attempt abandoned",
        );
        return;
      case "RunStarted":
        logger.info(
          {
            run: e.data.runId,
            try: e.data.try,
            trigger: e.data.trigger,
            tasks: e.data.tasks.length,
            actor: e.data.requestedBy ?? actor,
          },
          "run started",
        );
        return;
      case "RunFinished":
        logger.info({ run: e.data.runId, outcome: e.data.state }, "run finished");
        return;
      case "AlertRaised":
        logger.warn(
          { alert: e.data.alertId, sinks: e.data.sinks.length, message: alertMessage(e.data) },
          "alert raised",
        );
        return;
      case "TaskPaused":
        logger.info(
          { task: formatTaskKey(e.data.key), ...(e.data.reason ? { reason: e.data.reason } : {}), actor },
          "task paused",
        );
        return;
      case "TaskResumed":
        logger.info({ task: formatTaskKey(e.data.key), actor }, "task resumed");
        return;
      case "TaskRetired":
        logger.info(
          { task: formatTaskKey(e.data.key), ...(e.data.reason ? { reason: e.data.reason } : {}), actor },
          "task retired",
        );
        return;
      case "IntervalRetried":
        logger.info(
          {
            task: formatTaskKey(e.data.key),
            interval: shortInstant(e.data.logicalDate),
            ...(e.data.reason ? { reason: e.data.reason } : {}),
            ...(e.data.parent ? { parent: formatTaskKey(e.data.parent) } : {}),
            actor: e.data.by,
          },
          "interval retried",
        );
        return;
      case "IntervalMarked":
        logger.info(
          {
            task: formatTaskKey(e.data.key),
            interval: shortInstant(e.data.logicalDate),
            outcome: e.data.outcome,
            reason: e.data.reason,
            actor: e.data.by,
          },
          "interval marked",
        );
        return;
      case "IntervalReset":
        if (e.data.reason === "backfill")
          logger.info(
            {
              task: formatTaskKey(e.data.key),
              from: shortInstant(e.data.logicalDate),
              ...(e.data.until ? { until: shortInstant(e.data.until) } : {}),
              actor,
            },
            "backfill",
          );
        else if (e.data.reason === "backfill_cancelled")
          logger.info(
            {
              task: formatTaskKey(e.data.key),
              backfill: e.data.backfillId,
              // Cut short: it finishes the interval under way first; else back where it stood.
              ...(e.data.until
                ? { finishing: shortInstant(e.data.until) }
                : { returnsTo: shortInstant(e.data.logicalDate) }),
              ...(e.data.note ? { reason: e.data.note } : {}),
              actor,
            },
            "backfill cancelled",
          );
        return;
      case "TaskDeclared":
        countDeclared(actor, "new task");
        return;
      case "TaskDeclarationChanged":
        countDeclared(actor, "changed task");
        return;
      case "TaskRevived":
        countDeclared(actor, "revived task");
        return;
      case "ConnectionDeclared":
        countDeclared(actor, "connection");
        return;
      case "WorkflowDeclared":
        countDeclared(actor, "workflow");
        return;
      case "WorkflowRetired":
        logger.info(
          {
            workflow: e.data.name,
            tasks: e.data.tasks.length,
            ...(e.data.reason ? { reason: e.data.reason } : {}),
            actor,
          },
          "workflow retired",
        );
        return;
      default:
        return;
    }
  };
}

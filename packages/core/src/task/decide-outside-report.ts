import { ValidationError } from "../errors.js";
import type { DomainEvent } from "../events/catalog.js";
import type { InstanceState } from "../instance/state.js";
import { runIdOf } from "../run/state.js";
import { nextCronTime } from "../schedule/cron.js";
import { isExternal } from "../spec.js";
import { instanceStream, taskStream } from "../streams.js";
import {
  type HaltedInput,
  type HaltedWrite,
  IntervalRefusedError,
  reopenedBelow,
  requireSlot,
  runOf,
  UnknownTaskError,
} from "./decide-halted.js";

/**
 * An outside task's interval reported by whoever produces its data (`operator: { type:
 * external }`). The report is recorded on the interval's attempt stream, in one atomic append;
 * the scheduler then completes the interval (or stops the task at it) when the task stands at
 * it, so a report ahead of an earlier interval is held until that one is in. Pure: the state
 * read in, the events to write (or a refusal saying why) out.
 */
export interface OutsideReport {
  readonly outcome: "succeeded" | "failed";
  /** Why it failed (required for a failure), or a note on a success. */
  readonly reason?: string;
}

/** What a report reads: the halted-interval input (the interval's stream as the log holds it). */
export type OutsideReportInput = HaltedInput;

export interface OutsideReportDecision {
  readonly task: string;
  readonly logicalDate: string;
  readonly outcome: "succeeded" | "failed";
  /**
   * `recorded`: written, for the interval the task stands at; `held`: written, ahead of the
   * interval the task stands at (it counts once the earlier ones are in); `unchanged`: the same
   * report was made before, nothing is written.
   */
  readonly status: "recorded" | "held" | "unchanged";
  /** The interval the task stands at (the first one not in). */
  readonly awaited: string;
  /** A report this one replaces (a failure followed by a success), or the same one made before. */
  readonly before: { readonly outcome: string; readonly by: string; readonly at: string } | null;
  /** The writes of the one append, in order (none: unchanged). */
  readonly writes: readonly HaltedWrite[];
  /** Descendants reopened: closed as upstream_failed for this interval when it was reported failed. */
  readonly reopened: readonly string[];
}

/** Decides a report: refuses it (nothing written) or gives the events of one append. */
export function decideOutsideReport(input: OutsideReportInput, report: OutsideReport): OutsideReportDecision {
  const { taskId: id, logicalDate: date, now } = input;
  const task = input.tasks.get(id);
  if (!task) throw new UnknownTaskError(`no task ${id} is declared`);
  if (!isExternal(task.spec))
    throw new IntervalRefusedError(
      `${id} is not an outside task (its operator is ${task.spec.operator.type}): Chronolog runs it, and only a task declared with operator { type: external } takes reports`,
    );
  if (task.status === "retired") throw new IntervalRefusedError(`${id} is retired: it takes no reports`);
  if (report.outcome === "failed" && !report.reason?.trim())
    throw new ValidationError("report", [
      { path: "reason", message: "a failed report says why: give a reason (--failed REASON)" },
    ]);
  requireSlot(task, date);
  const at = Date.parse(date);
  if (at < Date.parse(task.spec.startDate))
    throw new UnknownTaskError(`${id} has no interval ${date}: its startDate is ${task.spec.startDate}`);
  const end = nextCronTime(task.spec.cron, task.spec.timezone, new Date(at));
  if (end.getTime() > now)
    throw new IntervalRefusedError(
      `${id} ${date} has not ended yet (it ends at ${end.toISOString()}): an interval is reported once it is over`,
    );
  if (task.spec.endDate && at > Date.parse(task.spec.endDate))
    throw new UnknownTaskError(`${id} has no interval ${date}: its endDate is ${task.spec.endDate}`);

  const inst = input.instance;
  const before = previous(inst);
  const awaited = task.logicalDate;
  const base = { task: id, logicalDate: date, outcome: report.outcome, awaited, before };
  // The same report again writes nothing, unless the task waits for it and no longer holds it
  // (a backfill set the task back past it): then it is recorded again.
  const held = input.instances.get(instanceStream(task.key, date))?.reported;
  const again = !held && at >= Date.parse(awaited);
  if (before) {
    if (before.outcome === report.outcome && !again)
      return { ...base, status: "unchanged", writes: [], reopened: [] };
    // A producer delivering late after a failure is the common case; a success is never undone.
    if (before.outcome !== report.outcome && (before.outcome !== "failed" || report.outcome !== "succeeded"))
      throw new IntervalRefusedError(
        `${id} ${date} was reported ${before.outcome} by ${before.by} at ${before.at}: a report of ${report.outcome} is refused (a failed interval may be reported succeeded later, never the other way)`,
      );
  } else if (at < Date.parse(awaited)) {
    throw new IntervalRefusedError(
      `${id} has moved past ${date} without a report of it (it stands at ${awaited}): a report would change nothing`,
    );
  }

  const writes: HaltedWrite[] = [];
  // A failure the task had stopped at, now a success: what was closed for it goes on again.
  const reopened =
    report.outcome === "succeeded" && task.failure?.logicalDate === date && awaited === date
      ? reopenedBelow(input, task)
      : [];
  const run = reopened.length > 0 ? runOf(input, task, [task.id, ...reopened.map((t) => t.id)]) : null;
  if (run?.write) writes.push(run.write);
  const runId = inst?.runId ?? (task.spec.workflow ? runIdOf(task.spec.workflow, date) : undefined);
  const event: DomainEvent = {
    type: "IntervalReported",
    data: {
      key: task.key,
      logicalDate: date,
      outcome: report.outcome,
      ...(report.reason?.trim() ? { reason: report.reason.trim() } : {}),
      by: input.by,
      ...(runId ? { runId } : {}),
    },
  };
  writes.push({
    streamId: inst?.stream ?? instanceStream(task.key, date),
    expectedRevision: inst ? inst.revision : "no_stream",
    events: [event],
  });
  for (const child of reopened)
    writes.push({
      streamId: taskStream(child.key),
      expectedRevision: child.revision,
      events: [
        {
          type: "IntervalRetried",
          data: {
            key: child.key,
            logicalDate: date,
            by: input.by,
            reason: `reopened: its parent ${id} was reported succeeded`,
            parent: task.key,
          },
        },
      ],
    });
  return {
    ...base,
    status: at > Date.parse(awaited) ? "held" : "recorded",
    writes,
    reopened: reopened.map((t) => t.id),
  };
}

/** How the interval was reported or marked before (null: neither). */
function previous(inst: InstanceState | undefined): OutsideReportDecision["before"] {
  if (inst?.reported) return { outcome: inst.reported.outcome, by: inst.reported.by, at: inst.reported.at };
  if (inst?.marked)
    return {
      outcome: inst.marked.outcome === "success" ? "succeeded" : "skipped",
      by: inst.marked.by,
      at: inst.marked.at,
    };
  return null;
}

/** What a report did, in words (the CLI prints it, the API returns it as `message`). */
export function describeOutsideReport(d: OutsideReportDecision): string {
  const what = `${d.task} ${d.logicalDate} ${d.outcome}`;
  if (d.status === "unchanged")
    return `${d.task} ${d.logicalDate} was already reported ${d.outcome} by ${d.before?.by} at ${d.before?.at}: nothing written`;
  const parts = [
    d.before ? `reported ${what} (was reported ${d.before.outcome} by ${d.before.by})` : `reported ${what}`,
  ];
  if (d.status === "held")
    parts.push(
      `held: it counts once ${d.task} ${d.awaited} and every interval before ${d.logicalDate} are in (its intervals complete in order)`,
    );
  else if (d.outcome === "succeeded") parts.push("it counts as done for its children");
  else parts.push(`${d.task} stops at it until it is reported succeeded (or marked)`);
  if (d.reopened.length > 0)
    parts.push(`reopened ${d.reopened.length === 1 ? "descendant" : "descendants"} ${d.reopened.join(", ")}`);
  return parts.join("; ");
}

import { alertMessage } from "../alert/alert.js";
import { lastLineOf } from "../instance/state.js";
import { formatTaskKey } from "../keys.js";
import { shortInstant } from "../schedule/interval.js";
import { counted } from "../words.js";
import type { DomainEvent } from "./catalog.js";

/** The longest a free text (a reason, a value, a line of output) is shown in a summary. */
const TEXT_MAX = 120;

/** A free text on one line, cut to `max` characters. */
function oneLine(text: string, max = TEXT_MAX): string {
  const flat = text.replace(/\s*\n\s*/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 3)}...` : flat;
}

/** A declared value, as a field change shows it: strings as they are, the rest as JSON. */
function shownValue(v: unknown): string {
  if (v === undefined) return "(none)";
  return oneLine(typeof v === "string" ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v)), 60);
}

const because = (reason: string | undefined) => (reason ? `: ${oneLine(reason)}` : "");
const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

/**
 * What one event says, in a line of words: what happened to what, and why where it says. An
 * attempt's failure gives its error and the last line of its stderr, a declaration's change
 * the fields it changed (old -> new), a reset where the task was set back to and why, a
 * pause its reason. The stream, time and actor are the caller's to show beside it.
 */
export function summarizeEvent(e: DomainEvent): string {
  switch (e.type) {
    case "TaskDeclared": {
      const s = e.data.spec;
      return `${formatTaskKey(e.data.key)} declared: ${s.cron} ${s.timezone}, ${s.operator.type}${s.workflow ? ` in workflow ${s.workflow}` : ""}, first interval ${shortInstant(e.data.logicalDate)}`;
    }
    case "TaskDeclarationChanged":
      return `${formatTaskKey(e.data.key)} changed ${e.data.changes
        .map((c) => `${c.field}: ${shownValue(c.from)} -> ${shownValue(c.to)}`)
        .join("; ")}`;
    case "TaskPaused":
      return `${formatTaskKey(e.data.key)} paused${because(e.data.reason)}`;
    case "TaskResumed":
      return `${formatTaskKey(e.data.key)} resumed`;
    case "TaskRetired":
      return `${formatTaskKey(e.data.key)} retired${because(e.data.reason)}`;
    case "TaskRevived":
      return `${formatTaskKey(e.data.key)} revived${because(e.data.reason)}`;
    case "IntervalReset": {
      const d = e.data;
      const why =
        d.reason === "backfill"
          ? `backfill${d.backfillId ? ` ${d.backfillId}` : ""}${d.until ? ` until ${shortInstant(d.until)}` : ""}${d.priority !== undefined ? ` at priority ${d.priority}` : ""}`
          : d.reason === "catchup_disabled"
            ? "catch-up is off: jumped to the latest interval"
            : d.reason === "schedule_changed"
              ? "its schedule changed: the first interval of the new one"
              : d.reason === "backfill_cancelled"
                ? `backfill ${d.backfillId ?? ""} cancelled${d.until ? `: it ends after ${shortInstant(d.until)}, under way` : ""}${d.note ? `: ${d.note}` : ""}`
                : "by an operator";
      return `${formatTaskKey(d.key)} set to ${shortInstant(d.logicalDate)} (${why})${d.prevIntervalStart ? `, finished ${shortInstant(d.prevIntervalStart)}` : ""}`;
    }
    case "IntervalCompleted":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} completed${e.data.attempt ? ` by attempt ${e.data.attempt}` : ""}; next ${shortInstant(e.data.nextLogicalDate)}`;
    case "IntervalFailed":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} ${e.data.state.replace("_", " ")}${because(e.data.reason)}`;
    case "DispatchIntended":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} attempt ${e.data.attempt} to be sent${e.data.runId ? ` (run ${e.data.runId})` : ""}${e.data.notBefore ? `, not before ${shortInstant(e.data.notBefore)}` : ""}`;
    case "AttemptStarted":
      return `attempt ${e.data.attempt} started on ${e.data.workerId}${e.data.pid !== undefined ? ` (pid ${e.data.pid})` : ""}`;
    case "AttemptLeaseExtended":
      return `attempt ${e.data.attempt}'s lease extended to ${shortInstant(e.data.leaseExpiresAt)}`;
    case "AttemptHeartbeatExpired":
      return `attempt ${e.data.attempt} went silent: its lease expired at ${shortInstant(e.data.leaseExpiredAt)}${e.data.workerId ? ` (worker ${e.data.workerId})` : ""}`;
    case "AttemptSucceeded":
      return `attempt ${e.data.attempt} succeeded${e.data.cacheHit ? " (cache hit)" : ""} in ${seconds(e.data.durationMs)}`;
    case "AttemptFailed": {
      const d = e.data;
      const last = lastLineOf(d.output?.stderrTail ?? "");
      const retry = d.retryAt ? `; retry at ${shortInstant(d.retryAt)}` : "";
      return `attempt ${d.attempt} ${d.error.kind === "interrupted" ? "interrupted" : "failed"}: ${oneLine(d.error.message)}${last ? `; last line of stderr: ${oneLine(last)}` : ""}${retry}`;
    }
    case "AttemptAbandoned":
      return `attempt ${e.data.attempt} abandoned by ${e.data.by}${because(e.data.reason)}${e.data.retry ? "; a new attempt follows" : ""}`;
    case "AttemptCancelled":
      return `attempt ${e.data.attempt} cancelled${because(e.data.reason)}`;
    case "InstanceSkipped":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} skipped${because(e.data.reason)}`;
    case "InstanceUpstreamFailed":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} upstream failed (${formatTaskKey(e.data.failedParent)})${because(e.data.reason)}`;
    case "InstanceCancelled":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} cancelled${because(e.data.reason)}`;
    case "CompletionRejected":
      return `a "${e.data.report}" report${e.data.attempt !== undefined ? ` of attempt ${e.data.attempt}` : ""} rejected: ${e.data.reason.replaceAll("_", " ")}${e.data.workerId ? ` (worker ${e.data.workerId})` : ""}`;
    case "RunStarted": {
      const d = e.data;
      const params = Object.entries(d.params);
      return `run ${d.runId}${d.try !== undefined ? ` try ${d.try}` : ""} started (${d.trigger}, ${counted(d.tasks.length, "task")})${d.requestedBy ? ` for ${d.requestedBy}` : ""}${params.length > 0 ? `; params ${params.map(([k, v]) => `${k}=${oneLine(v, 40)}`).join(" ")}` : ""}`;
    }
    case "RunFinished": {
      const d = e.data;
      const parts = [
        [d.succeeded.length, "succeeded"],
        [d.failed.length, "failed"],
        [d.upstreamFailed.length, "upstream failed"],
        [d.skipped.length, "skipped"],
        [d.cancelled.length, "cancelled"],
      ] as const;
      const counts = parts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
      return `run ${d.runId} finished: ${d.state}${counts.length > 0 ? ` (${counts.join(", ")})` : ""}`;
    }
    case "AlertRaised":
      return `${e.data.kind.replace("_", " ")} alert: ${oneLine(alertMessage(e.data))} (${counted(e.data.sinks.length, "sink")})`;
    case "AlertDelivered":
      return `alert ${e.data.alertId} delivered to sink ${e.data.sink} (try ${e.data.attempt})`;
    case "AlertDeliveryFailed":
      return `alert ${e.data.alertId} not delivered to sink ${e.data.sink} (try ${e.data.attempt}): ${oneLine(e.data.error)}${e.data.retryAt ? `; next try ${shortInstant(e.data.retryAt)}` : "; given up"}`;
    case "ConnectionDeclared": {
      const s = e.data.spec;
      return `connection ${s.name} declared: ${s.operators.length > 0 ? s.operators.join(", ") : "any operator"}, at most ${s.maxParallelism} at once`;
    }
    case "ConnectionSlotsTaken":
      return `${counted(e.data.attempts.length, "slot")} of connection ${e.data.connection} taken`;
    case "WorkflowDeclared": {
      const s = e.data.spec;
      return `workflow ${s.name} declared in ${s.project}/${s.account}${s.cron ? `: ${s.cron}${s.timezone ? ` ${s.timezone}` : ""}` : ""}`;
    }
    case "IntervalRetried":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} retried by ${e.data.by}, with a fresh retry budget${e.data.parent ? ` (through its halted parent ${formatTaskKey(e.data.parent)})` : ""}${because(e.data.reason)}`;
    case "IntervalMarked":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} marked ${e.data.outcome === "success" ? "succeeded" : "skipped"} by ${e.data.by}${because(e.data.reason)}`;
    case "IntervalReported":
      return `${formatTaskKey(e.data.key)} ${shortInstant(e.data.logicalDate)} reported ${e.data.outcome} by ${e.data.by}${because(e.data.reason)}`;
    case "WorkflowRetired":
      return `workflow ${e.data.name} retired with ${counted(e.data.tasks.length, "task")}${e.data.tasks.length > 0 ? ` (${e.data.tasks.map(formatTaskKey).join(", ")})` : ""}${because(e.data.reason)}`;
    case "WorkerConnected":
      return `worker ${e.data.worker} on ${e.data.host} connected: ${e.data.queues.length === 1 ? "queue" : "queues"} ${e.data.queues.join(", ")}, capacity ${e.data.capacity}, version ${e.data.version}${e.data.running.length > 0 ? `, still running ${counted(e.data.running.length, "attempt")}` : ""}`;
    case "WorkerDisconnected":
      return `worker ${e.data.worker} disconnected: ${e.data.reason}`;
    case "WorkerReportRefused":
      return `worker ${e.data.worker}'s ${e.data.kind} report for ${e.data.token} refused: ${e.data.reason}`;
    case "WorkerReportRefusalsCounted":
      return `worker ${e.data.worker}: ${counted(e.data.count, "more report")} refused since ${e.data.from}, counted not recorded one by one (the latest: ${e.data.reason})`;
    case "AccessTokenIssued":
      return `token ${e.data.name} issued (${e.data.scope}${e.data.projects.length > 0 ? ` in ${e.data.projects.join(", ")}` : ""}${e.data.queues ? ` for queues ${e.data.queues.join(", ")}` : ""})`;
    case "AccessTokenRevoked":
      return `token ${e.data.name} revoked${because(e.data.reason)}`;
    case "Note": {
      const { text, ...rest } = e.data;
      const more = Object.keys(rest);
      return `note: ${oneLine(text)}${more.length > 0 ? ` (and ${more.join(", ")})` : ""}`;
    }
    default:
      return unreachable(e);
  }
}

function unreachable(e: never): never {
  throw new Error(`no summary for event ${(e as { type: string }).type}`);
}

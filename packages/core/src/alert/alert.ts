import { intervalLabel } from "../deadline/deadline.js";
import type { DomainEvent, DomainEventOf } from "../events/catalog.js";
import { formatTaskKey, type TaskKey } from "../keys.js";
import type { AlertKind, AlertSink } from "../spec.js";
import { alertStream } from "../streams.js";

/** What an alert is about. */
export interface AlertSubject {
  readonly task?: TaskKey;
  readonly workflow?: string;
  readonly runId?: string;
  readonly logicalDate?: string;
  readonly reason: string;
}

/** Deliveries of one sink of an alert before it is given up. */
export const ALERT_DELIVERY_TRIES = 5;
const FIRST_RETRY_MS = 1000;

/**
 * The alert to raise alongside an event, when a sink is declared for its kind: the stream and
 * the event, written at `no_stream` in the same append as its cause. `once` tells this cause
 * apart from an earlier one of the same subject (a task halting again at an interval rerun).
 */
export function raiseAlert(
  kind: AlertKind,
  sinks: readonly AlertSink[],
  subject: AlertSubject,
  once: string,
): { streamId: string; event: DomainEventOf<"AlertRaised"> } | null {
  const chosen = sinks.filter((s) => s.on.includes(kind));
  if (chosen.length === 0) return null;
  const about = subject.task
    ? `${formatTaskKey(subject.task)}@${subject.logicalDate ?? ""}`
    : (subject.runId ?? subject.workflow ?? "");
  const alertId = `${kind}:${about}#${once}`;
  return {
    streamId: alertStream(alertId),
    event: {
      type: "AlertRaised",
      data: {
        alertId,
        kind,
        ...(subject.task ? { task: subject.task } : {}),
        ...(subject.workflow ? { workflow: subject.workflow } : {}),
        ...(subject.runId ? { runId: subject.runId } : {}),
        ...(subject.logicalDate ? { logicalDate: subject.logicalDate } : {}),
        reason: subject.reason.slice(0, 4000),
        sinks: chosen,
      },
    },
  };
}

/** The words an alert says, for a sink's templates (`alert.message`) and the CLI. */
export function alertMessage(
  a: Pick<DomainEventOf<"AlertRaised">["data"], "kind" | "task" | "runId" | "logicalDate" | "reason">,
): string {
  const task = a.task ? formatTaskKey(a.task) : "";
  switch (a.kind) {
    case "task_failed":
      return `${task} halted at ${a.logicalDate}: ${a.reason}`;
    case "needs_operator":
      return `${task} at ${a.logicalDate} needs an operator: ${a.reason}`;
    case "run_failed":
      return `run ${a.runId} failed: ${a.reason}`;
    case "deadline_missed":
      return `${task} ${intervalLabel(a.logicalDate ?? "")} missed its ${a.reason}`;
    case "deadline_at_risk":
      return `${task} ${intervalLabel(a.logicalDate ?? "")} may miss its ${a.reason}`;
    case "deadline_met_late":
      return `${task} ${intervalLabel(a.logicalDate ?? "")} met its ${a.reason}`;
  }
}

export interface SinkDelivery {
  readonly attempts: number;
  readonly delivered: boolean;
  /** When the next try is due; null once delivered or given up. */
  readonly retryAt: string | null;
  readonly lastError: string | null;
}

/** One alert: the fold of its stream. */
export interface AlertState {
  readonly alertId: string;
  readonly stream: string;
  readonly raised: DomainEventOf<"AlertRaised">["data"];
  readonly raisedAt: string;
  readonly revision: bigint;
  readonly sinks: readonly SinkDelivery[];
}

export function alertDone(a: AlertState): boolean {
  return a.sinks.every((s) => s.delivered || s.retryAt === null);
}

/** Applies one alert-stream event. */
export function evolveAlert(
  state: AlertState | undefined,
  event: DomainEvent,
  at: { readonly revision: bigint; readonly recordedAt: string; readonly streamId: string },
): AlertState | undefined {
  switch (event.type) {
    case "AlertRaised":
      return {
        alertId: event.data.alertId,
        stream: at.streamId,
        raised: event.data,
        raisedAt: at.recordedAt,
        revision: at.revision,
        sinks: event.data.sinks.map(() => ({
          attempts: 0,
          delivered: false,
          retryAt: at.recordedAt,
          lastError: null,
        })),
      };
    case "AlertDelivered":
    case "AlertDeliveryFailed": {
      if (!state) return state;
      const d = event.data;
      const sinks = state.sinks.map((s, i) =>
        i !== d.sink
          ? s
          : event.type === "AlertDelivered"
            ? { attempts: d.attempt, delivered: true, retryAt: null, lastError: s.lastError }
            : {
                attempts: d.attempt,
                delivered: false,
                retryAt: event.data.retryAt ?? null,
                lastError: event.data.error,
              },
      );
      return { ...state, sinks, revision: at.revision };
    }
    default:
      return state;
  }
}

/** What one delivery's outcome records: delivered, or failed with the next try (if any is left). */
export function decideDelivery(
  state: AlertState,
  sink: number,
  outcome: { readonly ok: true } | { readonly ok: false; readonly error: string },
  now: number,
): DomainEvent {
  const attempt = (state.sinks[sink]?.attempts ?? 0) + 1;
  if (outcome.ok) return { type: "AlertDelivered", data: { alertId: state.alertId, sink, attempt } };
  const retryAt =
    attempt < ALERT_DELIVERY_TRIES
      ? new Date(now + FIRST_RETRY_MS * 2 ** (attempt - 1)).toISOString()
      : undefined;
  return {
    type: "AlertDeliveryFailed",
    data: {
      alertId: state.alertId,
      sink,
      attempt,
      error: outcome.error.slice(0, 4000),
      ...(retryAt ? { retryAt } : {}),
    },
  };
}

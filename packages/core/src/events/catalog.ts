import type { z } from "zod";
import { compiled } from "../compiled.js";
import {
  UnknownEventTypeError,
  UnsupportedSchemaVersionError,
  ValidationError,
  zodIssues,
} from "../errors.js";
import { instant, type TaskSpec } from "../spec.js";
import * as S from "./schemas.js";

type Upcaster = (data: unknown) => unknown;

interface CatalogEntry<Schema extends z.ZodType> {
  readonly schema: Schema;
  /** The version written today. */
  readonly version: number;
  /** `upcast[v]` turns data written at version v into data of version v + 1. */
  readonly upcast: Readonly<Record<number, Upcaster>>;
}

function entry<Schema extends z.ZodType>(
  schema: Schema,
  version = 1,
  upcast: Record<number, Upcaster> = {},
): CatalogEntry<Schema> {
  return { schema, version, upcast };
}

/** ConnectionDeclared v1 -> v2: the unread `sortOrder` is dropped. */
function connectionDeclaredV1toV2(data: unknown): unknown {
  return S.ConnectionDeclaredV1.parse(data);
}

/** AttemptFailed v1 -> v2: the error string becomes `{ kind, message }`. */
function attemptFailedV1toV2(data: unknown): unknown {
  const v1 = S.AttemptFailedV1.parse(data);
  const { error, ...rest } = v1;
  const kind = v1.exitCode !== null && v1.exitCode !== undefined ? "exit_code" : "unknown";
  return { ...rest, error: { kind, message: error } };
}

/** The closed catalog of events: the one source of runtime checks and TypeScript types. */
export const eventCatalog = {
  TaskDeclared: entry(S.TaskDeclared),
  TaskDeclarationChanged: entry(S.TaskDeclarationChanged),
  TaskPaused: entry(S.TaskPaused),
  TaskResumed: entry(S.TaskResumed),
  TaskRetired: entry(S.TaskRetired),
  TaskRevived: entry(S.TaskRevived),
  IntervalReset: entry(S.IntervalReset),
  IntervalCompleted: entry(S.IntervalCompleted),
  IntervalFailed: entry(S.IntervalFailed),
  IntervalRetried: entry(S.IntervalRetried),
  DispatchIntended: entry(S.DispatchIntended),
  AttemptStarted: entry(S.AttemptStarted),
  AttemptLeaseExtended: entry(S.AttemptLeaseExtended),
  AttemptHeartbeatExpired: entry(S.AttemptHeartbeatExpired),
  AttemptSucceeded: entry(S.AttemptSucceeded),
  AttemptFailed: entry(S.AttemptFailed, 2, { 1: attemptFailedV1toV2 }),
  AttemptAbandoned: entry(S.AttemptAbandoned),
  AttemptCancelled: entry(S.AttemptCancelled),
  InstanceSkipped: entry(S.InstanceSkipped),
  InstanceUpstreamFailed: entry(S.InstanceUpstreamFailed),
  InstanceCancelled: entry(S.InstanceCancelled),
  IntervalMarked: entry(S.IntervalMarked),
  IntervalReported: entry(S.IntervalReported),
  CompletionRejected: entry(S.CompletionRejected),
  RunStarted: entry(S.RunStarted),
  RunFinished: entry(S.RunFinished),
  AlertRaised: entry(S.AlertRaised),
  AlertDelivered: entry(S.AlertDelivered),
  AlertDeliveryFailed: entry(S.AlertDeliveryFailed),
  ConnectionDeclared: entry(S.ConnectionDeclared, 2, { 1: connectionDeclaredV1toV2 }),
  ConnectionSlotsTaken: entry(S.ConnectionSlotsTaken),
  WorkflowDeclared: entry(S.WorkflowDeclared),
  WorkflowRetired: entry(S.WorkflowRetired),
  WorkerConnected: entry(S.WorkerConnected),
  WorkerDisconnected: entry(S.WorkerDisconnected),
  WorkerReportRefused: entry(S.WorkerReportRefused),
  WorkerReportRefusalsCounted: entry(S.WorkerReportRefusalsCounted),
  AccessTokenIssued: entry(S.AccessTokenIssued),
  AccessTokenRevoked: entry(S.AccessTokenRevoked),
  Note: entry(S.Note),
} as const;

export type EventCatalog = typeof eventCatalog;
export type EventType = keyof EventCatalog;
export type EventDataOf<T extends EventType> = z.output<EventCatalog[T]["schema"]>;
export type EventInputOf<T extends EventType> = z.input<EventCatalog[T]["schema"]>;

/** A domain event: a type from the catalog and its data, as the deciders produce them. */
export type DomainEvent = {
  [T in EventType]: { readonly type: T; readonly data: EventDataOf<T> };
}[EventType];
export type DomainEventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;

export const EVENT_TYPES = Object.keys(eventCatalog) as EventType[];

export function isEventType(type: unknown): type is EventType {
  return typeof type === "string" && Object.hasOwn(eventCatalog, type);
}

export function currentSchemaVersion(type: EventType): number {
  return eventCatalog[type].version;
}

/** Validates data about to be written at the current schema version; returns the normalised data. */
export function validateEventData<T extends EventType>(type: T, data: unknown): EventDataOf<T>;
export function validateEventData(type: string, data: unknown): unknown;
export function validateEventData(type: string, data: unknown): unknown {
  if (!isEventType(type)) throw new UnknownEventTypeError(type);
  if (type === "TaskDeclared" && isDeclaredAroundParsedSpec(data)) return data;
  const result = compiled(eventCatalog[type].schema).safeParse(data);
  if (!result.success) throw new ValidationError(`event ${type}`, zodIssues(result.error));
  return result.data;
}

/**
 * Reads data recorded at `version`: upcasts it step by step to the current version, then
 * validates it. History is never rewritten; old versions are converted on read.
 */
export function upcastEventData(type: string, version: number, data: unknown): DomainEvent {
  if (!isEventType(type)) throw new UnknownEventTypeError(type);
  const e: CatalogEntry<z.ZodType> = eventCatalog[type];
  if (!Number.isInteger(version) || version < 1 || version > e.version) {
    throw new UnsupportedSchemaVersionError(type, version, e.version);
  }
  // Data written at the current version was validated and normalised when it was appended.
  if (version === e.version) return { type, data } as DomainEvent;
  let current = data;
  for (let v = version; v < e.version; v++) {
    const step = e.upcast[v];
    if (!step) throw new UnsupportedSchemaVersionError(type, version, e.version);
    current = step(current);
  }
  const result = compiled(e.schema).safeParse(current);
  if (!result.success)
    throw new ValidationError(`recorded event ${type} v${version}`, zodIssues(result.error));
  return { type, data: result.data } as DomainEvent;
}

/**
 * Marks a task spec that is what taskSpecSchema made of a declaration, in this process (noted
 * by the declaration's validation): the schema would give the same spec again. A property of
 * the spec that no copy takes (not enumerable) and no text shows (a symbol): cheaper to set and
 * to look at, for each of 100,000 specs, than an entry in a weak set.
 */
const PARSED_SPEC = Symbol("parsed by taskSpecSchema");

/** Notes that `spec` is the output of taskSpecSchema (see validateEventData). */
export function noteParsedSpec(spec: TaskSpec): void {
  Object.defineProperty(spec, PARSED_SPEC, { value: true });
}

const TASK_DECLARED_FIELDS = ["key", "spec", "logicalDate", "nextRunDate"] as const;

/**
 * Whether `data` is a TaskDeclared event's data as its schema gives it, made around a spec that
 * schema just parsed: its four fields in the schema's order, the spec's own key, and two
 * instants. A declaration of many tasks writes one such event for each, and parsing every spec
 * a second time (a copy of it too) was a tenth of its work. Any other data is parsed.
 */
function isDeclaredAroundParsedSpec(data: unknown): boolean {
  if (typeof data !== "object" || data === null || Object.getPrototypeOf(data) !== Object.prototype)
    return false;
  const d = data as Record<string, unknown>;
  const spec = d.spec as TaskSpec | undefined;
  if (typeof spec !== "object" || spec === null || d.key !== spec.key) return false;
  if ((spec as { [PARSED_SPEC]?: true })[PARSED_SPEC] !== true) return false;
  const fields = Object.keys(d);
  if (fields.length !== TASK_DECLARED_FIELDS.length) return false;
  for (let i = 0; i < fields.length; i++) if (fields[i] !== TASK_DECLARED_FIELDS[i]) return false;
  const check = compiled(instant);
  return check.safeParse(d.logicalDate).success && check.safeParse(d.nextRunDate).success;
}

// The API's answers as the UI reads them: the types generated from the OpenAPI document. Where
// the document leaves a shape open (an object's other fields are `unknown`; a run, its critical
// path and a trigger's answer are `unknown` whole), the fields the UI reads are named here.
import type { components } from "./generated/api";

type S = components["schemas"];

export type Whoami = S["UiWhoami"];
export type Grid = S["UiGrid"];
export type GridRow = S["UiGridRow"];
/** Every state a grid cell can be in (the grid endpoint's enum). */
export type GridCellState = S["UiGridCell"]["state"];
export type GraphNode = S["UiGraphNode"];
export type GraphEdge = S["UiGraph"]["edges"][number];
export type RecordedEvent = S["RecordedEvent"];
export type Verify = S["VerifyResult"];
export type NextStep = S["NextStep"];

/** A task as `GET /tasks/{key}` answers it, with the fields the document leaves open. */
export type TaskDetail = S["TaskDetail"] & {
  task: S["TaskDetail"]["task"] & {
    logicalDate: string;
    nextRunDate: string | null;
    prevIntervalStart: string | null;
    /** The backfill (or rerun) window it walks, if any. */
    backfill?: { backfillId?: string; from?: string; until: string } | null;
  };
};

/** An attempt, with the fields the document leaves open. */
export type Attempt = S["Attempt"] & {
  intendedAt?: string;
  workerId?: string | null;
  startedAt?: string | null;
  endedAt?: string | null;
  exitCode?: number | null;
  endReason?: string | null;
  stdoutTail: string;
  stderrTail: string;
  outputFile?: { bytes: number; sha256: string; cutBytes: number; error?: string } | null;
};

/** A run, with the fields the document leaves open. */
export type Run = S["Run"] & {
  trigger: string;
  actor?: string | null;
  startedAt?: string | null;
  finishedAt?: string | null;
  /** task -> the outcome an operator marked it with by hand. */
  marked?: Record<string, "success" | "skipped">;
};

export type RunSummary = S["RunSummary"];
/** Every state a task can have in a run (the summary's enum). */
export type RunTaskState = keyof S["RunSummary"]["counts"];

/** `GET /runs/{id}`, with the fields the document leaves open. */
export type RunView = S["RunDetail"] & {
  run: S["RunDetail"]["run"] & {
    trigger: string;
    actor?: string | null;
    startedAt?: string | null;
    finishedAt?: string | null;
    /** task -> the outcome an operator marked it with by hand. */
    marked?: Record<string, "success" | "skipped">;
  };
  /** The ways out of its halted tasks. */
  readonly nextSteps?: readonly NextStep[];
  instances: ReadonlyArray<S["RunDetail"]["instances"][number] & { attempts: readonly RunAttempt[] }>;
};

/** An attempt of a run's try, with the fields the document leaves open. */
export type RunAttempt = S["RunAttempt"] & {
  intendedAt?: string;
  startedAt?: string | null;
  endedAt?: string | null;
};

/** `GET /runs/{id}/critical-path` (the document says no more than `unknown`). */
export interface CriticalPath {
  readonly links: ReadonlyArray<{ readonly task: string }>;
  readonly pathMs: number;
  readonly wallMs: number;
}

/** `POST /workflows/{name}/runs` (the document says no more than `unknown`). */
export interface Triggered {
  readonly runId?: string;
}

export type WorkerListing = S["WorkerListing"];
export type Worker = S["Worker"];
export type DisconnectedWorker = S["DisconnectedWorker"];

import type { RecordedEvent } from "@chronolog/log";
import type { RunCommand } from "@chronolog/worker";

export interface SchedulerLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** What a process running a scheduler hears of its work (checkpoints, progress, fault tests). */
export interface SchedulerObserver {
  /** Each event, once the projection has applied it. */
  applied?(event: RecordedEvent): void;
  /** Intents are durable and their attempts about to go to the workers. */
  beforeDispatch?(commands: readonly RunCommand[]): void;
  /** An attempt's start is durable and its start permission about to go to its worker. */
  beforeProceed?(token: string): void;
  /** The tokens of attempts just handed to workers. */
  dispatched?(tokens: readonly string[]): void;
}

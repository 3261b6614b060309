import { ChronologError } from "@chronolog/core";

/** An operation refused because what it names does not exist (no such task, run, workflow). */
export class NotFoundError extends ChronologError {
  readonly type = "not_found" as const;
  constructor(message: string) {
    super(message);
    this.name = "NotFoundError";
  }
}

/** An operation refused because of where its subject stands (paused, running, retired). */
export class StateError extends ChronologError {
  readonly type = "state" as const;
  constructor(message: string) {
    super(message);
    this.name = "StateError";
  }
}

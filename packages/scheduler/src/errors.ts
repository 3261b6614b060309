import { ChronologError } from "@chronolog/core";

/** An operation refused for a reason a person can act on (no such task, wrong state). */
export class CliFacingError extends ChronologError {
  constructor(
    message: string,
    readonly type: "not_found" | "state",
  ) {
    super(message);
    this.name = "OperationError";
  }
}

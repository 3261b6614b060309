import type { FailureKind } from "../protocol.js";

/** What every operator runner gets besides its own spec. */
export interface OperatorContext {
  readonly token: string;
  readonly attempt: number;
  readonly logicalDate: string;
  readonly taskKey: string;
  /** `<stagingRoot>/<token>` when the worker has a staging root. */
  readonly stagingDir?: string;
  /**
   * The attempt's own working directory (its task's HOME and, unless the operator names a cwd,
   * working directory), when the worker gives each attempt one (see TaskSandbox.workRoot).
   */
  readonly workDir?: string;
  /** The task's worker queue, when it declares one. */
  readonly queue?: string;
  /** The RunCommand's extra environment (shell and node tasks). */
  readonly env?: Readonly<Record<string, string>>;
  /** Aborted on cancel or worker shutdown; the reason is an {@link AttemptAbort}. */
  readonly signal: AbortSignal;
  /** Receives the attempt's whole output as it comes, when the worker keeps it in a file. */
  readonly output?: { write(chunk: Uint8Array | string): void };
}

/** The reason an attempt's signal is aborted with. */
export class AttemptAbort extends Error {
  /** @param killGraceMs how long a shell child gets between SIGTERM and SIGKILL. */
  constructor(
    reason: string,
    readonly killGraceMs = 2000,
    /** A shutdown stopped it: the attempt is reported interrupted, which is not the task's failure. */
    readonly interrupted = false,
  ) {
    super(reason);
    this.name = "AttemptAbort";
  }
}

export interface OperatorOutcome {
  readonly ok: boolean;
  readonly durationMs: number;
  readonly exitCode: number | null;
  readonly stdoutTail: string;
  readonly stderrTail: string;
  /** Present iff `ok` is false. */
  readonly error?: { readonly kind: FailureKind; readonly message: string };
}

export function failure(
  kind: FailureKind,
  message: string,
  durationMs: number,
  extra: Partial<Pick<OperatorOutcome, "exitCode" | "stdoutTail" | "stderrTail">> = {},
): OperatorOutcome {
  return {
    ok: false,
    durationMs,
    exitCode: extra.exitCode ?? null,
    stdoutTail: extra.stdoutTail ?? "",
    stderrTail: extra.stderrTail ?? "",
    error: { kind, message },
  };
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : "";
    return `${err.message}${cause}`;
  }
  return String(err);
}

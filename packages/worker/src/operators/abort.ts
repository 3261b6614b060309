import { AttemptAbort } from "./types.js";

/** The text of an abort reason, for `cancelled: <reason>`. */
export function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof Error ? r.message : String(r);
}

/** How long a shell child gets between SIGTERM and SIGKILL when this signal aborts. */
export function abortKillGraceMs(signal: AbortSignal): number {
  return signal.reason instanceof AttemptAbort ? signal.reason.killGraceMs : 2000;
}

/** A promise that rejects when the signal aborts, and the function that stops listening. */
export function whenAborted(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let onAbort = (): void => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  promise.catch(() => {});
  return { promise, dispose: () => signal.removeEventListener("abort", onAbort) };
}

import { useLiveStatus } from "./live";

/** The live connection's state; when lost, the position it resumes from. */
export function LiveStatus() {
  const { status, last } = useLiveStatus();
  return (
    <span class={`live ${status}`} data-testid="live" data-status={status}>
      {status === "lost"
        ? `connection lost: resuming from position ${last === null ? "the head" : String(last + 1n)}…`
        : status}
    </span>
  );
}

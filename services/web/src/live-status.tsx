import { useLiveStatus } from "./live";
import { useRoute } from "./router";

/**
 * The live connection's state; when lost, the position it resumes from; on a page shown as of a
 * position (time travel), that nothing on it changes live, whatever the connection does.
 */
export function LiveStatus() {
  const { status, last } = useLiveStatus();
  const at = useRoute().q.get("at");
  if (at)
    return (
      <span
        class="live time-travel"
        data-testid="live"
        data-status="time-travel"
        title="This page shows the state as of a log position: it does not change live"
      >
        {`time travel: position ${at}`}
      </span>
    );
  return (
    <span class={`live ${status}`} data-testid="live" data-status={status}>
      {status === "lost"
        ? `connection lost: resuming from position ${last === null ? "the head" : String(last + 1n)}…`
        : status}
    </span>
  );
}

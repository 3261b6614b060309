import { summarizeEvent } from "@chronolog/core";
import type { RecordedEvent } from "@chronolog/log";

/**
 * One event as one readable line, the same for `log read`, `log tail` and `history`: its
 * position, when it was recorded (to the second, UTC), its type, its stream, who wrote it, and
 * what it says in words (see summarizeEvent). `--json` prints the events themselves instead.
 */
export function eventLine(e: RecordedEvent): string {
  const at = e.metadata.recordedAt.replace(/\.\d+Z$/, "Z");
  return `${String(e.position).padStart(8)}  ${at}  ${e.type}  ${e.streamId}  ${e.metadata.actor}  ${summarizeEvent(e)}`;
}

import { BodyCache } from "./body-cache.js";
import { EventReader, IndexMismatchError, type RecordSource } from "./event-reader.js";
import type { LoadedIndex } from "./index-file.js";
import { ForeignRecordError } from "./record.js";

/** Records read back besides the first and the last, spread over the log. */
const SAMPLES = 6;

/**
 * Why a checkpoint read from a file does not fit the topic, or null if it does. A checkpoint
 * is never taken on its word: the topic must still start at offset 0 and reach the
 * checkpoint's next offset, and the records read back (the first, the last that holds events,
 * and some between) must make exactly the events, positions and hashes the checkpoint holds
 * for them. A topic made anew under the same name, cut short, or another topic's checkpoint
 * fails one of these.
 */
export async function checkIndex(
  loaded: LoadedIndex,
  topic: { readonly low: bigint; readonly high: bigint },
  source: RecordSource,
): Promise<string | null> {
  const { index, state } = loaded;
  if (topic.low > 0n)
    return `the topic's records before offset ${topic.low} were deleted, and the checkpoint was made from offset 0`;
  if (topic.high < state.next)
    return `the topic ends at offset ${topic.high}, before the checkpoint's ${state.next}: it was cut short or made anew`;
  const { records } = index;
  if (records.size === 0)
    return index.eventCount === 0 ? null : "it holds events but no record that made them";
  if (records.first(0) !== 0) return "its first record does not begin at position 0";
  if (records.offset(records.size - 1) >= state.next) return "it holds a record at or past its next offset";
  const reader = new EventReader(() => index, new BodyCache(0), source);
  const last = records.size - 1;
  const picks = new Set([0, last]);
  for (let k = 1; k <= SAMPLES; k++) picks.add(Math.floor((k * last) / (SAMPLES + 1)));
  for (const i of [...picks].sort((a, b) => a - b)) {
    try {
      await reader.recordEvents(i);
    } catch (error) {
      if (error instanceof IndexMismatchError || error instanceof ForeignRecordError) return error.message;
      throw error;
    }
  }
  return null;
}

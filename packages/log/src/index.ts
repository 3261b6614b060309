export * from "./as-of.js";
export * from "./chained-events.js";
export * from "./errors.js";
export * from "./event-log.js";
export * from "./export.js";
export * from "./hash.js";
export * from "./ids.js";
export * from "./subscription.js";
export * from "./types.js";
export {
  checkExpectedRevision,
  checkStreamName,
  checkWrites,
  MAX_EVENT_BYTES,
  MAX_EVENTS_PER_APPEND,
  prepareEvents,
  revisionMatches,
} from "./validate.js";

import { randomInt } from "node:crypto";
import { seedIdMaps } from "@chronolog/core";

// The projection's maps are keyed by ids that producers choose: a seed of this process's own
// keeps a set of ids chosen in advance from colliding in them (and slowing every look-up).
seedIdMaps(randomInt(0x7fff_ffff));

export * from "./alerts.js";
export * from "./checkpoint.js";
export * from "./command.js";
export * from "./declare.js";
export * from "./diff.js";
export * from "./dispatcher.js";
export * from "./errors.js";
export * from "./membership.js";
export * from "./operations.js";
export * from "./payload.js";
export * from "./queries.js";
export * from "./reconcile/index.js";
export * from "./reports.js";
export * from "./runs.js";
export * from "./scheduler.js";
export * from "./timer-queue.js";

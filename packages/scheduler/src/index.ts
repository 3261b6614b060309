export * from "./checkpoint.js";
export * from "./declare.js";
export * from "./dispatcher.js";
export * from "./errors.js";
export * from "./operations.js";
export * from "./reports.js";
export * from "./scheduler.js";
export * from "./timer-queue.js";

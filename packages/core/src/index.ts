export * from "./errors.js";
export * from "./events/index.js";
export * from "./keys.js";
export * from "./spec.js";
export * from "./streams.js";

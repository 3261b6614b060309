export * from "./cause.js";
export * from "./deadline.js";
export * from "./durations.js";
export * from "./estimate.js";
export * from "./standing.js";

export * from "./explain.js";
export * from "./scheduler-projection.js";

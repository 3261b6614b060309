export * from "./blockers.js";
export * from "./decide.js";
export * from "./plan-run.js";
export * from "./state.js";
export * from "./summary.js";

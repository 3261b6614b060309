export * from "./blockers.js";
export * from "./decide.js";
export * from "./state.js";
export * from "./summary.js";

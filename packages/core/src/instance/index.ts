export * from "./budget.js";
export * from "./decide-report.js";
export * from "./held-attempt.js";
export * from "./retry.js";
export * from "./state.js";

export * from "./budget.js";
export * from "./decide-report.js";
export * from "./retry.js";
export * from "./state.js";

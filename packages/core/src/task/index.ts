export * from "./backfill-window.js";
export * from "./decide-halted.js";
export * from "./decide-success-commit.js";
export * from "./decide-task.js";
export * from "./intent.js";
export * from "./plan-backfill.js";
export * from "./state.js";
export * from "./success-path.js";

export * from "./app.js";
export * from "./auth.js";
export * from "./metrics.js";
export * from "./problem.js";
export * from "./server.js";
export * from "./state.js";
export * from "./tokens/index.js";

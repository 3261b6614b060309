export * from "./ahead.js";
export * from "./explain.js";
export * from "./explain-outside.js";
export * from "./id-map.js";
export * from "./scheduler-projection.js";
export * from "./workers.js";

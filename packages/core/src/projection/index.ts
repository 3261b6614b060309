export * from "./explain.js";
export * from "./id-map.js";
export * from "./scheduler-projection.js";
export * from "./workers.js";

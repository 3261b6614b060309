export * from "./state.js";
export * from "./success-path.js";

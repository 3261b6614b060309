export * from "./decide.js";
export * from "./state.js";

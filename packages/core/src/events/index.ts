export * from "./catalog.js";
export * from "./metadata.js";
export * as EventSchemas from "./schemas.js";
export * from "./summary.js";

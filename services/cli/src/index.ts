export { createLogger, type Logger } from "./logger.js";
export { toJson } from "./edge.js";

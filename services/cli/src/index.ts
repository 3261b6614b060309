export { toJson } from "./edge.js";
export { createLogger, type Logger } from "./logger.js";

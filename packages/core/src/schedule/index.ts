export * from "./cron.js";
export * from "./day.js";
export * from "./interval.js";

export * from "./cron.js";
export * from "./interval.js";

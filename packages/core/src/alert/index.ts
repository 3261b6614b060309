export * from "./alert.js";

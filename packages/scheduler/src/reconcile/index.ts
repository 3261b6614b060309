export * from "./expired-lease.js";
export * from "./lease-book.js";
export * from "./reconciler.js";
export * from "./stuck-instance.js";
export * from "./unconfirmed-intent.js";

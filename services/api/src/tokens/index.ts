// Access tokens of the HTTP API: the CLI issues and revokes them, the API checks them. Their own
// entry point (`@chronolog/api/tokens`), so that a command that only issues one does not load
// the HTTP server.
export * from "./book.js";
export * from "./issue.js";

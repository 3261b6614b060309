// The fault suite once more, on the EventStoreDB log (the stand-in server, or the real one
// CHRONOLOG_EVENTSTORE_URL names): same tests, same checks.
process.env.CHRONOLOG_FAULT_BACKEND = "eventstore";
await import("./faults.test.js");

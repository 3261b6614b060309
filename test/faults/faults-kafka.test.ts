// The fault suite once more, on the Kafka log: same tests, same checks.
process.env.CHRONOLOG_FAULT_BACKEND = "kafka";
await import("./faults.test.js");

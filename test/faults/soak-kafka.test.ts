// The fault soak once more, on the Kafka log: same workload, same faults (but the lock's: a
// Kafka log is shared by schedulers on purpose), same checks.
process.env.CHRONOLOG_FAULT_BACKEND = "kafka";
await import("./soak.test.js");

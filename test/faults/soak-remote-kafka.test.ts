// The fault soak with remote workers once more, on the Kafka log: same workload, faults and
// checks (see soak-remote-support.ts), one scheduler restarted on its port as on the embedded log.
// Skipped unless CHRONOLOG_KAFKA_BROKERS names a cluster.
import { remoteSoak } from "./soak-remote-support.js";

const brokers = process.env.CHRONOLOG_KAFKA_BROKERS;
if (!brokers) console.warn("soak-remote-kafka: skipped: no Kafka broker (set CHRONOLOG_KAFKA_BROKERS)");
remoteSoak({ backend: "kafka", ...(brokers ? { brokers } : {}) });

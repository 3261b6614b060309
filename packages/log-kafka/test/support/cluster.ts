import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll } from "vitest";

const root = fileURLToPath(new URL("../../../..", import.meta.url));
const run = promisify(execFile);

export interface TestCluster {
  /** The bootstrap brokers (set once the file's tests start). */
  readonly brokers: string;
  /** A topic no other test uses; deleted afterwards on a cluster shared with others. */
  topic(label: string): string;
  /** A Kafka client of the cluster, for what the log does not do (copying, deleting topics). */
  kafka(): Kafka;
}

/**
 * The cluster named by CHRONOLOG_KAFKA_BROKERS, or else a one-broker cluster started with
 * infra/kafka/start for this file (in a directory and on ports of its own, so that runs side
 * by side do not meet) and stopped afterwards.
 */
export function useCluster(): TestCluster {
  const state = { brokers: process.env.CHRONOLOG_KAFKA_BROKERS ?? "", env: null as NodeJS.ProcessEnv | null };
  const runId = `${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
  const topics: string[] = [];
  beforeAll(async () => {
    if (state.brokers) return;
    const env = {
      ...process.env,
      CHRONOLOG_KAFKA_DIR: join(root, "infra/kafka/.data", `test-${process.pid}`),
      CHRONOLOG_KAFKA_PORT: String(20_000 + (process.pid % 400) * 20),
    };
    state.env = env;
    const { stdout } = await run(join(root, "infra/kafka/start"), [], { env, timeout: 180_000 });
    state.brokers = stdout.trim().split("\n").at(-1) ?? "";
  }, 180_000);
  afterAll(async () => {
    if (state.env) {
      await run(join(root, "infra/kafka/stop"), [], { env: state.env, timeout: 60_000 });
    } else if (state.brokers && topics.length > 0) {
      const admin = new Kafka({ brokers: state.brokers.split(","), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics }).catch(() => {});
      await admin.disconnect();
    }
  }, 60_000);
  return {
    get brokers() {
      return state.brokers;
    },
    topic(label) {
      const topic = `chronolog-test.${runId}.${label}.${topics.length}`;
      topics.push(topic);
      return topic;
    },
    kafka() {
      return new Kafka({ brokers: state.brokers.split(","), logLevel: logLevel.NOTHING });
    },
  };
}

import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

/**
 * The Kafka cluster for a suite: the one `make test` started (CHRONOLOG_KAFKA_BROKERS), or a
 * one-broker cluster of this test file's own, started now and stopped by the returned function.
 * With `host`, always one of its own, listening on (and advertising) that address.
 */
export async function kafkaForSuite(
  label: string,
  options: { host?: string } = {},
): Promise<{ brokers: string; stop: () => Promise<void> }> {
  const shared = process.env.CHRONOLOG_KAFKA_BROKERS;
  if (shared && !options.host) return { brokers: shared, stop: async () => {} };
  const env = {
    ...process.env,
    CHRONOLOG_KAFKA_DIR: join(root, "infra/kafka/.data", `${label}-${process.pid}`),
    CHRONOLOG_KAFKA_PORT: String(21_000 + (process.pid % 400) * 20),
    ...(options.host ? { CHRONOLOG_KAFKA_HOST: options.host } : {}),
  };
  const { stdout } = await run(join(root, "infra/kafka/start"), [], { env, timeout: 180_000 });
  const brokers = stdout.trim().split("\n").at(-1) ?? "";
  return {
    brokers,
    stop: async () => {
      await run(join(root, "infra/kafka/stop"), [], { env, timeout: 60_000 });
    },
  };
}

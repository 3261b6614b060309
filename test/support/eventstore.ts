import { randomUUID } from "node:crypto";
import { EventStoreStandIn } from "@chronolog/log-eventstore/stand-in";

/**
 * The EventStoreDB server for a suite: the real one CHRONOLOG_EVENTSTORE_URL names
 * (`esdb://HOST:PORT?tls=false`), or else the in-process stand-in, started now and stopped by
 * `stop`. A line on stderr says which. `standIn` is null on a real server: tests that inject
 * faults skip there. `logUrl(label)` is a `--log` value for a log of its own.
 */
export async function eventstoreForSuite(suite: string): Promise<{
  connectionString: string;
  standIn: EventStoreStandIn | null;
  logUrl: (label: string) => string;
  uniqueStream: (label: string) => string;
  stop: () => Promise<void>;
}> {
  const real = process.env.CHRONOLOG_EVENTSTORE_URL;
  const standIn = real ? null : await EventStoreStandIn.start();
  const connectionString = real ?? (standIn as EventStoreStandIn).url;
  process.stderr.write(
    real
      ? `${suite}: on the EventStoreDB server at ${real} (CHRONOLOG_EVENTSTORE_URL)\n`
      : `${suite}: on the in-process EventStoreDB stand-in at ${connectionString} (wire compatibility with the client, not the server's semantics; set CHRONOLOG_EVENTSTORE_URL for a real server)\n`,
  );
  const run = `${Date.now().toString(36)}-${randomUUID().slice(0, 6)}`;
  let n = 0;
  const uniqueStream = (label: string) => `chronolog-test-${run}-${label}-${++n}`;
  return {
    connectionString,
    standIn,
    uniqueStream,
    logUrl: (label) => {
      const [base, query] = connectionString.split("?");
      return `${base}/${uniqueStream(label)}${query ? `?${query}` : ""}`;
    },
    stop: async () => {
      await standIn?.stop();
    },
  };
}

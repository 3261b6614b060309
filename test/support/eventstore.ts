import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { EventStoreStandIn } from "@chronolog/log-eventstore/stand-in";

const script = fileURLToPath(new URL("../../packages/log-eventstore/scripts/stand-in.mjs", import.meta.url));

/** The stand-in in a process of its own; `restart` asks it to restart (down for 300 ms). */
async function standInProcess(): Promise<{ url: string; restart: () => void; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [script], { stdio: ["pipe", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      const line = out.split("\n");
      if (line.length > 1) resolve(line[0] as string);
    });
    child.once("exit", (code) => reject(new Error(`the stand-in exited (${code}) before it listened`)));
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    url,
    restart: () => void child.kill("SIGUSR2"),
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/**
 * The EventStoreDB server for a suite: the real one CHRONOLOG_EVENTSTORE_URL names
 * (`esdb://HOST:PORT?tls=false`), or else the stand-in, started now and stopped by `stop`. A
 * line on stderr says which. The stand-in runs in this process (`standIn`, for tests that
 * inject faults), or with `separate` in a process of its own, for suites that wait on child
 * processes synchronously (a server in this process could not answer them meanwhile).
 * `standIn` is null on a real server or a separate stand-in. `logUrl(label)` is a `--log`
 * value for a log of its own.
 */
export async function eventstoreForSuite(
  suite: string,
  options: { separate?: boolean } = {},
): Promise<{
  connectionString: string;
  standIn: EventStoreStandIn | null;
  /** Restarts the stand-in (down for a moment); null on a real server. */
  restart: (() => Promise<void>) | null;
  logUrl: (label: string) => string;
  uniqueStream: (label: string) => string;
  stop: () => Promise<void>;
}> {
  const real = process.env.CHRONOLOG_EVENTSTORE_URL;
  const standIn = real || options.separate ? null : await EventStoreStandIn.start();
  const separate = !real && options.separate ? await standInProcess() : null;
  const connectionString = real ?? standIn?.url ?? (separate?.url as string);
  process.stderr.write(
    real
      ? `${suite}: on the EventStoreDB server at ${real} (CHRONOLOG_EVENTSTORE_URL)\n`
      : `${suite}: on the EventStoreDB stand-in at ${connectionString}, ${separate ? "a process of its own" : "in the test process"} (wire compatibility with the client, not the server's semantics; set CHRONOLOG_EVENTSTORE_URL for a real server)\n`,
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
    restart: standIn ? () => standIn.restart(300) : separate ? async () => separate.restart() : null,
    stop: async () => {
      await standIn?.stop();
      await separate?.stop();
    },
  };
}

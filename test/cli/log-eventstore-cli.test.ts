import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";
import { eventstoreForSuite } from "../support/eventstore.js";

const declaration = `tasks:
  - project: ingest
    account: acme
    name: orders_raw
    cron: "0 2 * * *"
    startDate: 2026-01-01T00:00:00Z
    catchup: false
    idempotent: true
    operator: { type: shell, command: "echo raw" }
`;
let server: Awaited<ReturnType<typeof eventstoreForSuite>>;
beforeAll(async () => {
  // The CLI runs synchronously here: the stand-in needs a process of its own.
  server = await eventstoreForSuite("cli --log esdb://", { separate: true });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe("--log esdb://", () => {
  it("declare, tasks, log verify and log export work on an EventStoreDB log", () => {
    const dir = tempDataDir("esdb-cli");
    const log = server.logUrl("cli");
    const example = join(dir, "orders.yaml");
    writeFileSync(example, declaration);
    const declared = chronolog(dir, ["--log", log, "declare", example]);
    expect(declared.code, declared.stderr).toBe(0);
    const tasks = chronolog(dir, ["--log", log, "tasks", "--json"]);
    expect(tasks.code, tasks.stderr).toBe(0);
    expect(JSON.parse(tasks.stdout).length).toBeGreaterThan(0);
    const verified = chronolog(dir, ["--log", log, "log", "verify"]);
    expect(verified.code, verified.stderr).toBe(0);
    const file = join(dir, "export.jsonl");
    const exported = chronolog(dir, ["--log", log, "log", "export"]);
    expect(exported.code, exported.stderr).toBe(0);
    writeFileSync(file, exported.stdout);
    // The export reads back offline, with the same tasks.
    const offline = chronolog(dir, ["--file", file, "tasks", "--json"]);
    expect(offline.code, offline.stderr).toBe(0);
    expect(JSON.parse(offline.stdout)).toEqual(JSON.parse(tasks.stdout));
  });

  it("a malformed URL or a system stream is exit 2, naming the forms", () => {
    const dir = tempDataDir("esdb-cli-bad");
    const bad = chronolog(dir, ["--log", "esdb:/nowhere", "tasks"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("esdb://HOST:PORT");
    const system = chronolog(dir, ["--log", "esdb://127.0.0.1:1/$all?tls=false", "tasks"]);
    expect(system.code).toBe(2);
    expect(system.stderr).toContain("system stream");
  });

  it("the embedded log never loads the gRPC client, an esdb:// log does", () => {
    const dir = tempDataDir("esdb-cli-lazy");
    const probe = join(dir, "probe.cjs");
    writeFileSync(
      probe,
      `process.on("exit", () => { if (Object.keys(require.cache).some((k) => k.includes("@grpc"))) process.stderr.write("grpc loaded\\n"); });\n`,
    );
    const example = join(dir, "orders.yaml");
    writeFileSync(example, declaration);
    const before = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `--require ${probe}`;
    try {
      const embedded = chronolog(dir, ["declare", example]);
      expect(embedded.code, embedded.stderr).toBe(0);
      expect(embedded.stderr).not.toContain("grpc loaded");
      const esdb = chronolog(dir, ["--log", server.logUrl("lazy"), "declare", example]);
      expect(esdb.code, esdb.stderr).toBe(0);
      expect(esdb.stderr).toContain("grpc loaded");
    } finally {
      if (before === undefined) delete process.env.NODE_OPTIONS;
      else process.env.NODE_OPTIONS = before;
    }
  });
});

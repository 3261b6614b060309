import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { EventLog } from "@chronolog/log";
import { kafkaSecurityFromEnv, openKafkaLog } from "@chronolog/log-kafka";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, type CliResult, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * A broker whose only listener takes SASL_SSL (infra/kafka/start with
 * CHRONOLOG_KAFKA_SECURITY=sasl_ssl: a CA of its own, SCRAM and PLAIN users): the log appends
 * and reads over TLS and SASL, `chronolog` declares and runs a task through kafka+ssl://, and
 * a wrong password, a plaintext client, a client without the CA, a client certificate of
 * another CA and bad settings are refused with a clear error and nothing written. No output
 * of any of it holds a password.
 */
const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);
const clusterEnv = {
  ...process.env,
  CHRONOLOG_KAFKA_DIR: join(root, "infra/kafka/.data", `tls-test-${process.pid}`),
  CHRONOLOG_KAFKA_PORT: String(29_000 + (process.pid % 40) * 10),
  CHRONOLOG_KAFKA_SECURITY: "sasl_ssl",
};
const sec = join(clusterEnv.CHRONOLOG_KAFKA_DIR, "security");
const WRONG = "not-the-password-7f3a";
let brokers = "";
let password = "";
let dir = "";
let startErr = "";
/** Every output of every process this file ran: none may hold a password. */
const outputs: string[] = [];
const procs: ChildProcess[] = [];

/** The client settings start wrote (security/client.env), as variables. */
function clientEnv(): Record<string, string> {
  return Object.fromEntries(
    readFileSync(join(sec, "client.env"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split("=", 2) as [string, string]),
  );
}

/** Without any CHRONOLOG_KAFKA_* setting of the test's own environment. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith("CHRONOLOG_KAFKA") && k !== "CHRONOLOG_LOG") env[k] = v;
  return { ...env, CHRONOLOG_LOG_FORMAT: "json", CHRONOLOG_LOG_LEVEL: "info" };
}

/** Runs `chronolog` with these settings; several may run at once. */
function cli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, "--data-dir", dir, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...baseEnv(), ...env },
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise((resolve) => {
    child.once("close", (code) => {
      clearTimeout(timer);
      outputs.push(stdout, stderr);
      resolve({ code, stdout, stderr });
    });
  });
}

const topic = `tls-${process.pid}`;
const secured = () => ({ ...clientEnv(), CHRONOLOG_LOG: `kafka+ssl://${brokers}/${topic}` });

/** The CLI's topic, read by a client of the test's own (over TLS and SASL as well). */
let reader: EventLog;
async function events(): Promise<Array<{ type: string; streamId: string; position: bigint }>> {
  return (await reader.readAll()).map((e) => ({ type: e.type, streamId: e.streamId, position: e.position }));
}

beforeAll(async () => {
  dir = tempDataDir("kafka-tls");
  try {
    const { stdout, stderr } = await run(join(root, "infra/kafka/start"), [], {
      env: clusterEnv,
      timeout: 180_000,
    });
    startErr = stderr;
    brokers = stdout.trim().split("\n").at(-1) ?? "";
  } catch (error) {
    throw new Error(`infra/kafka/start failed: ${(error as { stderr?: string }).stderr ?? error}`);
  }
  password = readFileSync(join(sec, "password"), "utf8");
  reader = await openKafkaLog({
    brokers,
    topic,
    actor: "test-reader",
    ...kafkaSecurityFromEnv(clientEnv(), { tls: true }),
  });
}, 240_000);

afterAll(async () => {
  for (const p of procs) p.kill("SIGKILL");
  await reader?.close();
  await run(join(root, "infra/kafka/stop"), [], { env: clusterEnv, timeout: 60_000 }).catch(() => {});
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe("a Kafka log over TLS and SASL", () => {
  it("start says where the CA and the password are; the listener takes nothing else", () => {
    expect(startErr).toContain(`CA certificate: ${join(sec, "ca.pem")}`);
    expect(startErr).toContain(`password in ${join(sec, "password")}`);
    expect(startErr).not.toContain(password);
    expect(password.length).toBeGreaterThanOrEqual(20);
    expect(clientEnv()).toEqual({
      CHRONOLOG_KAFKA_CA_FILE: join(sec, "ca.pem"),
      CHRONOLOG_KAFKA_SASL_MECHANISM: "scram-sha-512",
      CHRONOLOG_KAFKA_USERNAME: "chronolog",
      CHRONOLOG_KAFKA_PASSWORD_FILE: join(sec, "password"),
    });
  });

  it("appends and reads over TLS with SCRAM-SHA-512, and PLAIN with a client certificate", async () => {
    const ca = readFileSync(join(sec, "ca.pem"), "utf8");
    const writer = await openKafkaLog({
      brokers,
      topic: `${topic}-lib`,
      actor: "test",
      tls: { ca },
      sasl: { mechanism: "scram-sha-512", username: "chronolog", password },
    });
    try {
      await writer.append("note-tls", [{ type: "Note", data: { text: "over TLS" } }], {
        expectedRevision: "no_stream",
      });
      await writer.append("note-tls", [{ type: "Note", data: { text: "again" } }], { expectedRevision: 0n });
    } finally {
      await writer.close();
    }
    const reader = await openKafkaLog({
      brokers,
      topic: `${topic}-lib`,
      actor: "reader",
      createTopic: false,
      tls: {
        ca,
        cert: readFileSync(join(sec, "client.pem"), "utf8"),
        key: readFileSync(join(sec, "client.key"), "utf8"),
      },
      sasl: { mechanism: "plain", username: "chronolog", password },
    });
    try {
      const read = (await reader.readStream("note-tls")).map((e) => e.data);
      expect(read).toEqual([{ text: "over TLS" }, { text: "again" }]);
    } finally {
      await reader.close();
    }
  });

  it("chronolog declares and runs a task through kafka+ssl:// (SCRAM-SHA-256, password from the environment)", async () => {
    const env = {
      ...secured(),
      CHRONOLOG_KAFKA_SASL_MECHANISM: "SCRAM-SHA-256",
      CHRONOLOG_KAFKA_PASSWORD: password,
      CHRONOLOG_KAFKA_PASSWORD_FILE: "",
    };
    const day = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 86_400_000;
    const file = join(dir, "tls.yaml");
    writeFileSync(
      file,
      `tasks:\n  - { project: sec, account: a, name: hello, cron: "0 0 * * *", startDate: "${new Date(day).toISOString()}", endDate: "${new Date(day + 43_200_000).toISOString()}", idempotent: true, operator: { type: shell, command: "echo hello over tls" } }\n`,
    );
    const declared = await cli(["declare", file], env);
    expect(declared.code, declared.stderr).toBe(0);

    const scheduler = spawn(
      process.execPath,
      [CLI, "--data-dir", dir, "scheduler", "--workers", "1", "--reconcile-ms", "200"],
      { stdio: ["ignore", "pipe", "pipe"], env: { ...baseEnv(), ...env } },
    );
    procs.push(scheduler);
    const lines: string[] = [];
    for (const stream of [scheduler.stdout, scheduler.stderr])
      createInterface({ input: stream }).on("line", (l) => lines.push(l));
    const exited = new Promise((resolve) => scheduler.once("exit", resolve));
    const ended = await waitUntil(
      "the task's interval to complete",
      async () => {
        const ev = await events();
        return ev.some((e) => e.type === "IntervalCompleted") ? ev : undefined;
      },
      40_000,
      100,
    );
    scheduler.kill("SIGTERM");
    await exited;
    outputs.push(lines.join("\n"));
    expect(ended.filter((e) => e.type === "AttemptSucceeded")).toHaveLength(1);
    expect(lines.some((l) => l.includes('"shards assigned"'))).toBe(true);
    const logs = await cli(["logs", "sec/a/hello"], env);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toContain("hello over tls");
  });

  it("refuses a wrong password, a plaintext client, a client without the CA and a foreign client certificate; writes nothing", async () => {
    const file = join(dir, "more.yaml");
    writeFileSync(
      file,
      `tasks:\n  - { project: sec, account: a, name: other, cron: "0 0 * * *", startDate: "2026-01-01T00:00:00Z", idempotent: true, operator: { type: shell, command: "true" } }\n`,
    );
    const before = await events();
    expect(before.length).toBeGreaterThan(0);
    // A client certificate from another CA: the broker ends the handshake.
    const other = join(dir, "other");
    mkdirSync(other);
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"].concat(
        ["-subj", "/CN=not the cluster's", "-keyout", join(other, "k.pem"), "-out", join(other, "c.pem")],
      ),
      { stdio: "ignore" },
    );
    const withoutCa: Record<string, string> = secured();
    delete withoutCa.CHRONOLOG_KAFKA_CA_FILE;
    const [wrong, plaintext, untrusted, foreign] = await Promise.all([
      cli(["declare", file], {
        ...secured(),
        CHRONOLOG_KAFKA_PASSWORD_FILE: "",
        CHRONOLOG_KAFKA_PASSWORD: WRONG,
      }),
      cli(["declare", file], { ...withoutCa, CHRONOLOG_LOG: `kafka://${brokers}/${topic}` }),
      cli(["declare", file], withoutCa),
      cli(["declare", file], {
        ...secured(),
        CHRONOLOG_KAFKA_CERT_FILE: join(other, "c.pem"),
        CHRONOLOG_KAFKA_KEY_FILE: join(other, "k.pem"),
      }),
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('the brokers refused user "chronolog" (SASL SCRAM-SHA-512)');
    expect(plaintext.code).toBe(1);
    expect(plaintext.stderr).toContain(`kafka broker ${brokers} speaks TLS, and this client does not`);
    expect(plaintext.stderr).toContain("use kafka+ssl://");
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toContain("the broker's certificate is not trusted");
    expect(untrusted.stderr).toContain("CHRONOLOG_KAFKA_CA_FILE");
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain("the broker refused this client's certificate");

    const after = await events();
    expect(after).toEqual(before);
    expect(after.some((e) => e.streamId.includes("other"))).toBe(false);
  });

  it("refuses settings it cannot use, naming the variable, before it connects", async () => {
    const good = secured();
    const fromEnv: Array<[Record<string, string>, boolean, string]> = [
      [
        { ...good, CHRONOLOG_KAFKA_PASSWORD_FILE: join(dir, "no-such") },
        true,
        `CHRONOLOG_KAFKA_PASSWORD_FILE=${join(dir, "no-such")}: no such file (the password)`,
      ],
      [
        { ...good, CHRONOLOG_KAFKA_PASSWORD: WRONG },
        true,
        "CHRONOLOG_KAFKA_PASSWORD and CHRONOLOG_KAFKA_PASSWORD_FILE are both set: give one",
      ],
      [
        { ...good, CHRONOLOG_KAFKA_USERNAME: "" },
        true,
        "CHRONOLOG_KAFKA_SASL_MECHANISM is set but CHRONOLOG_KAFKA_USERNAME is not",
      ],
      [
        { CHRONOLOG_KAFKA_USERNAME: "chronolog", CHRONOLOG_KAFKA_PASSWORD: WRONG },
        true,
        "CHRONOLOG_KAFKA_USERNAME, CHRONOLOG_KAFKA_PASSWORD set without CHRONOLOG_KAFKA_SASL_MECHANISM",
      ],
      [{ ...good, CHRONOLOG_KAFKA_CA_FILE: join(sec, "password") }, true, "no PEM certificate in it"],
      [
        { ...good, CHRONOLOG_KAFKA_CERT_FILE: join(sec, "client.pem") },
        true,
        "CHRONOLOG_KAFKA_CERT_FILE is set without CHRONOLOG_KAFKA_KEY_FILE",
      ],
      [
        {
          ...good,
          CHRONOLOG_KAFKA_CERT_FILE: join(sec, "client.pem"),
          CHRONOLOG_KAFKA_KEY_FILE: join(sec, "ca.pem"),
        },
        true,
        "not an unencrypted PEM private key",
      ],
      [{ ...good, CHRONOLOG_KAFKA_PASSWORD_FILE: sec }, true, "a directory, not a file"],
    ];
    for (const [env, tls, message] of fromEnv)
      expect(() => kafkaSecurityFromEnv(env, { tls })).toThrow(message);

    // Through the command line: exit 2, before any connection.
    const cases: Array<[Record<string, string>, string]> = [
      [
        { ...good, CHRONOLOG_KAFKA_SASL_MECHANISM: "gssapi" },
        'CHRONOLOG_KAFKA_SASL_MECHANISM="gssapi": expected plain, scram-sha-256, scram-sha-512',
      ],
      [
        { ...good, CHRONOLOG_LOG: `kafka://${brokers}/${topic}` },
        "CHRONOLOG_KAFKA_CA_FILE is set but the log URL is plaintext kafka://: use kafka+ssl:// for TLS",
      ],
      [
        {
          CHRONOLOG_LOG: `kafka://${brokers}/${topic}`,
          CHRONOLOG_KAFKA_SASL_MECHANISM: "plain",
          CHRONOLOG_KAFKA_USERNAME: "chronolog",
          CHRONOLOG_KAFKA_PASSWORD: WRONG,
        },
        "kafka SASL PLAIN sends the password as it is: use it over TLS (kafka+ssl://)",
      ],
      [
        { CHRONOLOG_LOG: `kafka+ssl://chronolog:${WRONG}@${brokers}/${topic}` },
        "a Kafka log URL takes no credentials",
      ],
      [
        { CHRONOLOG_LOG: `kafka+ssl://${brokers}/${topic}?password=${WRONG}` },
        "a Kafka log URL takes no options",
      ],
    ];
    const results = await Promise.all(cases.map(([env]) => cli(["tasks"], env)));
    cases.forEach(([, message], i) => {
      const r = results[i] as CliResult;
      expect(r.code, `${message}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(message);
    });
    // A writer's record layout (a rolling upgrade pins it to 2): 2 or 3, nothing else.
    const file = join(dir, "layout.yaml");
    writeFileSync(
      file,
      'tasks:\n  - { project: p, account: a, name: t, cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", operator: { type: noop } }\n',
    );
    const layout = await cli(["declare", file], {
      ...good,
      CHRONOLOG_LOG: `kafka+ssl://${brokers}/${topic}`,
      CHRONOLOG_KAFKA_RECORD_LAYOUT: "4",
    });
    expect(layout.code, layout.stderr).toBe(2);
    expect(layout.stderr).toContain('CHRONOLOG_KAFKA_RECORD_LAYOUT "4": expected 2 or 3');
  });

  it("no output of any of the above holds a password", () => {
    expect(outputs.length).toBeGreaterThan(15);
    for (const out of outputs) {
      expect(out).not.toContain(password);
      expect(out).not.toContain(WRONG);
    }
  });
});

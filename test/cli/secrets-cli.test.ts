import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { api, createToken, key, startApi } from "../api/support.js";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * A secret a task prints in every way it can (stdout, stderr, its environment, an HTTP header
 * echoed back by a server, an exception message, encoded) leaves no trace of its value or its
 * encodings in any byte of the data directory, the service log, the API's answers or alerts.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

/** Every file under `dir`, at any depth. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/** Every string value of the key `token` in a JSON value. */
function tokensIn(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) tokensIn(v, into);
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "token" && typeof v === "string") into.add(v);
      else tokensIn(v, into);
    }
  }
  return into;
}

describe("secrets never in clear", () => {
  it("a task printing its secret every way leaves no trace of it anywhere", async () => {
    // A value whose base64 and URL-encoded forms differ from it and from each other.
    const secret = `s3cr3t/${randomBytes(9).toString("base64")}+?&= ~${randomBytes(4).toString("hex")}`;
    const b64 = Buffer.from(secret).toString("base64");
    const b64url = Buffer.from(secret).toString("base64url");
    const forms = [
      secret,
      b64,
      b64.replace(/=+$/, ""),
      b64url,
      encodeURIComponent(secret),
      encodeURIComponent(secret).replaceAll("%20", "+"),
    ];

    // An echo server on loopback: it answers every request with its headers and body, and
    // keeps what it received (alerts come to it too).
    const received: { url: string; headers: IncomingMessage["headers"]; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => {
        body += c.toString();
      });
      req.on("end", () => {
        received.push({ url: req.url ?? "", headers: req.headers, body });
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ headers: req.headers, body }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    afterAll(() => new Promise((r) => server.close(r)));

    const dir = tempDataDir("secrets");
    left.dirs.push(dir);
    const files = tempDataDir("secrets-files");
    left.dirs.push(files);
    writeFileSync(join(files, "token"), `${secret}\n`);
    const module = join(files, "leak.mjs");
    writeFileSync(
      module,
      `export default async function leak(_args, ctx) {
  const v = process.env.API_TOKEN;
  console.log("node stdout " + v);
  console.error("node stderr " + encodeURIComponent(v));
  ctx.log("node log " + Buffer.from(v).toString("base64url"));
  throw new Error("node failed with " + v);
}
`,
    );
    const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
    const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
    const common = `cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", idempotent: true`;
    const decl = join(files, "secrets.yaml");
    writeFileSync(
      decl,
      `connections:
  - { name: echo, secrets: { API_TOKEN: { env: LEAK_TEST_TOKEN } } }
workflows:
  - name: leaks
    project: p
    account: a
    ${common.replaceAll(", ", "\n    ").replaceAll('"0 * * * *"', '"0 * * * *"')}
    alerts: [ { http: { url: "http://127.0.0.1:${port}/alert" } } ]
    tasks:
      - name: sh
        secrets: { API_TOKEN: { file: "${join(files, "token")}" } }
        operator:
          type: shell
          command: >-
            echo "stdout $API_TOKEN"; echo "stderr $API_TOKEN" >&2; env;
            printf %s "$API_TOKEN" | base64 -w0; echo; printf %s "$API_TOKEN" | base64 -w0 | tr '+/' '-_';
            echo; echo "failing with $API_TOKEN" >&2; exit 3
      - name: node
        secrets: { API_TOKEN: { command: "cat '${join(files, "token")}'" } }
        operator: { type: node, module: "${module}" }
      - name: unset
        secrets: { API_TOKEN: { env: LEAK_TEST_NOT_SET } }
        operator: { type: shell, command: "echo never runs" }
      - name: call
        connection: echo
        operator:
          type: http
          method: POST
          url: "http://127.0.0.1:${port}/echo"
          headers: { Authorization: "Bearer {{ secrets.API_TOKEN }}", X-Token: "{{ secrets.API_TOKEN }}" }
          body: '{"token": "{{ secrets.API_TOKEN }}"}'
`,
    );
    const declared = chronolog(dir, ["declare", decl]);
    expect(declared.code, declared.stderr).toBe(0);
    const read = createToken(dir, "reader", "read");
    // The http task's secret is in the scheduler's environment (so its workers'); chronolog
    // processes get the test's environment.
    process.env.LEAK_TEST_TOKEN = secret;
    const up = await startApi(left, dir, ["up", "--workers", "1"]);
    delete process.env.LEAK_TEST_TOKEN;
    const answers: string[] = [];
    const get = async (path: string) => {
      const r = await api(up.url, path, { token: read });
      answers.push(r.text);
      return r;
    };
    for (const name of ["sh", "node", "call", "unset"]) {
      await waitUntil(`${name} to end`, async () => {
        const r = await get(`/tasks/${key(`p/a/${name}/ALL`)}/attempts`);
        return /"(succeeded|failed)"/.test(r.text) ? true : undefined;
      });
    }
    const echoed = received.find((r) => r.url === "/echo");
    expect(echoed?.headers["x-token"], JSON.stringify(answers.slice(-3))).toBe(secret);
    expect(echoed?.headers.authorization).toBe(`Bearer ${secret}`);
    expect(JSON.parse(echoed?.body ?? "{}")).toEqual({ token: secret });
    // The node task's alert is the one whose reason carries its exception's (masked) message.
    await waitUntil("the node task's alert", () =>
      received.some((r) => r.url === "/alert" && r.body.includes('"task":"p/a/node/ALL"')) ? true : undefined,
    );
    for (const name of ["sh", "node", "call"]) {
      const attempts = await get(`/tasks/${key(`p/a/${name}/ALL`)}/attempts`);
      await get(`/tasks/${key(`p/a/${name}/ALL`)}/history`);
      for (const token of tokensIn(attempts.body)) {
        const output = await get(`/attempts/${encodeURIComponent(token)}/output`);
        if (output.status === 200) expect(output.text).toContain("***");
      }
    }
    await get("/log?from=0&limit=10000");
    // A secret that cannot be resolved fails its attempt, naming the secret and its source.
    const unset = await get(`/tasks/${key("p/a/unset/ALL")}/attempts`);
    expect(unset.text).toContain(
      "secret API_TOKEN (environment variable LEAK_TEST_NOT_SET): the variable is not set on this worker",
    );
    // The data directory as it is while the scheduler runs (the log's WAL included) ...
    const running = filesUnder(dir).map((f): [string, Buffer] => [`${f} (running)`, readFileSync(f)]);
    expect(running.some(([f]) => f.includes("log.db-wal"))).toBe(true);
    up.child.kill("SIGTERM");
    await new Promise((r) => up.child.once("exit", r));
    const cli = [
      chronolog(dir, ["attempts", "p/a/sh"]),
      chronolog(dir, ["logs", "p/a/node"]),
      chronolog(dir, ["rebuild"]),
    ];
    expect(cli[0]?.stdout).toContain("***");

    const places: [string, Buffer][] = [
      ["the service log", Buffer.from(up.output())],
      ...answers.map((a, i): [string, Buffer] => [`API answer ${i}`, Buffer.from(a)]),
      ...received
        .filter((r) => r.url === "/alert")
        .map((r, i): [string, Buffer] => [`alert ${i}`, Buffer.from(r.body)]),
      ...cli.map((r, i): [string, Buffer] => [`cli ${i}`, Buffer.from(r.stdout + r.stderr)]),
      ...running,
      // ... and once it stopped (its last snapshot made).
      ...filesUnder(dir).map((f): [string, Buffer] => [f, readFileSync(f)]),
    ];
    const names = places.map(([n]) => n.replace(dir, "DIR"));
    expect(names).toEqual(expect.arrayContaining(["DIR/log.db", expect.stringMatching(/^DIR\/output\//)]));
    expect(names.some((n) => /snapshot/.test(n))).toBe(true);
    for (const [where, bytes] of places) {
      for (const form of forms) expect(bytes.includes(form), `${form} in ${where}`).toBe(false);
    }
    // The alerts told of the failures, masked.
    expect(
      received
        .filter((r) => r.url === "/alert")
        .map((r) => r.body)
        .join("\n"),
    ).toContain("***");
  }, 120_000);
});

import { spawnSync } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiProcess,
  api,
  chronolog,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  headOf,
  key,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * `chronolog serve`: the API without a scheduler, on copies of one data directory (read-only,
 * with --public-read, and --writable), its refusal of plain HTTP off loopback, and the
 * `token` commands.
 */

const left = new Leftovers();
let source: string;
let admin: string;
let reader: string;
const HOLD = key("ingest/acme/hold/ALL");

/** A copy of the source data directory, as a backup restored elsewhere would be. */
function copyOfSource(label: string): string {
  const dir = join(dataDir(left, label), "data");
  cpSync(source, dir, { recursive: true });
  return dir;
}

beforeAll(() => {
  source = dataDir(left, "serve-source");
  declareFile(
    source,
    `tasks:
  - { project: ingest, account: acme, name: hold, cron: "0 0 * * *", startDate: "${dayAt(-2)}", operator: { type: noop } }
`,
  );
  admin = createToken(source, "admin", "admin");
  reader = createToken(source, "reader", "read");
});
afterAll(() => left.clear());

describe("chronolog serve", () => {
  let readOnly: ApiProcess;
  let writable: ApiProcess;
  beforeAll(async () => {
    [readOnly, writable] = await Promise.all([
      startApi(left, copyOfSource("serve-ro"), ["serve", "--public-read"]),
      startApi(left, copyOfSource("serve-rw"), ["serve", "--writable"]),
    ]);
  });

  it("is read-only by default: a write with an admin token is refused with 403, naming --writable", async () => {
    const tasks = await api(readOnly.url, "/tasks", { token: admin });
    expect(tasks.status).toBe(200);
    expect(tasks.body.items.map((t: { task: string }) => t.task)).toEqual(["ingest/acme/hold/ALL"]);
    const before = await headOf(readOnly, admin);
    const r = await api(readOnly.url, `/tasks/${HOLD}/pause`, { token: admin, method: "POST" });
    expect(r.status, r.text).toBe(403);
    expect(r.type).toContain("application/problem+json");
    expect(r.body.type).toBe("urn:chronolog:problem:read_only");
    expect(r.body.detail).toBe("this server is read-only: start it with --writable to allow writes");
    const d = await api(readOnly.url, "/declarations", {
      token: admin,
      type: "application/yaml",
      body: "tasks: []\n",
    });
    expect(d.status, d.text).toBe(403);
    expect(d.body.detail).toContain("--writable");
    // A check writes nothing, and is answered all the same.
    const dry = await api(readOnly.url, "/declarations?dryRun=true", {
      token: admin,
      type: "application/yaml",
      body: "tasks: []\n",
    });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.dryRun).toBe(true);
    expect(await headOf(readOnly, admin)).toBe(before);
  });

  it("--public-read lets a GET without a token through, not a POST", async () => {
    const r = await api(readOnly.url, `/tasks/${HOLD}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.task.id).toBe("ingest/acme/hold/ALL");
    expect((await api(readOnly.url, "/log/head")).status).toBe(200);
    const post = await api(readOnly.url, `/tasks/${HOLD}/pause`, { method: "POST" });
    expect(post.status).toBe(401);
    expect(post.body.detail).toContain("this needs a token");
    // A token is still checked when one is sent.
    expect((await api(readOnly.url, "/tasks", { token: "chl.nobody.0" })).status).toBe(401);
  });

  it("--writable takes writes, in its own data directory only", async () => {
    expect((await api(writable.url, "/tasks")).status).toBe(401);
    const r = await api(writable.url, `/tasks/${HOLD}/pause`, {
      token: admin,
      body: { reason: "restored copy" },
    });
    expect(r.status, r.text).toBe(200);
    const history = chronolog(writable.dir, ["history", "ingest/acme/hold/ALL", "--json"]);
    const last = JSON.parse(history.stdout.trim().split("\n").at(-1) as string);
    expect(last).toMatchObject({ type: "TaskPaused", metadata: { actor: "api:admin" } });
    const there = await api(readOnly.url, `/tasks/${HOLD}`, { token: reader });
    expect(there.body.task.status).toBe("active");
  });

  it("serves HTTPS with --tls-cert and --tls-key, and names a missing key file", async () => {
    const dir = copyOfSource("serve-https");
    const cert = join(dir, "cert.pem");
    const keyFile = join(dir, "key.pem");
    const made = spawnSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      keyFile,
      "-out",
      cert,
    ]);
    expect(made.status, String(made.stderr)).toBe(0);
    const https = await startApi(left, dir, ["serve", "--tls-cert", cert, "--tls-key", keyFile]);
    expect(https.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpsGet(
        `${https.url}/api/v1/tasks/${HOLD}`,
        { ca: readFileSync(cert), headers: { authorization: `Bearer ${reader}` } },
        (res) => {
          let body = "";
          res.on("data", (d) => {
            body += d;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on("error", reject);
    });
    expect(answer.status, answer.body).toBe(200);
    expect(JSON.parse(answer.body).task.id).toBe("ingest/acme/hold/ALL");
    const alone = chronolog(copyOfSource("serve-tls-alone"), [
      "serve",
      "--http",
      "127.0.0.1:0",
      "--tls-cert",
      cert,
    ]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--tls-cert and --tls-key go together");
  });

  it("refuses --http 0.0.0.0:0 without TLS at start, with exit 2", () => {
    for (const command of ["serve", "up"]) {
      const r = chronolog(copyOfSource(`serve-tls-${command}`), [command, "--http", "0.0.0.0:0"]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        "0.0.0.0 is not a loopback address: give --tls-cert and --tls-key (tokens travel in every request), or --insecure",
      );
    }
  });
});

describe("chronolog token", () => {
  it("list shows names, scopes, projects, read limits and queues, never a secret", () => {
    const dir = copyOfSource("token-list");
    const limited = createToken(dir, "producer", "declare", ["sales", "ops"]);
    const work = chronolog(dir, [
      "token",
      "create",
      "worker",
      "--scope",
      "work",
      "--queue",
      "gpu",
      "--queue",
      "dbt",
    ]);
    expect(work.code, work.stderr).toBe(0);
    const r = chronolog(dir, ["token", "list"]);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trim().split("\n");
    expect(rows[0]).toMatch(/^NAME\s+SCOPE\s+PROJECTS\s+READS\s+QUEUES\s+ISSUED\s+BY\s+REVOKED$/);
    expect(rows.slice(1).map((l) => l.split(/\s+/).slice(0, 5))).toEqual([
      ["admin", "admin", "all", "all", "-"],
      ["producer", "declare", "sales,ops", "all", "-"],
      ["reader", "read", "all", "all", "-"],
      ["worker", "work", "all", "all", "gpu,dbt"],
    ]);
    const json = chronolog(dir, ["token", "list", "--json"]);
    expect(json.code).toBe(0);
    const listed = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(listed.map((t) => Object.keys(t).sort())).toEqual(
      listed.map(() => [
        "issuedAt",
        "issuedBy",
        "name",
        "projects",
        "queues",
        "readProjects",
        "revokedAt",
        "scope",
      ]),
    );
    for (const secret of [admin, reader, limited, work.stdout.trim()]) {
      const hex = secret.split(".").at(-1) as string;
      expect(hex).toMatch(/^[0-9a-f]{64}$/);
      for (const out of [r.stdout, r.stderr, json.stdout]) expect(out).not.toContain(hex.slice(0, 16));
    }
  });

  it("create refuses a name in use (exit 8); after revoke the name can be issued again", async () => {
    const dir = copyOfSource("token-reuse");
    const again = chronolog(dir, ["token", "create", "reader", "--scope", "admin"]);
    expect(again.code).toBe(8);
    expect(again.stderr).toContain("a token named reader exists");
    expect(again.stderr).toContain("revoke it first");
    expect(again.stdout).toBe("");
    const revoked = chronolog(dir, ["token", "revoke", "reader"]);
    expect(revoked.code, revoked.stderr).toBe(0);
    const renewed = createToken(dir, "reader", "read");
    expect(renewed).toMatch(/^chl\.reader\.[0-9a-f]{64}$/);
    expect(renewed).not.toBe(reader);
    // On a server of that directory, the new secret reads and the old one is refused.
    const server = await startApi(left, dir, ["serve"]);
    expect((await api(server.url, "/tasks", { token: renewed })).status).toBe(200);
    const old = await api(server.url, "/tasks", { token: reader });
    expect(old.status).toBe(401);
  });
});

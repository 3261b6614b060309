import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, createToken, startApi } from "../api/support.js";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

/**
 * Declaring, as a new producer meets it: a misspelt parent key gets a "did you mean", a refused
 * declaration says only why, a workflow is retired whole in one write, and a start of `up` that
 * is refused writes nothing. Where nothing may be written, the log is read before and after.
 */
const left = new Leftovers();
afterAll(() => left.clear());

const ORDERS = readFileSync(new URL("../../docs/examples/orders.yaml", import.meta.url), "utf8");
const MISSPELT = ORDERS.replace('["ingest/acme/orders_raw"]', '["ingest/acme/orders_rwa"]');

/** Every event of the log, as `log read --json` prints them. */
const logOf = (dir: string) => chronolog(dir, ["log", "read", "--json", "-n", "100000"]).stdout;

describe("declaring: did you mean, and a refusal that says only why", () => {
  const dir = tempDataDir("declare-words");
  left.dirs.push(dir);
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("a misspelt parent key is a warning that names the task it most likely means", () => {
    expect(chronolog(dir, ["declare", file("orders.yaml", ORDERS)]).code).toBe(0);
    const r = chronolog(dir, ["declare", "--check", file("misspelt.yaml", MISSPELT)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `warning: ${join(dir, "misspelt.yaml")}: workflows[0].tasks[0].parents[0]: sales/acme/orders_enriched/ALL: parent ingest/acme/orders_rwa/ALL is not declared (yet) (did you mean ingest/acme/orders_raw/ALL?); the task will wait for it`,
    );
    const json = chronolog(dir, ["declare", "--check", "--json", join(dir, "misspelt.yaml")]);
    const [warning] = JSON.parse(json.stdout).warnings;
    expect(warning).toMatchObject({ code: "parent_missing", suggestions: ["ingest/acme/orders_raw/ALL"] });
    // A sibling's bare name too.
    const sibling = chronolog(dir, [
      "declare",
      file("sibling.yaml", ORDERS.replace("parents: [orders_enriched]", "parents: [orders_enrichd]")),
    ]);
    expect(sibling.code).toBe(2);
    expect(sibling.stderr).toContain(
      'parent "orders_enrichd" is not a task of workflow "orders_daily" (did you mean "orders_enriched"?)',
    );
  });

  it("a refused declaration prints its errors and no warning that follows on, and writes nothing", () => {
    const before = logOf(dir);
    const refused = chronolog(dir, [
      "declare",
      file("refused.yaml", MISSPELT.replace("connection: warehouse", "connection: warehuose")),
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('connection "warehuose" is not declared');
    expect(refused.stderr).not.toContain("warning:");
    expect(refused.stderr).not.toContain("will wait for it");
    expect(logOf(dir)).toBe(before);
  });
});

describe("retire --workflow: the workflow and all its tasks, in one write", () => {
  const dir = tempDataDir("retire-workflow");
  left.dirs.push(dir);
  const file = join(dir, "orders.yaml");

  it("refuses an unknown workflow, naming those there are, and writes nothing", () => {
    writeFileSync(file, ORDERS);
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const before = logOf(dir);
    const unknown = chronolog(dir, ["retire", "--workflow", "orders_dialy"]);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toContain("no workflow orders_dialy is declared (the workflows are orders_daily)");
    const both = chronolog(dir, ["retire", "ingest/acme/orders_raw", "--workflow", "orders_daily"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("retire takes a task or --workflow NAME, not both");
    expect(chronolog(dir, ["retire"]).code).toBe(2);
    expect(logOf(dir)).toBe(before);
  });

  it("retires every task of it and the workflow in one append, and says what it retired", () => {
    const headBefore = JSON.parse(logOf(dir).trim().split("\n").at(-1) as string).position as string;
    const r = chronolog(dir, ["retire", "--workflow", "orders_daily", "--reason", "replaced by orders_v2"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^workflow orders_daily: retired with 2 tasks \(position \d+\)\n/);
    expect(r.stdout).toContain("task sales/acme/orders_daily_report/ALL: retired\n");
    expect(r.stdout).toContain("task sales/acme/orders_enriched/ALL: retired\n");
    const written = logOf(dir)
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; position: string; metadata: { correlationId?: string } })
      .filter((e) => BigInt(e.position) > BigInt(headBefore));
    expect(written.map((e) => e.type)).toEqual(["TaskRetired", "TaskRetired", "WorkflowRetired"]);
    // One append: the events follow each other, and nothing else was written.
    expect(written.map((e) => BigInt(e.position) - BigInt(headBefore))).toEqual([1n, 2n, 3n]);
    const tasks = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout) as Array<{
      task: string;
      status: string;
    }>;
    expect(tasks.map((t) => `${t.task} ${t.status}`).sort()).toEqual([
      "ingest/acme/orders_raw/ALL active",
      "sales/acme/orders_daily_report/ALL retired",
      "sales/acme/orders_enriched/ALL retired",
    ]);
    // The task outside the workflow goes on; its runs are still there to read.
    expect(chronolog(dir, ["runs", "orders_daily"]).stdout).toBe("no runs of workflow orders_daily\n");
    const history = chronolog(dir, ["history", "sales/acme/orders_enriched"]).stdout;
    expect(history).toContain("TaskRetired");
    expect(history).toContain("sales/acme/orders_enriched/ALL retired: replaced by orders_v2");
  });

  it("once retired: retiring it again is refused, declaring it again needs revive", () => {
    const before = logOf(dir);
    const again = chronolog(dir, ["retire", "--workflow", "orders_daily"]);
    expect(again.code).toBe(8);
    expect(again.stderr).toContain("workflow orders_daily is already retired");
    expect(logOf(dir)).toBe(before);
    const redeclared = chronolog(dir, ["declare", file]);
    expect(redeclared.code).toBe(2);
    expect(redeclared.stderr).toContain("the task is retired; declaring it again needs revive");
    const revived = chronolog(dir, ["declare", "--revive", file]);
    expect(revived.code, revived.stderr).toBe(0);
    expect(revived.stdout).toContain("workflow orders_daily: declared");
    expect(revived.stdout).toContain("task sales/acme/orders_enriched/ALL: revived");
  });
});

describe("retire a workflow through the HTTP API", () => {
  let url = "";
  let admin = "";
  let ingestOnly = "";
  const dir = tempDataDir("retire-workflow-api");
  left.dirs.push(dir);
  beforeAll(async () => {
    writeFileSync(join(dir, "orders.yaml"), ORDERS);
    expect(chronolog(dir, ["declare", join(dir, "orders.yaml")]).code).toBe(0);
    admin = createToken(dir, "admin", "admin");
    ingestOnly = createToken(dir, "ingest-ops", "operate", ["ingest"]);
    url = (await startApi(left, dir, ["serve", "--writable"])).url;
  });

  it("suggests the parent key in the declaration's warnings", async () => {
    const r = await api(url, "/declarations?dryRun=true", {
      token: admin,
      body: MISSPELT,
      type: "application/yaml",
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.warnings[0].message).toContain("(did you mean ingest/acme/orders_raw/ALL?)");
    expect(r.body.warnings[0].suggestions).toEqual(["ingest/acme/orders_raw/ALL"]);
  });

  it("refuses an unknown workflow with 404 and writes nothing; retires a known one whole", async () => {
    const before = logOf(dir);
    const unknown = await api(url, "/workflows/nope/retire", { token: admin, method: "POST" });
    expect(unknown.status).toBe(404);
    // A token limited to other projects may not retire it.
    const elsewhere = await api(url, "/workflows/orders_daily/retire", { token: ingestOnly, method: "POST" });
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.text).toContain("cannot retire workflows in project sales");
    expect(logOf(dir)).toBe(before);
    const r = await api(url, "/workflows/orders_daily/retire", { token: admin, body: { reason: "moved" } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      workflow: "orders_daily",
      tasks: ["sales/acme/orders_daily_report/ALL", "sales/acme/orders_enriched/ALL"],
    });
    const last = JSON.parse(logOf(dir).trim().split("\n").at(-1) as string);
    expect(last).toMatchObject({
      type: "WorkflowRetired",
      position: r.body.position,
      metadata: { actor: "api:admin" },
    });
  });
});

describe("a refused start writes nothing", () => {
  let taken: Server;
  let port = 0;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it("up --example whose port is taken refuses before it declares the example", () => {
    const dir = tempDataDir("up-refused");
    left.dirs.push(dir);
    const r = chronolog(dir, ["up", "--example", "--http", `127.0.0.1:${port}`]);
    expect(r.code).toBe(2);
    // The refusal alone: nothing is said (a projection loaded, where tasks run) before it.
    const refusal = `chronolog: 127.0.0.1:${port} is in use: choose another with --http HOST:PORT, or --http off\n`;
    expect(r.stderr).toBe(refusal);
    expect(r.stdout).toBe("");
    expect(logOf(dir)).toBe("");
    // Not even opened: the log is not made.
    expect(chronolog(dir, ["log", "read"]).stderr).toContain("(nothing written yet;");
    // serve, too (a second `up` beside a running one is refused by its lock first: lock-cli).
    const served = chronolog(dir, ["serve", "--http", `127.0.0.1:${port}`]);
    expect([served.code, served.stderr, served.stdout]).toEqual([2, refusal, ""]);
  });

  it("make up passes HTTP= and ARGS= to chronolog up", () => {
    const root = fileURLToPath(new URL("../..", import.meta.url));
    const dry = (...vars: string[]) => {
      // Not the settings of a make this suite may run under (`make test`).
      const { MAKEFLAGS: _f, MFLAGS: _m, MAKELEVEL: _l, ...env } = process.env;
      const r = spawnSync("make", ["-n", "--no-print-directory", "up", ...vars], {
        cwd: root,
        encoding: "utf8",
        env,
      });
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.trim().split("\n").at(-1)?.trim();
    };
    expect(dry(`HTTP=127.0.0.1:${port}`, "ARGS=--workers 3 --grace 60")).toBe(
      `./node_modules/.bin/chronolog up --example --http 127.0.0.1:${port} --workers 3 --grace 60`,
    );
    expect(dry()).toBe("./node_modules/.bin/chronolog up --example");
  });

  it("so does a wrong flag, before anything is opened", () => {
    const dir = tempDataDir("up-refused-flag");
    left.dirs.push(dir);
    for (const [flag, value] of [
      ["--workers", "0"],
      ["--grace", "soon"],
      ["--sse-max-lag", "0"],
      ["--reconcile-ms", "-5"],
    ] as const) {
      const r = chronolog(dir, ["up", "--example", "--http", "off", flag, value]);
      expect(r.code, `${flag} ${value}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(flag);
    }
    expect(chronolog(dir, ["log", "read"]).code).toBe(2);
  });
});

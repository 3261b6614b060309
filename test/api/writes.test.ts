import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiAnswer,
  type ApiCall,
  type ApiProcess,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  headOf,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * Writes under contention and bad input, against one `chronolog serve --writable` whose body
 * limit is 1 KiB: two producers declaring one task at once, and every kind of malformed
 * request refused with a problem document and nothing written.
 */

const TASK = "sales/acme/contested/ALL";
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let admin: string;
let alpha: string;
let beta: string;

const contested = (command: string) => ({
  tasks: [
    {
      project: "sales",
      account: "acme",
      name: "contested",
      cron: "0 0 * * *",
      startDate: dayAt(-1),
      operator: { type: "shell", command },
    },
  ],
});

interface LoggedEvent {
  position: string;
  streamId: string;
  type: string;
  data: { spec?: { operator: { command: string } } };
  metadata: { actor: string };
}

async function eventsAfter(position: string): Promise<LoggedEvent[]> {
  const out: LoggedEvent[] = [];
  let from: string | null = String(BigInt(position) + 1n);
  while (from !== null) {
    const r = await call(`/log?from=${from}&limit=1000`, { token: admin });
    expect(r.status).toBe(200);
    out.push(...r.body.events);
    from = r.body.next;
  }
  return out;
}

beforeAll(async () => {
  const dir = dataDir(left, "writes");
  declareFile(
    dir,
    `workflows:
  - name: etl
    project: sales
    account: acme
    cron: "0 2 * * *"
    startDate: "${dayAt(-3)}"
    params: { mode: full }
    tasks:
      - name: extract
        operator: { type: shell, command: "echo {{ params.mode }}" }
`,
  );
  admin = createToken(dir, "admin", "admin");
  alpha = createToken(dir, "alpha", "declare");
  beta = createToken(dir, "beta", "declare");
  server = await startApi(left, dir, ["serve", "--writable", "--body-limit", "1KiB"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("two producers declaring one task at once", () => {
  it("each round, the loser of a race gets 409 and writes nothing; what is answered 200 is whole", async () => {
    const first = await call("/declarations", { token: alpha, body: contested("echo start") });
    expect(first.status, first.text).toBe(200);
    let applied = 0;
    let refused = 0;
    for (let round = 0; round < 20; round++) {
      const before = await headOf(server, admin);
      const commands = [`echo alpha ${round}`, `echo beta ${round}`];
      const answers = await Promise.all([
        call("/declarations", { token: alpha, body: contested(commands[0] as string) }),
        call("/declarations", { token: beta, body: contested(commands[1] as string) }),
      ]);
      const events = (await eventsAfter(before)).filter((e) => e.streamId === `task-${TASK}`);
      const winners: string[] = [];
      answers.forEach((a, i) => {
        // Decided on the same version, the one that loses the compare-and-set would overwrite
        // a version it never saw: it is refused (409) and writes nothing. A request that comes
        // after the other finished is decided on its version, and applies over it.
        if (a.status === 409) {
          expect(a.type).toContain("application/problem+json");
          expect(a.body.type).toBe("urn:chronolog:problem:wrong_expected_revision");
          expect(a.body.detail).toContain(`task ${TASK} was declared by another writer`);
          refused += 1;
          return;
        }
        expect(a.status, a.text).toBe(200);
        expect(a.body.tasks).toEqual([
          expect.objectContaining({
            task: TASK,
            outcome: "changed",
            changes: [{ field: "operator.command", from: expect.any(String), to: commands[i] }],
          }),
        ]);
        winners.push(commands[i] as string);
        applied += 1;
      });
      // One whole event per declaration that was answered 200, nothing else, nothing partial.
      expect(events.map((e) => e.type)).toEqual(winners.map(() => "TaskDeclarationChanged"));
      expect(events.map((e) => e.data.spec?.operator.command).sort()).toEqual([...winners].sort());
      expect(new Set(events.map((e) => e.metadata.actor))).toEqual(
        new Set(answers.flatMap((a, i) => (a.status === 200 ? [i === 0 ? "api:alpha" : "api:beta"] : []))),
      );
      // When both applied, the second was decided on the first: it changed the first's command.
      if (winners.length === 2) {
        const [a, b] = answers.map((x) => x.body.tasks[0].changes[0]);
        const secondOnFirst = (x: typeof a, y: typeof a) => x.from === y.to;
        expect(secondOnFirst(a, b) || secondOnFirst(b, a), JSON.stringify([a, b])).toBe(true);
        const last = secondOnFirst(a, b) ? a : b;
        expect(events.at(-1)?.data.spec?.operator.command).toBe(last.to);
      }
      // The task is declared as the last of them says.
      const task = await call(`/tasks/${encodeURIComponent(TASK)}`, { token: admin });
      expect(task.body.task.spec.operator.command).toBe(events.at(-1)?.data.spec?.operator.command);
    }
    expect(applied + refused).toBe(40);
    expect(applied).toBeGreaterThanOrEqual(20);
    // Sent at once, the two mostly race: some rounds must have had a loser.
    expect(refused).toBeGreaterThan(0);
  }, 60_000);
});

describe("bad requests are refused with a problem document, and write nothing", () => {
  async function refused(path: string, c: ApiCall, status: number): Promise<ApiAnswer> {
    const before = await headOf(server, admin);
    const r = await call(path, { token: admin, method: "POST", ...c });
    expect(r.status, r.text).toBe(status);
    expect(r.type).toContain("application/problem+json");
    expect(r.body).toMatchObject({ status, type: expect.stringMatching(/^urn:chronolog:problem:/) });
    expect(r.body.title).toEqual(expect.any(String));
    expect(r.body.detail).toEqual(expect.any(String));
    expect(await headOf(server, admin)).toBe(before);
    return r;
  }

  it("malformed JSON: 400, a declaration's with the line and column", async () => {
    const r = await refused("/declarations", { body: '{"tasks": [{"project": "sales",' }, 400);
    expect(r.body).toMatchObject({ format: "json", line: 1 });
    expect(r.body.detail).toMatch(/^<request>: line 1, column \d+: /);
    for (const path of ["/tasks/sales%2Facme%2Fextract/pause", "/workflows/etl/runs", "/backfills"])
      await refused(path, { body: "{not json" }, 400);
  });

  it("malformed YAML: 400 with the line and column", async () => {
    const r = await refused(
      "/declarations",
      { type: "application/yaml", body: "tasks:\n  - project: sales\n    name: [unclosed\n" },
      400,
    );
    expect(r.body).toMatchObject({ format: "yaml", line: 4, column: 1 });
    expect(r.body.detail).toContain("<request>: line 4, column 1: Flow sequence");
  });

  it("a body over the limit: 413", async () => {
    const big = JSON.stringify(contested(`echo ${"x".repeat(2048)}`));
    const r = await refused("/declarations", { body: big }, 413);
    expect(r.body.limitBytes).toBe(1024);
    expect(r.body.detail).toContain("1024 bytes");
    await refused(
      "/declarations",
      { type: "application/yaml", body: `# ${"y".repeat(2000)}\ntasks: []\n` },
      413,
    );
  });

  it("a wrong content type: 415", async () => {
    const body = JSON.stringify(contested("echo typed"));
    const r = await refused("/declarations", { body, type: "text/plain" }, 415);
    expect(r.body.detail).toBe("a declaration is application/json or application/yaml, not text/plain");
    // A string body without a type of its own goes as text/plain.
    await refused("/declarations", { body, type: null }, 415);
    await refused("/declarations", { body, type: "application/xml" }, 415);
    await refused("/tasks/sales%2Facme%2Fextract/pause", { body: '{"reason":"x"}', type: "text/plain" }, 415);
    const backfill = await refused(
      "/backfills",
      { body: '{"task":"sales/acme/extract","from":"2026-01-01","to":"2026-01-02"}', type: "text/plain" },
      415,
    );
    expect(backfill.body.detail).toBe("this body is application/json, not text/plain");
  });

  it("fields of the wrong type: 400 naming each field's path", async () => {
    const decl = await refused(
      "/declarations",
      {
        body: {
          tasks: [
            {
              project: 5,
              account: "acme",
              name: "typed",
              cron: "0 0 * * *",
              startDate: dayAt(-1),
              operator: { type: "shell", command: ["echo"] },
            },
          ],
        },
      },
      400,
    );
    const paths = (decl.body.issues as Array<{ path: string }>).map((i) => i.path).join("\n");
    expect(paths).toContain("tasks[0].project");
    expect(paths).toContain("tasks[0].operator.command");
    const backfill = await refused("/backfills", { body: { task: 7, from: "2026-01-01", to: true } }, 400);
    expect((backfill.body.issues as Array<{ path: string }>).map((i) => i.path).sort()).toEqual([
      "task",
      "to",
    ]);
    const trigger = await refused("/workflows/etl/runs", { body: { params: { mode: 1 } } }, 400);
    expect(trigger.body.issues.map((i: { path: string }) => i.path)).toEqual(["params.mode"]);
    const rerun = await refused("/runs/etl%402026-01-01/rerun", { body: { failedOnly: "yes" } }, 400);
    expect(rerun.body.issues.map((i: { path: string }) => i.path)).toEqual(["failedOnly"]);
    const pause = await refused("/tasks/sales%2Facme%2Fextract/pause", { body: { reason: 3 } }, 400);
    expect(pause.body.issues.map((i: { path: string }) => i.path)).toEqual(["reason"]);
  });
});

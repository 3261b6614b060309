import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import {
  type ApiProcess,
  apiWritesAfter,
  chronolog,
  client,
  createToken,
  dataDir,
  declareFile,
  headOf,
  key,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * A write is held to the caller's projects wherever its decision reaches, not only at the task
 * it names: a retry or a mark of a task of one project that reopens a child or a run in another,
 * a retire of a workflow that holds another project's task. Refused, nothing is written; the
 * same by a token of both projects goes through (the cases are real).
 */
const HOUR = 3_600_000;
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let admin: string;
let books: string;
let reader: string;
let producer: string;
const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
const BROKEN = "books/acme/broken/ALL";
const AFTER = "shelf/acme/after/ALL";

beforeAll(async () => {
  const dir = dataDir(left, "write-reach");
  // One interval each: the hour before the last, in a workflow of books that holds a task of shelf.
  declareFile(
    dir,
    `workflows:
  - name: books_wf
    project: books
    account: acme
    cron: "0 * * * *"
    startDate: "${latest}"
    endDate: "${new Date(Date.parse(latest) + HOUR / 2).toISOString()}"
    tasks:
      - { name: broken, operator: { type: shell, command: "exit 6" } }
      - { name: after, project: shelf, parents: [broken], operator: { type: shell, command: "true" } }
tasks:
  - { project: shelf, account: acme, name: leaky, cron: "0 * * * *", startDate: "${latest}", endDate: "${new Date(Date.parse(latest) + HOUR / 2).toISOString()}", operator: { type: shell, command: "echo shelf-only-secret >&2; exit 7" } }
  - { project: books, account: acme, name: spy, cron: "0 * * * *", startDate: "${latest}", endDate: "${new Date(Date.parse(latest) + HOUR / 2).toISOString()}", parents: [shelf/acme/leaky], deadline: { within: 1s }, operator: { type: shell, command: "true" } }
`,
  );
  admin = createToken(dir, "admin", "admin");
  books = createToken(dir, "books-ops", "operate", ["books"]);
  const r = chronolog(dir, [
    "token",
    "create",
    "books-reader",
    "--scope",
    "read",
    "--read-projects",
    "books",
  ]);
  expect(r.code, r.stderr).toBe(0);
  reader = r.stdout.trim();
  const p = chronolog(dir, [
    "token",
    "create",
    "books-producer",
    "--scope",
    "declare",
    "--project",
    "books",
    "--read-projects",
    "books",
  ]);
  expect(p.code, p.stderr).toBe(0);
  producer = p.stdout.trim();
  server = await startApi(left, dir, ["up", "--workers", "1"]);
  call = client(server);
});
afterAll(() => left.clear());

describe("a write reaching another project", () => {
  it("is refused to a token of one project, naming the other, and writes nothing", async () => {
    await waitUntil(
      "broken to fail",
      async () =>
        (await call(`/tasks/${key(BROKEN)}`, { token: admin })).body.condition === "failed"
          ? true
          : undefined,
      60_000,
    );
    const before = await headOf(server, admin);
    for (const [path, body] of [
      [`/tasks/${key(BROKEN)}/retry`, { interval: latest }],
      [`/tasks/${key(BROKEN)}/mark`, { interval: latest, outcome: "skipped", reason: "not needed" }],
      ["/workflows/books_wf/retire", { reason: "gone" }],
    ] as const) {
      const r = await call(path, { token: books, body });
      expect(r.status, `${path}: ${r.text}`).toBe(403);
      expect(r.type).toContain("problem+json");
      expect(r.body.detail).toContain("token books-ops is limited to books");
      expect(r.body.outside).toEqual(["shelf"]);
    }
    expect(await apiWritesAfter(server, admin, before)).toEqual([]);
  });

  it("goes through for a token of every project it reaches: the retry reopens shelf's task", async () => {
    const r = await call(`/tasks/${key(BROKEN)}/retry`, { token: admin, body: { interval: latest } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.reopened).toEqual([AFTER]);
  });
});

describe("a read about one project that would show another's", () => {
  it("leaves out a run holding a task the token may not read, in the list and in the log, as the run itself is refused", async () => {
    const runs = await call("/runs", { token: reader });
    expect(runs.status, runs.text).toBe(200);
    expect(runs.body).toEqual([]);
    expect(
      (await call("/runs", { token: admin })).body.map((r: { workflow: string }) => r.workflow),
    ).toContain("books_wf");
    const log = await call("/log?from=0&limit=1000", { token: reader });
    expect(log.status, log.text).toBe(200);
    const streams = new Set((log.body.events as Array<{ streamId: string }>).map((e) => e.streamId));
    expect([...streams].filter((s) => s.startsWith("run-") || s.includes("shelf/"))).toEqual([]);
    expect([...streams].some((s) => s.startsWith("task-books/"))).toBe(true);
  });

  it("suggests no task of another project for a misspelt parent", async () => {
    const body = {
      tasks: [
        {
          project: "books",
          account: "acme",
          name: "reads_shelf",
          cron: "0 * * * *",
          startDate: latest,
          parents: ["shelf/acme/leak"],
          operator: { type: "noop" },
        },
      ],
    };
    const missing = (token: string) =>
      call("/declarations?dryRun=true", { token, body }).then(
        (r) => (r.body.warnings as Array<{ code: string; message: string; suggestions?: string[] }>)[0],
      );
    expect(await missing(admin)).toMatchObject({
      code: "parent_missing",
      suggestions: ["shelf/acme/leaky/ALL"],
    });
    const told = await missing(producer);
    expect(told?.code).toBe("parent_missing");
    expect(told?.suggestions).toBeUndefined();
    expect(told?.message).not.toContain("leaky");
    // Another project's task, declared by this token: refused alike whether it exists or not.
    for (const name of ["leaky", "nothere"]) {
      const r = await call("/declarations?dryRun=true", {
        token: producer,
        body: { tasks: [{ ...body.tasks[0], project: "shelf", name, parents: [] }] },
      });
      expect(r.status, r.text).toBe(403);
      expect(r.body.detail).toContain("not declare tasks in project shelf");
    }
  });

  it("names a deadline's root cause in another project without what it said", async () => {
    const SPY = "books/acme/spy/ALL";
    const cause = async (token: string) => (await call(`/tasks/${key(SPY)}`, { token })).body.deadline?.cause;
    await waitUntil(
      "the cause to be the failure",
      async () => ((await cause(admin))?.state === "failed" ? true : undefined),
      60_000,
    );
    expect((await cause(admin)).detail).toContain("shelf-only-secret");
    const shown = await cause(reader);
    expect(shown).toMatchObject({ task: "shelf/acme/leaky/ALL", state: "failed", detail: null });
    expect(JSON.stringify(shown)).not.toContain("shelf-only-secret");
    expect(shown.text).toContain("it waits for shelf/acme/leaky/ALL");
  });
});

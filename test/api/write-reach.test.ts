import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import {
  type ApiProcess,
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
`,
  );
  admin = createToken(dir, "admin", "admin");
  books = createToken(dir, "books-ops", "operate", ["books"]);
  server = await startApi(left, dir, ["up", "--workers", "1"]);
  call = client(server);
});
afterAll(() => left.clear());

/** The events callers of the API wrote after `position`. */
async function apiWritesAfter(position: string): Promise<unknown[]> {
  const r = await call(`/log?from=${BigInt(position) + 1n}&limit=1000`, { token: admin });
  expect(r.status).toBe(200);
  return (r.body.events as Array<{ metadata: { actor: string } }>).filter((e) =>
    e.metadata.actor.startsWith("api:"),
  );
}

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
    expect(await apiWritesAfter(before)).toEqual([]);
  });

  it("goes through for a token of every project it reaches: the retry reopens shelf's task", async () => {
    const r = await call(`/tasks/${key(BROKEN)}/retry`, { token: admin, body: { interval: latest } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.reopened).toEqual([AFTER]);
  });
});

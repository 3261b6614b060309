import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../support/wait.js";
import {
  type ApiProcess,
  apiWritesAfter,
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
 * The ways out of a halted interval over HTTP: `POST /tasks/{key}/retry` and
 * `POST /tasks/{key}/mark`, with the operate scope and the token's projects; `GET /tasks/{key}`
 * names the next steps. Refusals are problem documents, and write nothing.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
let server: ApiProcess;
let call: ReturnType<typeof client>;
let dir: string;
let admin: string;
let reader: string;
let elsewhere: string;
let operator: string;
const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
const end = new Date(Date.parse(latest) + HOUR / 2).toISOString();
const FLAKY = "books/acme/flaky/ALL";
const CHILD = "books/acme/child/ALL";
const BAD = "books/acme/bad/ALL";

beforeAll(async () => {
  dir = dataDir(left, "halted");
  const untilFile = (name: string) => JSON.stringify(`test -e ${dir}/ok-${name} || exit 3`);
  declareFile(
    dir,
    `tasks:
  - { project: books, account: acme, name: flaky, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", operator: { type: shell, command: ${untilFile("flaky")} } }
  - { project: books, account: acme, name: child, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", parents: [books/acme/flaky], operator: { type: shell, command: "true" } }
  - { project: books, account: acme, name: bad, cron: "0 * * * *", startDate: "${latest}", endDate: "${end}", operator: { type: shell, command: "exit 5" } }
`,
  );
  admin = createToken(dir, "admin", "admin");
  reader = createToken(dir, "reader", "read");
  elsewhere = createToken(dir, "elsewhere", "operate", ["other"]);
  operator = createToken(dir, "ops", "operate", ["books"]);
  server = await startApi(left, dir, ["up", "--workers", "1"]);
  call = client(server);
});
afterAll(() => left.clear());

const task = async (id: string) => (await call(`/tasks/${key(id)}`, { token: reader })).body;
const failed = (id: string) => async () => ((await task(id)).condition === "failed" ? true : undefined);

describe("retry and mark over HTTP", () => {
  it("a halted task names its next steps; the scope and the projects are checked; bad input writes nothing", async () => {
    await waitUntil("flaky to fail", failed(FLAKY), 60_000);
    const t = await task(FLAKY);
    expect(t.nextSteps.map((s: { action: string }) => s.action)).toEqual([
      "retry",
      "mark_succeeded",
      "mark_skipped",
    ]);
    expect(t.nextSteps[0]).toEqual({
      action: "retry",
      task: FLAKY,
      interval: latest,
      command: `chronolog retry ${FLAKY} --interval ${latest}`,
    });
    // Its child, blocked, names the parent's ways out.
    const child = await task(CHILD);
    expect(child.condition).toBe("blocked");
    expect(child.nextSteps.map((s: { task: string }) => s.task)).toEqual([FLAKY, FLAKY, FLAKY]);

    const before = await headOf(server, admin);
    const body = { interval: latest };
    const refused = [
      [reader, `/tasks/${key(FLAKY)}/retry`, body, 403],
      [elsewhere, `/tasks/${key(FLAKY)}/retry`, body, 403],
      [elsewhere, `/tasks/${key(FLAKY)}/mark`, { ...body, outcome: "skipped", reason: "x" }, 403],
      [operator, `/tasks/${key(FLAKY)}/mark`, { ...body, outcome: "skipped" }, 400],
      [operator, `/tasks/${key(FLAKY)}/mark`, { ...body, outcome: "done", reason: "x" }, 400],
      [operator, `/tasks/${key(FLAKY)}/retry`, { interval: "yesterday" }, 400],
      [operator, `/tasks/${key("books/acme/nope/ALL")}/retry`, body, 404],
      [operator, `/tasks/${key(CHILD)}/retry`, body, 422],
    ] as const;
    for (const [token, path, b, status] of refused) {
      const r = await call(path, { token, body: b });
      expect(r.status, `${path} ${JSON.stringify(b)}: ${r.text}`).toBe(status);
      expect(r.type).toContain("problem+json");
    }
    const notHalted = await call(`/tasks/${key(CHILD)}/retry`, { token: operator, body });
    expect(notHalted.body.detail).toContain("has not ended: nothing to retry");
    expect(await apiWritesAfter(server, admin, before)).toEqual([]);
  });

  it("retry: a new attempt with a fresh budget, said in the answer, recorded with the token's actor", async () => {
    writeFileSync(join(dir, "ok-flaky"), "");
    const r = await call(`/tasks/${key(FLAKY)}/retry`, {
      token: operator,
      body: { interval: latest, reason: "the file is there now" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      task: FLAKY,
      logicalDate: latest,
      was: "failed",
      attempt: 2,
      maxAttempts: 1,
      reopened: [],
      run: null,
    });
    expect(r.body.message).toContain("with a fresh retry budget of 1 attempt (maxAttempts)");
    const history = (await call(`/tasks/${key(FLAKY)}/history`, { token: reader })).body as Array<{
      type: string;
      data: { by?: string; reason?: string };
      metadata: { actor: string };
    }>;
    const retried = history.find((e) => e.type === "IntervalRetried");
    expect(retried?.data).toMatchObject({ by: "api:ops", reason: "the file is there now" });
    expect(retried?.metadata.actor).toBe("api:ops");
    // The child goes on once its parent succeeds.
    await waitUntil("the child to finish", async () =>
      (await task(CHILD)).task.prevIntervalStart === latest ? true : undefined,
    );
  });

  it("mark: the interval is marked with who and why, and it is refused once done", async () => {
    await waitUntil("bad to fail", failed(BAD), 60_000);
    const r = await call(`/tasks/${key(BAD)}/mark`, {
      token: operator,
      body: { interval: latest, outcome: "success", reason: "loaded by hand" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.message).toBe(
      `marked ${BAD} ${latest} succeeded (was failed): loaded by hand; it counts as done for its children`,
    );
    await waitUntil("bad to move past it", async () =>
      (await task(BAD)).task.prevIntervalStart === latest ? true : undefined,
    );
    const attempts = (await call(`/tasks/${key(BAD)}/history`, { token: reader })).body as Array<{
      type: string;
      data: Record<string, unknown>;
    }>;
    expect(attempts.find((e) => e.type === "IntervalMarked")?.data).toMatchObject({
      outcome: "success",
      reason: "loaded by hand",
      by: "api:ops",
    });
    const again = await call(`/tasks/${key(BAD)}/mark`, {
      token: operator,
      body: { interval: latest, outcome: "skipped", reason: "again" },
    });
    expect(again.status).toBe(422);
    expect(again.body.detail).toContain("is already done (marked succeeded by api:ops: loaded by hand)");
  });
});

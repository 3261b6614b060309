import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chronologAsync } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import {
  type ApiProcess,
  chronolog,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  key,
  Leftovers,
  startApi,
} from "./support.js";

/**
 * `GET /api/v1/workers` against a real server that follows a real log: the events a scheduler
 * writes when remote workers connect, run attempts and go are appended to the log while the
 * server runs, and it lists them; a token that may read only some projects sees every worker
 * but only the attempts of those projects. `GET /tasks/{key}` shows a task's queue and why it
 * waits for a worker.
 */
const left = new Leftovers();
let dir: string;
let server: ApiProcess;
let call: ReturnType<typeof client>;
const t: Record<string, string> = {};

const task = (project: string, name: string) =>
  `  - { project: ${project}, account: acme, name: ${name}, cron: "0 2 * * *", startDate: "${dayAt(-2)}", queue: gpu, operator: { type: noop } }`;

/** Appends as the scheduler would; the test's event loop runs meanwhile (its sockets to the server stay read). */
async function append(stream: string, type: string, data: unknown): Promise<void> {
  const r = await chronologAsync(dir, [
    "log",
    "append",
    stream,
    "-t",
    type,
    "-d",
    JSON.stringify(data),
    "--actor",
    "scheduler:s1",
  ]);
  expect(r.code, r.stderr).toBe(0);
}

function connect(worker: string, capacity: number): Promise<void> {
  return append(`worker-${worker}`, "WorkerConnected", {
    worker,
    host: `${worker}.lab`,
    queues: ["gpu"],
    capacity,
    version: "1 (chronolog 0.1.0)",
    token: "lab-workers",
    running: [],
  });
}

/** An attempt of `project/acme/name` dispatched and started on `worker`, at the task's current interval. */
async function startOn(project: string, name: string, worker: string): Promise<string> {
  const r = await call(`/tasks/${key(`${project}/acme/${name}/ALL`)}`, { token: t.admin });
  expect(r.status, r.text).toBe(200);
  const logicalDate = r.body.task.logicalDate as string;
  const stream = `instance-${project}/acme/${name}/ALL@${logicalDate}`;
  const token = `tok-${project}-${name}-1`;
  await append(stream, "DispatchIntended", {
    key: { project, account: "acme", name, partition: "ALL" },
    logicalDate,
    attempt: 1,
    token,
    operator: { type: "noop" },
    idempotent: true,
    leaseSeconds: 60,
  });
  await append(stream, "AttemptStarted", {
    attempt: 1,
    token,
    workerId: worker,
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
  });
  return logicalDate;
}

beforeAll(async () => {
  dir = dataDir(left, "workers");
  declareFile(
    dir,
    ["tasks:", task("alpha", "train"), task("alpha", "score"), task("beta", "embed"), ""].join("\n"),
  );
  t.admin = createToken(dir, "admin", "admin");
  t.watcher = createToken(dir, "watcher", "read");
  const r = chronolog(dir, ["token", "create", "alpharead", "--scope", "read", "--read-projects", "alpha"]);
  expect(r.code, r.stderr).toBe(0);
  t.alpharead = r.stdout.trim();
  server = await startApi(left, dir, ["serve"]);
  call = client(server);
}, 120_000);
afterAll(() => left.clear());

describe("GET /api/v1/workers", { timeout: 180_000 }, () => {
  it("needs a token; with none connected, lists none, and a task with a queue waits for one", async () => {
    expect((await call("/workers")).status).toBe(401);
    const none = await call("/workers", { token: t.watcher });
    expect(none.status, none.text).toBe(200);
    expect(none.body).toEqual({ connected: [] });
    const train = await call(`/tasks/${key("alpha/acme/train/ALL")}`, { token: t.watcher });
    expect(train.body.task.spec.queue).toBe("gpu");
    expect(train.body.condition).toBe("held");
    expect(train.body.reasons).toContain("waiting for a worker on queue gpu (0 connected)");
  });

  it("lists a worker as it connects, its load and what it runs, as the log moves", async () => {
    await connect("gpu-1", 2);
    const alphaDate = await startOn("alpha", "train", "gpu-1");
    const betaDate = await startOn("beta", "embed", "gpu-1");
    const listed = await waitUntil("the server to see both attempts", async () => {
      const r = await call("/workers", { token: t.watcher });
      return r.body.connected?.[0]?.busy === 2 ? r.body : undefined;
    });
    expect(listed.connected).toHaveLength(1);
    expect(listed.connected[0]).toMatchObject({
      id: "gpu-1",
      host: "gpu-1.lab",
      queues: ["gpu"],
      capacity: 2,
      version: "1 (chronolog 0.1.0)",
      token: "lab-workers",
      scheduler: null,
      busy: 2,
      hidden: 0,
    });
    // Last heard of when its latest attempt started, after it connected.
    const { since, lastHeard } = listed.connected[0];
    expect(Date.parse(lastHeard)).toBeGreaterThan(Date.parse(since));
    expect(
      listed.connected[0].running.map((a: { task: string; logicalDate: string }) => [a.task, a.logicalDate]),
    ).toEqual(
      expect.arrayContaining([
        ["alpha/acme/train/ALL", alphaDate],
        ["beta/acme/embed/ALL", betaDate],
      ]),
    );
    // Both slots busy: the third task of the queue says so.
    const score = await call(`/tasks/${key("alpha/acme/score/ALL")}`, { token: t.watcher });
    expect(score.body.condition).toBe("held");
    expect(score.body.reasons).toContain(
      "waiting for a worker on queue gpu (1 connected, 2 of 2 slots busy)",
    );
  });

  it("a token that may read only alpha sees the worker, its alpha attempt, and beta's only counted", async () => {
    const r = await call("/workers", { token: t.alpharead });
    expect(r.status, r.text).toBe(200);
    const [w] = r.body.connected;
    expect(w).toMatchObject({ id: "gpu-1", busy: 2, hidden: 1 });
    expect(w.running.map((a: { task: string }) => a.task)).toEqual(["alpha/acme/train/ALL"]);
    expect(r.text).not.toContain("beta/");
  });

  it("all=true adds the workers gone, with why; at= shows them as they were", async () => {
    await connect("gpu-2", 4);
    await append("worker-gpu-2", "WorkerDisconnected", {
      worker: "gpu-2",
      reason: "its buffer filled: dropped",
    });
    const all = await waitUntil("the server to see gpu-2 go", async () => {
      const r = await call("/workers?all=true", { token: t.watcher });
      return r.body.disconnected?.length === 1 ? r.body : undefined;
    });
    expect(all.connected.map((w: { id: string }) => w.id)).toEqual(["gpu-1"]);
    expect(all.disconnected[0]).toMatchObject({
      id: "gpu-2",
      host: "gpu-2.lab",
      capacity: 4,
      reason: "its buffer filled: dropped",
    });
    expect(typeof all.disconnected[0].until).toBe("string");
    expect((await call("/workers", { token: t.watcher })).body.disconnected).toBeUndefined();
    expect((await call("/workers?all=maybe", { token: t.watcher })).status).toBe(400);

    const read = await chronologAsync(dir, ["log", "read", "worker-gpu-2", "--json"]);
    const events = read.stdout.trim().split("\n");
    const connectedAt = JSON.parse(events[0] as string).position as string;
    const past = await call(`/workers?all=true&at=${connectedAt}`, { token: t.watcher });
    expect(past.status, past.text).toBe(200);
    expect(past.body.connected.map((w: { id: string }) => w.id)).toEqual(["gpu-1", "gpu-2"]);
    expect(past.body.disconnected).toEqual([]);
  });
});

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

/**
 * Remote workers and queues, read from the log: the events a scheduler writes when a worker
 * connects, runs an attempt and goes are appended to a real log, and `workers`, `why` and
 * `task` read them as they would beside a running scheduler.
 */
const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

const dir = tempDataDir("workers");
left.dirs.push(dir);
const latest = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
const task = (name: string, extra: string) =>
  `  - { project: ml, account: acme, name: ${name}, cron: "0 * * * *", startDate: "${latest}", ${extra}operator: { type: noop } }`;

function declare(...lines: string[]): ReturnType<typeof chronolog> {
  const file = join(dir, "ml.yaml");
  writeFileSync(file, ["tasks:", ...lines, ""].join("\n"));
  return chronolog(dir, ["declare", file]);
}

function append(stream: string, type: string, data: unknown): void {
  const r = chronolog(dir, [
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

const connected = (worker: string, queues: string[], capacity: number, running: string[] = []) => ({
  worker,
  host: `${worker}.lab`,
  queues,
  capacity,
  version: "1 (chronolog 0.1.0)",
  scheduler: "s1",
  token: "lab-workers",
  running,
});

/** The instance stream of a task's current interval, and that interval. */
function currentInterval(name: string): { stream: string; logicalDate: string } {
  const t = JSON.parse(chronolog(dir, ["task", `ml/acme/${name}/ALL`, "--json"]).stdout) as {
    task: { logicalDate: string };
  };
  return { stream: `instance-ml/acme/${name}/ALL@${t.task.logicalDate}`, logicalDate: t.task.logicalDate };
}

function startOn(name: string, worker: string): string {
  const { stream, logicalDate } = currentInterval(name);
  const token = `tok-${name}-1-abcdef`;
  append(stream, "DispatchIntended", {
    key: { project: "ml", account: "acme", name, partition: "ALL" },
    logicalDate,
    attempt: 1,
    token,
    operator: { type: "noop" },
    idempotent: true,
    leaseSeconds: 60,
  });
  append(stream, "AttemptStarted", {
    attempt: 1,
    token,
    workerId: worker,
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
  });
  return token;
}

const why = (name: string) => chronolog(dir, ["why", `ml/acme/${name}/ALL`]);

describe("queues and remote workers, from the CLI", { timeout: 180_000 }, () => {
  it("a task's queue is declared, shown by task, and a change of it shown by declare --check", () => {
    expect(declare(task("train", "queue: gpu, "), task("sort", "queue: gpu, "), task("plain", "")).code).toBe(
      0,
    );
    const shown = chronolog(dir, ["task", "ml/acme/train/ALL"]);
    expect(shown.stdout).toMatch(/^queue {7}gpu$/m);
    expect(chronolog(dir, ["task", "ml/acme/plain/ALL"]).stdout).toMatch(/^queue {7}- \(/m);
    const json = JSON.parse(chronolog(dir, ["task", "ml/acme/train/ALL", "--json"]).stdout);
    expect(json.task.spec.queue).toBe("gpu");

    const file = join(dir, "changed.yaml");
    writeFileSync(
      file,
      [
        "tasks:",
        task("train", "queue: gpu-large, "),
        task("sort", "queue: gpu, "),
        task("plain", ""),
        "",
      ].join("\n"),
    );
    const check = chronolog(dir, ["declare", "--check", file]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('task ml/acme/train/ALL: changed\n  queue: "gpu" -> "gpu-large"\n');
    // --check wrote nothing.
    expect(JSON.parse(chronolog(dir, ["task", "ml/acme/train/ALL", "--json"]).stdout).task.spec.queue).toBe(
      "gpu",
    );
  });

  it("a bad queue name is refused at its field, and nothing is declared", () => {
    const file = join(dir, "bad.yaml");
    writeFileSync(file, ["tasks:", task("bad", "queue: GPU, "), ""].join("\n"));
    const r = chronolog(dir, ["declare", file]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${file}: tasks[0].queue: ml/acme/bad/ALL: `);
    expect(r.stderr).toContain("a queue name is lower-case letters, digits, _, . and -");
    expect(chronolog(dir, ["task", "ml/acme/bad/ALL"]).code).not.toBe(0);
  });

  it("why: a due task waits for a worker on its queue; none connected, then the slots busy", () => {
    const none = why("train");
    expect(none.stdout).toContain("ml/acme/train/ALL: held\n");
    expect(none.stdout).toContain("  waiting for a worker on queue gpu (0 connected)\n");
    expect(why("plain").stdout).not.toContain("queue");
    expect(chronolog(dir, ["workers"]).stdout).toBe("no workers are connected\n");

    append("worker-gpu-1", "WorkerConnected", connected("gpu-1", ["gpu"], 1));
    const free = why("train");
    expect(free.stdout).toContain("ml/acme/train/ALL: ready\n");
    expect(free.stdout).toContain("  goes to a worker on queue gpu (1 connected, 0 of 1 slot busy)\n");

    startOn("sort", "gpu-1");
    const busy = why("train");
    expect(busy.stdout).toContain("ml/acme/train/ALL: held\n");
    expect(busy.stdout).toContain("  waiting for a worker on queue gpu (1 connected, 1 of 1 slot busy)\n");
    const tasks = JSON.parse(chronolog(dir, ["tasks", "--json"]).stdout) as Array<{
      task: string;
      reasons: string[];
    }>;
    expect(tasks.find((t) => t.task === "ml/acme/train/ALL")?.reasons).toContain(
      "waiting for a worker on queue gpu (1 connected, 1 of 1 slot busy)",
    );
  });

  it("workers lists who is connected, its load and what it runs; --all adds those gone with why", () => {
    append("worker-cpu-9", "WorkerConnected", connected("cpu-9", ["cpu", "etl"], 8));
    const listed = chronolog(dir, ["workers"]);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^WORKER +HOST +QUEUES +LOAD +VERSION +SINCE +HEARD +RUNNING$/);
    expect(lines[1]).toMatch(/^cpu-9 +cpu-9\.lab +cpu,etl +0\/8 +1 \(chronolog 0\.1\.0\) +\S+Z +\S+Z +-$/);
    const { logicalDate } = currentInterval("sort");
    const short = logicalDate.replace(/(?::00)?\.000Z$/, "Z");
    expect(lines[2]).toMatch(new RegExp(`^gpu-1 +gpu-1\\.lab +gpu +1/1 .* ml/acme/sort/ALL ${short} #1$`));

    const json = JSON.parse(chronolog(dir, ["workers", "--json"]).stdout);
    expect(json.disconnected).toBeUndefined();
    expect(json.connected.map((w: { id: string }) => w.id)).toEqual(["cpu-9", "gpu-1"]);
    expect(json.connected[1]).toMatchObject({
      host: "gpu-1.lab",
      queues: ["gpu"],
      capacity: 1,
      busy: 1,
      token: "lab-workers",
      running: [{ task: "ml/acme/sort/ALL", logicalDate, attempt: 1, queue: "gpu" }],
      hidden: 0,
    });

    append("worker-gpu-1", "WorkerDisconnected", { worker: "gpu-1", reason: "heartbeats stopped for 30 s" });
    expect(chronolog(dir, ["workers"]).stdout).not.toContain("gpu-1");
    const all = chronolog(dir, ["workers", "--all"]);
    expect(all.stdout).toMatch(/^GONE +HOST +QUEUES +CONNECTED +DISCONNECTED +WHY$/m);
    expect(all.stdout).toMatch(/^gpu-1 +gpu-1\.lab +gpu +\S+Z +\S+Z +heartbeats stopped for 30 s$/m);
    const allJson = JSON.parse(chronolog(dir, ["workers", "--all", "--json"]).stdout);
    expect(allJson.disconnected).toMatchObject([{ id: "gpu-1", reason: "heartbeats stopped for 30 s" }]);
    // Gone: no worker serves gpu, and the attempt it ran still counts until it is settled.
    expect(why("train").stdout).toContain("  waiting for a worker on queue gpu (0 connected)\n");
  });

  it("workers --at shows the workers as they were at a position", () => {
    const head = JSON.parse(chronolog(dir, ["log", "read", "worker-gpu-1", "--json"]).stdout.split("\n")[0]);
    const at = chronolog(dir, ["workers", "--json", "--at", String(head.position)]);
    expect(at.code, at.stderr).toBe(0);
    expect(JSON.parse(at.stdout).connected.map((w: { id: string }) => w.id)).toEqual(["gpu-1"]);
  });
});

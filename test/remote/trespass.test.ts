import { afterAll, describe, expect, it } from "vitest";
import { api, createToken } from "../api/support.js";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { HandWorker } from "./hand-worker.js";
import { declareTasks, freePort, of, readLog, startScheduler, streamOf, workToken } from "./support.js";

/** What a worker may do with a token for one queue, tried against a real scheduler. */
describe("remote workers: a token acts within its queues only", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("gives a worker back only the attempts of its own queues, never the local pool's", async () => {
    const dir = tempDataDir("remote-trespass");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(dir, [
      { name: "tb", queue: "b", command: "true" },
      { name: "tl", command: "sleep 60" },
    ]);
    const ta = workToken(dir, "wa", ["a"]);
    const tb = workToken(dir, "wb", ["b"]);
    const s = await startScheduler(left, dir, await freePort());
    const b = new HandWorker(s.url, tb, "hand-b");
    await b.register(["b"]);
    const run = await waitUntil("the attempt of queue b to reach its worker", () =>
      b.commands.find((c) => c.kind === "run"),
    );
    const remote = run.token as string;
    const local = await waitUntil("the local attempt to start", async () => {
      const e = of(await readLog(dir), "tl").find((x) => x.type === "AttemptStarted");
      return e ? (e.data as { token: string }).token : undefined;
    });
    // The worker of queue b goes: its attempt is no one's now.
    const bye = await api(s.url, "/workers/hand-b", {
      token: tb,
      method: "DELETE",
      headers: { "chronolog-session": b.session },
    });
    expect(bye.status).toBe(200);
    b.close();

    // A worker of queue a announces both attempts as its own.
    const a = new HandWorker(s.url, ta, "hand-a");
    const answer = await a.register(["a"], { running: [remote, local] });
    expect(answer.body.adopted).toEqual([]);
    expect(answer.body.stop).toEqual([remote, local]);
    const end = { durationMs: 1, exitCode: 0, stdoutTail: "", stderrTail: "", workerId: "hand-a" };
    const at = new Date().toISOString();
    for (const [token, name] of [
      [remote, "tb"],
      [local, "tl"],
    ] as const) {
      const r = await a.report([
        { kind: "succeeded", token, attempt: 1, instanceStream: streamOf(name), at, ...end },
      ]);
      expect(r.status).toBe(409);
      expect(r.body.refused[0].reason).toBe(`attempt ${token} was not dispatched to worker hand-a`);
      const put = await a.output(token, 0, "forged output\n");
      expect(put.status).toBe(409);
      expect(put.body.type).toBe("urn:chronolog:problem:not_dispatched");
    }
    const events = await readLog(dir);
    expect(events.filter((e) => e.metadata.actor.startsWith("worker:hand-a"))).toEqual([]);
    expect(events.some((e) => e.type === "AttemptSucceeded")).toBe(false);
    a.close();
  }, 120_000);

  it("refuses a token the id of a worker connected with another: it may not drop it", async () => {
    const dir = tempDataDir("remote-trespass-id");
    left.dirs.push(dir, `${dir}-tasks`);
    const ta = workToken(dir, "wa", ["a"]);
    const tb = workToken(dir, "wb", ["b"]);
    const s = await startScheduler(left, dir, await freePort());
    const b = new HandWorker(s.url, tb, "box-1");
    await b.register(["b"]);
    const a = new HandWorker(s.url, ta, "box-1");
    const taken = await a.registration({ queues: ["a"] });
    expect(taken.status).toBe(409);
    expect(taken.body.type).toBe("urn:chronolog:problem:worker_id_taken");
    expect(taken.body.detail).toBe(
      "worker box-1 is connected with token wb, not wa: only that token may replace its connection (choose another id, or try again once it is gone)",
    );
    // The first is still connected, with its session.
    expect((await b.report([])).status).toBe(200);
    // Its own token may replace its connection (a worker that restarted).
    const again = new HandWorker(s.url, tb, "box-1");
    await again.register(["b"]);
    expect((await b.report([])).status).toBe(409);
    expect((await again.report([])).status).toBe(200);
    const events = (await readLog(dir)).filter((e) => e.streamId === "worker-box-1");
    expect(events.map((e) => `${e.type} ${(e.data as { token?: string }).token ?? ""}`)).toEqual([
      "WorkerConnected wb",
      "WorkerDisconnected ",
      "WorkerConnected wb",
    ]);
    b.close();
    again.close();
  }, 120_000);

  it("binds a worker id to its token while its attempts are in flight: another token may not take them over", async () => {
    const dir = tempDataDir("remote-trespass-bound");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(dir, [{ name: "tk", queue: "k", command: "true", leaseSeconds: 600 }]);
    const t1 = workToken(dir, "wk1", ["k"]);
    const t2 = workToken(dir, "wk2", ["k"]);
    const s = await startScheduler(left, dir, await freePort());
    const one = new HandWorker(s.url, t1, "box-k");
    await one.register(["k"]);
    const run = await waitUntil("the attempt to reach the first worker", () =>
      one.commands.find((c) => c.kind === "run"),
    );
    const token = run.token as string;
    const base = { token, attempt: 1, instanceStream: streamOf("tk"), workerId: "box-k" };
    const at = () => new Date().toISOString();
    expect((await one.report([{ kind: "started", ...base, at: at(), pid: 1 }])).status).toBe(200);
    await waitUntil("its start applied", async () =>
      of(await readLog(dir), "tk").some((e) => e.type === "AttemptStarted") ? true : undefined,
    );
    // Its session leaked: another token may not use it on any route of the worker.
    const leaked = { token: t2, headers: { "chronolog-session": one.session } };
    const forbidden = [
      await api(s.url, "/workers/box-k/reports", { ...leaked, body: { messages: [] } }),
      await api(s.url, `/workers/box-k/attempts/${token}/output?offset=0`, {
        ...leaked,
        method: "PUT",
        type: "application/octet-stream",
        body: "x",
      }),
      await api(s.url, "/workers/box-k", { ...leaked, method: "DELETE" }),
    ];
    expect(forbidden.map((r) => r.status)).toEqual([403, 403, 403]);
    // It goes (its link broke): its attempt is in flight, started on it.
    expect((await one.goodbye()).status).toBe(200);
    one.close();

    // Another token of the same queue asks for its id, announcing the attempt: refused, nothing adopted.
    const thief = new HandWorker(s.url, t2, "box-k");
    const taken = await thief.registration({ queues: ["k"], running: [token] });
    expect(taken.status).toBe(409);
    expect(taken.body.type).toBe("urn:chronolog:problem:worker_id_taken");
    expect(taken.body.detail).toBe(
      "worker box-k is bound to token wk1, which registered it first, not wk2: only that token may register it while it is connected or attempts started on it are in flight (choose another id, or try again once they ended)",
    );
    expect(taken.body.boundTo).toBe("wk1");
    // Nor may it report the attempt under its own id.
    const other = new HandWorker(s.url, t2, "box-other");
    const answer = await other.register(["k"], { running: [token] });
    expect(answer.body.adopted).toEqual([]);
    other.close();

    // The same token may: the worker reconnects, gets its attempt back, and ends it.
    const back = new HandWorker(s.url, t1, "box-k");
    expect((await back.register(["k"], { running: [token] })).body.adopted).toEqual([token]);
    const end = { durationMs: 1, exitCode: 0, stdoutTail: "", stderrTail: "" };
    expect((await back.report([{ kind: "succeeded", ...base, at: at(), ...end }])).status).toBe(200);
    expect((await back.goodbye()).status).toBe(200);
    back.close();

    // Its attempts ended and it gone, the id is free again.
    const later = new HandWorker(s.url, t2, "box-k");
    await waitUntil("the id free again", async () => {
      const r = await later.registration({ queues: ["k"] });
      return r.status === 200 ? r : undefined;
    });
    const events = await readLog(dir);
    expect(events.filter((e) => e.metadata.actor.startsWith("worker:box-other"))).toEqual([]);
    expect(of(events, "tk").map((e) => `${e.type} ${e.metadata.actor}`)).toEqual([
      expect.stringMatching(/^DispatchIntended scheduler:/),
      "AttemptStarted worker:box-k@handmade",
      "AttemptSucceeded worker:box-k@handmade",
    ]);
    expect(
      events
        .filter((e) => e.streamId === "worker-box-k" && e.type === "WorkerConnected")
        .map((e) => (e.data as { token?: string }).token),
    ).toEqual(["wk1", "wk1", "wk2"]);
  }, 120_000);

  it("takes a worker's word only for its own attempts when it asks who knows a lost one", async () => {
    const dir = tempDataDir("remote-trespass-known");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(dir, [{ name: "tk", queue: "b", command: "true", leaseSeconds: 3 }]);
    const ta = workToken(dir, "wa", ["a"]);
    const tb = workToken(dir, "wb", ["b"]);
    const s = await startScheduler(left, dir, await freePort());
    const b = new HandWorker(s.url, tb, "hand-b");
    await b.register(["b"]);
    const run = await waitUntil("the attempt to reach the worker of queue b", () =>
      b.commands.find((c) => c.kind === "run"),
    );
    const token = run.token as string;
    const at = new Date().toISOString();
    const base = { token, attempt: 1, instanceStream: streamOf("tk"), workerId: "hand-b", at };
    expect((await b.report([{ kind: "started", ...base, pid: 1 }])).status).toBe(200);
    // A worker of queue a claims to know every attempt it is asked about.
    const a = new HandWorker(s.url, ta, "hand-a");
    a.onQuery = (q) =>
      void a.report([{ kind: "known", requestId: q.requestId, workerId: "hand-a", running: q.tokens }]);
    await a.register(["a"]);
    // The worker of queue b goes without a word: its attempt is lost once its lease runs out.
    b.close();
    await api(s.url, "/workers/hand-b", {
      token: tb,
      method: "DELETE",
      headers: { "chronolog-session": b.session },
    });
    const ended = await waitUntil(
      "the lost attempt to end, whatever the worker of queue a says",
      async () => of(await readLog(dir), "tk").find((e) => e.type === "AttemptAbandoned"),
      60_000,
      250,
    );
    expect(ended.data).toMatchObject({ token, reason: "lease expired and no worker knows the attempt" });
    expect(a.commands.some((c) => c.kind === "query" && (c.tokens as string[]).includes(token))).toBe(true);
    a.close();
  }, 120_000);

  it("refuses a host or version that would break a line of the log or of `chronolog workers`", async () => {
    const dir = tempDataDir("remote-trespass-host");
    left.dirs.push(dir, `${dir}-tasks`);
    const ta = workToken(dir, "wa", ["a"]);
    const s = await startScheduler(left, dir, await freePort());
    const w = new HandWorker(s.url, ta, "box-2");
    for (const [field, more] of [
      ["host", { host: "box\nbox-3  evil  a  0/4" }],
      ["host", { host: "box\u001b[2J" }],
      ["version", { version: "1.0\r\nforged" }],
    ] as const) {
      const r = await w.registration({ queues: ["a"], ...more });
      expect(r.status).toBe(400);
      expect(r.body.issues.map((e: { path: string }) => e.path)).toEqual([field]);
    }
    expect((await readLog(dir)).some((e) => e.type === "WorkerConnected")).toBe(false);
    await w.register(["a"], { host: "box-2.example", version: "chronolog 0.1.0 (node 20)" });
    const listed = chronolog(dir, ["workers"]);
    expect(listed.stdout.trimEnd().split("\n")).toHaveLength(2);
    w.close();
  }, 120_000);

  it("refuses the worker routes to an admin token limited to projects: queues are of every project", async () => {
    const dir = tempDataDir("remote-trespass-admin");
    left.dirs.push(dir, `${dir}-tasks`);
    const limited = createToken(dir, "admin-p", "admin", ["p"]);
    const s = await startScheduler(left, dir, await freePort());
    const r = await new HandWorker(s.url, limited, "box-4").registration({ queues: ["a"] });
    expect(r.status).toBe(403);
    expect(r.body.detail).toBe(
      "token admin-p is limited to projects: it may not serve queues, whose attempts are of every project (use a work token of no project)",
    );
    expect((await readLog(dir)).some((e) => e.type === "WorkerConnected")).toBe(false);
    // Nor is a work token limited to projects issued: its queues' attempts are of every project.
    for (const limit of ["--project", "--read-projects"]) {
      const w = chronolog(dir, ["token", "create", "wp", "--scope", "work", "--queue", "a", limit, "p"]);
      expect(w.code).not.toBe(0);
      expect(w.stderr).toContain(
        "a work token serves queues, whose attempts are of every project: it is limited to none",
      );
    }
  }, 120_000);

  it("takes at most 256 workers of one token: registrations cost memory, a stream and an event", async () => {
    const dir = tempDataDir("remote-trespass-many");
    left.dirs.push(dir, `${dir}-tasks`);
    const ta = workToken(dir, "wa", ["a"]);
    const tb = workToken(dir, "wb", ["b"]);
    const s = await startScheduler(left, dir, await freePort());
    const statuses: number[] = [];
    for (let i = 0; i < 256; i += 16)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 16 }, (_, j) =>
            new HandWorker(s.url, ta, `many-${i + j}`).registration({ queues: ["a"] }).then((r) => r.status),
          ),
        )),
      );
    expect(statuses.filter((x) => x !== 200)).toEqual([]);
    const over = await new HandWorker(s.url, ta, "many-256").registration({ queues: ["a"] });
    expect(over.status).toBe(429);
    expect(over.body.type).toBe("urn:chronolog:problem:too_many_workers");
    expect(over.body.detail).toBe("token wa already has 256 workers connected, the most one token may");
    // Another token's worker is still welcome, and one already connected may register again.
    expect((await new HandWorker(s.url, tb, "other-0").registration({ queues: ["b"] })).status).toBe(200);
    expect((await new HandWorker(s.url, ta, "many-0").registration({ queues: ["a"] })).status).toBe(200);
  }, 120_000);
});

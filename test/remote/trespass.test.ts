import { afterAll, describe, expect, it } from "vitest";
import { api } from "../api/support.js";
import { Leftovers, tempDataDir } from "../support/cli.js";
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
});

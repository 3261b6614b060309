import { createHash } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { HandWorker } from "./hand-worker.js";
import {
  declareTasks,
  freePort,
  of,
  readLog,
  startScheduler,
  startWorker,
  streamOf,
  workToken,
} from "./support.js";

/**
 * A remote attempt's output comes home as it is written: `logs --follow` shows it live; a small
 * rest of it may come with the attempt's end. A worker stopped says goodbye.
 */
describe("remote workers: output", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("logs --follow prints a remote attempt's output while it runs, then checks it whole", async () => {
    const dir = tempDataDir("remote-output");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(dir, [{ name: "to", queue: "o", command: "echo first; sleep 4; echo second" }]);
    const token = workToken(dir, "wo", ["o"]);
    const s = await startScheduler(left, dir, await freePort());
    const f = chronologSpawn(dir, ["logs", "p/a/to", "--follow"]);
    left.processes.push(f);
    let out = "";
    let err = "";
    f.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
    });
    f.stderr?.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const exited = new Promise<number | null>((r) => f.once("exit", (code) => r(code)));
    const w = startWorker(left, s.url, token, ["o"], "wo-1");
    await waitUntil("the first line, from the remote worker", () =>
      out.includes("first") ? true : undefined,
    );
    // Live: the attempt is still running when its first line is out.
    expect(out).not.toContain("second");
    expect(of(await readLog(dir), "to").some((e) => e.type === "AttemptSucceeded")).toBe(false);
    expect(await exited, err).toBe(0);
    expect(out).toBe("first\nsecond\n");
    expect(err).not.toContain("does not match");

    // Stopped, the worker says goodbye: recorded gone, and it exits 0.
    w.child.kill("SIGTERM");
    expect(await w.exited).toBe(0);
    const gone = (await readLog(dir)).filter((e) => e.streamId === "worker-wo-1").at(-1);
    expect(gone?.type).toBe("WorkerDisconnected");
    expect((gone?.data as { reason: string } | undefined)?.reason).toBe("goodbye: the worker stopped");

    // A worker stopped with no grace while an attempt runs: interrupted, to run again at once on
    // a worker of its queue, and the service, which goes on, says so (not "after the restart").
    declareTasks(dir, [{ name: "tz", queue: "o", command: "sleep 30" }]);
    const w2 = startWorker(left, s.url, token, ["o"], "wo-2", ["--grace", "0"]);
    await waitUntil("the long attempt started", async () =>
      of(await readLog(dir), "tz").some((e) => e.type === "AttemptStarted") ? true : undefined,
    );
    w2.child.kill("SIGTERM");
    expect(await w2.exited).toBe(0);
    const said = await waitUntil("the service to log the interruption", () =>
      s.output.split("\n").find((l) => l.includes("attempt interrupted")),
    );
    expect(said).toContain("attempt interrupted: its worker stopped");
    expect(said).toContain("runs again at once");
    expect(said).not.toContain("after the restart");
  }, 120_000);

  it("takes the rest of an attempt's output inline with its end: after an upload, overlapping it, or not at all past a gap; an end never begun names no starter", async () => {
    const dir = tempDataDir("remote-output-inline");
    left.dirs.push(dir, `${dir}-tasks`);
    declareTasks(
      dir,
      ["ia", "ib", "ic", "iz"].map((name) => ({ name, queue: "i", command: "true" })),
    );
    const token = workToken(dir, "wi", ["i"]);
    const s = await startScheduler(left, dir, await freePort());
    const w = new HandWorker(s.url, token, "box-i");
    const registered = await w.register(["i"]);
    expect(registered.body.inlineOutputMax).toBe(16 * 1024);
    const runs = await waitUntil("four attempts", () => {
      const r = w.commands.filter((c) => c.kind === "run");
      return r.length === 4 ? r : undefined;
    });
    const whole = "first\nsecond\n";
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const file = {
      path: "/elsewhere/out.log",
      bytes: whole.length,
      sha256: createHash("sha256").update(whole).digest("hex"),
      cutBytes: 0,
    };
    const end = { durationMs: 1, exitCode: 0, stdoutTail: "", stderrTail: "", outputFile: file };
    const at = () => new Date().toISOString();
    const byName = new Map(runs.map((r) => [String(r.taskKey).split("/")[2], r]));
    const report = async (name: string, rest: { offset: number; data: string }, uploaded?: string) => {
      const run = byName.get(name) as { token: string };
      const base = { token: run.token, attempt: 1, instanceStream: streamOf(name), workerId: "box-i" };
      expect((await w.report([{ kind: "started", ...base, at: at(), pid: 1 }])).status).toBe(200);
      if (uploaded) expect((await w.output(run.token, 0, uploaded)).status).toBe(200);
      expect(
        (await w.report([{ kind: "succeeded", ...base, at: at(), ...end, outputRest: rest }])).status,
      ).toBe(200);
    };
    // The rest after what was uploaded; all of it again over an upload; a rest past a gap.
    await report("ia", { offset: 6, data: b64("second\n") }, "first\n");
    await report("ib", { offset: 0, data: b64(whole) }, "first\n");
    await report("ic", { offset: 6, data: b64("second\n") });
    // More than a report may carry is refused, naming the field; nothing is applied.
    const big = await w.report([
      {
        kind: "succeeded",
        token: "x",
        attempt: 1,
        instanceStream: streamOf("ia"),
        workerId: "box-i",
        at: at(),
        ...end,
        outputRest: { offset: 0, data: b64("x".repeat(16 * 1024 + 3)) },
      },
    ]);
    expect(big.status).toBe(400);
    expect(big.text).toContain("outputRest");

    const events = await waitUntil("the three ends applied", async () => {
      const e = await readLog(dir);
      return ["ia", "ib", "ic"].every((n) => of(e, n).some((x) => x.type === "AttemptSucceeded"))
        ? e
        : undefined;
    });
    const recorded = (name: string) => {
      const e = of(events, name).find((x) => x.type === "AttemptSucceeded");
      return ((e?.data ?? {}) as { output?: { file?: Record<string, unknown> } }).output?.file ?? {};
    };
    for (const name of ["ia", "ib"]) {
      expect(recorded(name)).toMatchObject({ bytes: whole.length, sha256: file.sha256 });
      expect(recorded(name).error).toBeUndefined();
      expect(chronolog(dir, ["logs", `p/a/${name}`]).stdout).toBe(whole);
    }
    expect(recorded("ic")).toMatchObject({ bytes: 0 });
    expect(recorded("ic").error).toBe("0 of the worker's 13 bytes of output reached the scheduler");
    // The inline bytes are not in the event: only the file's size and hash are.
    expect(JSON.stringify(events.map((e) => e.data))).not.toContain(b64("second\n"));

    // An end the worker reports of an attempt it dropped from its queue, never begun: it is not
    // recorded as the worker's start (it runs again at once, as a shutdown's does).
    const iz = byName.get("iz") as { token: string };
    const dropped = await w.report([
      {
        kind: "failed",
        token: iz.token,
        attempt: 1,
        instanceStream: streamOf("iz"),
        workerId: "box-i",
        at: at(),
        durationMs: 0,
        exitCode: null,
        stdoutTail: "",
        stderrTail: "",
        error: { kind: "interrupted", message: "worker shutdown" },
        neverStarted: true,
      },
    ]);
    expect(dropped.status, dropped.text).toBe(200);
    const failed = await waitUntil("the dropped attempt's end", async () =>
      of(await readLog(dir), "iz").find((e) => e.type === "AttemptFailed"),
    );
    expect(failed.data).toMatchObject({ error: { kind: "interrupted" }, retryAt: expect.any(String) });
    expect(failed.data).not.toHaveProperty("workerId");
    w.close();
  }, 120_000);
});

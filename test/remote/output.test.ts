import { afterAll, describe, expect, it } from "vitest";
import { chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { declareTasks, freePort, of, readLog, startScheduler, startWorker, workToken } from "./support.js";

/**
 * A remote attempt's output comes home as it is written: `logs --follow` shows it live. A worker
 * stopped says goodbye.
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
  }, 120_000);
});

import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { answer, commands, handScheduler } from "./hand-scheduler.js";
import { isAlive, readPid, runCmd, shell, tempDir, waitFor } from "./helpers.js";

describe("a remote worker stopped twice (a second Ctrl-C)", () => {
  const stops: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it("stops what runs at once, and still delivers its end and says goodbye before it is done", async () => {
    const dir = await tempDir("chronolog-stop-twice-");
    const pidFile = join(dir, "pid");
    const run = runCmd(shell(`echo $$ > ${pidFile}; exec sleep 30`), { token: "long" });
    const posted: string[] = [];
    let goodbyes = 0;
    const { worker } = await handScheduler(
      {
        commands: (stream) => commands(stream, [run]),
        reports: (body, res) => {
          posted.push(body);
          answer(res, { accepted: 1, refused: [] });
        },
        goodbye: () => {
          goodbyes += 1;
        },
      },
      stops,
    );
    const pid = await waitFor(() => readPid(pidFile), 10_000);
    // The first stop would give it 30 s; the second, at once, stops it now.
    const first = worker.stop(30_000);
    const second = worker.stop(0);
    await second;
    // Done only once its end was delivered and the scheduler told goodbye.
    expect(isAlive(pid)).toBe(false);
    expect(
      posted.some((b) => b.includes('"failed"') && b.includes('"long"') && b.includes("interrupted")),
    ).toBe(true);
    expect(goodbyes).toBe(1);
    await first;
  });
});

import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { answer, commands, handScheduler } from "./hand-scheduler.js";
import { isAlive, readPid, registrationAnswer, runCmd, shell, sleep, tempDir, waitFor } from "./helpers.js";

describe("a remote worker's fence", () => {
  const stops: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  /** A worker given one attempt (lease 3 s) by a hand-spoken scheduler, on a clock the test moves. */
  async function fencedSetUp() {
    const dir = await tempDir("chronolog-fence-");
    const pidFile = join(dir, "pid");
    // Lease 3 s: fenced two seconds after the last answered report was sent.
    const run = runCmd(shell(`echo $$ > ${pidFile}; exec sleep 30`), { token: "f1", leaseSeconds: 3 });
    // Its reports are answered as the test says (or never).
    const reports: Array<{ body: string; answer: (status?: number) => void }> = [];
    // The worker's clock, moved by the test.
    let clock = 1_000_000;
    const { logs } = await handScheduler(
      {
        commands: (stream) => commands(stream, [run]),
        reports: (body, res) => {
          reports.push({
            body,
            answer: (status = 200) =>
              answer(res, status === 200 ? { accepted: 1, refused: [] } : { detail: "bad gateway" }, status),
          });
        },
      },
      stops,
      { now: () => clock },
    );
    const pid = await waitFor(() => readPid(pidFile), 10_000);
    const at = (ms: number) => {
      clock = ms;
    };
    return { pid, reports, logs, at, now: () => clock };
  }

  it("counts an attempt's silence from when its last answered report was sent, not from the answer", async () => {
    const { pid, reports, logs, at, now } = await fencedSetUp();
    // Its start is posted at 1,000,000; the answer takes 1.5 s (the scheduler writing it).
    const first = await waitFor(() => reports[0]);
    expect(first.body).toContain('"started"');
    at(now() + 1500);
    first.answer();
    // From then on nothing is answered (the link is cut). At 2 s past the send, less than two
    // thirds of a lease past the answer, the attempt is fenced: the scheduler's lease ran from
    // when it heard the start, and it may retry the attempt a third of the lease later.
    await sleep(300);
    expect(isAlive(pid)).toBe(true);
    at(1_000_000 + 2000 + 10);
    await waitFor(() => logs.some((l) => l.startsWith("fenced:")), 5000);
    await waitFor(() => !isAlive(pid), 5000);
    expect(logs.find((l) => l.startsWith("fenced:"))).toContain("two thirds of the lease of f1");
  });

  it("takes no answer but the scheduler's for a delivery: a proxy's 502 keeps the batch and the fence counting", async () => {
    const { pid, reports, logs, at, now } = await fencedSetUp();
    // Every post is answered 502 (the scheduler behind a proxy is down), the first 1.5 s late.
    const first = await waitFor(() => reports[0]);
    at(now() + 1500);
    first.answer(502);
    let answered = 1;
    const answering = setInterval(() => {
      while (answered < reports.length) reports[answered++]?.answer(502);
    }, 20);
    stops.push(() => clearInterval(answering));
    // The start is posted again: kept, not taken for delivered.
    await waitFor(() => reports.filter((r) => r.body.includes('"started"')).length >= 2, 5000);
    expect(logs.some((l) => l.includes("HTTP 502"))).toBe(true);
    await sleep(300);
    expect(isAlive(pid)).toBe(true);
    // Two thirds of the lease after it came, with nothing heard: fenced.
    at(1_000_000 + 2000 + 10);
    await waitFor(() => logs.some((l) => l.startsWith("fenced:")), 5000);
    await waitFor(() => !isAlive(pid), 5000);
  });
});

describe("a run command for an attempt this worker has finished", () => {
  const stops: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it("holds nothing: the next registration does not announce it, and it runs once", async () => {
    const dir = await tempDir("chronolog-resent-");
    const ran = join(dir, "ran");
    // Every connection of the command stream gives the same run again (a scheduler re-sending it).
    const run = runCmd(shell(`echo x >> ${ran}`), { token: "once" });
    const registrations: Array<{ running: string[] }> = [];
    const ends: string[] = [];
    let stream: ServerResponse | undefined;
    await handScheduler(
      {
        register: (body) => {
          registrations.push(JSON.parse(body));
          return registrationAnswer();
        },
        commands: (res) => {
          commands(res, [run]);
          stream = res;
        },
        reports: (body, res) => {
          if (body.includes('"succeeded"')) ends.push(body);
          answer(res, { accepted: 1, refused: [] });
        },
      },
      stops,
      { capacity: 2 },
    );
    await waitFor(() => ends.length > 0, 10_000);
    // The stream ends twice: each reconnection re-sends the run, ignored by the runtime.
    for (const n of [2, 3]) {
      stream?.end();
      await waitFor(() => registrations.length >= n && stream?.writableEnded === false, 10_000);
      await sleep(200);
    }
    expect(registrations.map((r) => r.running)).toEqual([[], [], []]);
    expect(readFileSync(ran, "utf8")).toBe("x\n");
    expect(ends).toHaveLength(1);
  });
});

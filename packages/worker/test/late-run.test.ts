import { existsSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { lateRun } from "../src/remote/client.js";
import { SchedulerClock } from "../src/remote/scheduler-clock.js";
import { answer, commands, type HandRoutes, handScheduler } from "./hand-scheduler.js";
import { readPid, registrationAnswer, runCmd, shell, sleep, tempDir, waitFor } from "./helpers.js";

describe("the scheduler's clock as a remote worker knows it", () => {
  it("is what the latest answer said, advanced by the worker's own clock; nothing before an answer", () => {
    let local = 1_000;
    const clock = new SchedulerClock(() => local);
    expect(clock.since(5_000_000)).toBe(0);
    clock.heard(5_000_000);
    local += 700;
    expect(clock.since(5_000_000)).toBe(700);
    expect(clock.since(4_999_000)).toBe(1_700);
    // A command stamped after the answer (queued since) is not late.
    expect(clock.since(5_000_900)).toBe(0);
    // Nothing to go by: a command unstamped, an answer without its clock.
    expect(clock.since(undefined)).toBe(0);
    clock.heard(undefined);
    clock.heard("5000000");
    expect(clock.since(5_000_000)).toBe(700);
  });

  it("keeps the reading that travelled fastest for a minute, then takes the latest", () => {
    let local = 0;
    const clock = new SchedulerClock(() => local);
    clock.heard(10_000);
    // An answer read 300 ms after it was stamped (it waited for a write, or on the link): its
    // reading is lower, and the one before stays.
    local = 1_000;
    clock.heard(10_700);
    expect(clock.since(10_000)).toBe(1_000);
    // A minute on, a lower reading is taken all the same: the two clocks' rates may differ a
    // little, and an old reading held for hours could run ahead of the scheduler's.
    local = 61_001;
    clock.heard(70_700);
    expect(clock.since(70_700)).toBe(0);
    local = 62_001;
    expect(clock.since(70_700)).toBe(1_000);
  });

  it("takes a registration's reading over a higher one kept: the scheduler may have restarted", () => {
    let local = 0;
    const clock = new SchedulerClock(() => local);
    clock.heard(10_000);
    // Restarted with its wall clock set back a minute: its clock counts from another origin.
    local = 1_000;
    clock.registered(-49_000);
    expect(clock.since(-49_000)).toBe(0);
    local = 2_000;
    expect(clock.since(-49_000)).toBe(1_000);
  });

  it("makes a run late from a quarter of its lease on, unless it waits for its start permission", () => {
    const run = runCmd(shell("true"), { leaseSeconds: 6 });
    expect(lateRun(run, 1_499)).toBe(false);
    expect(lateRun(run, 1_500)).toBe(true);
    expect(lateRun({ ...run, awaitProceed: true }, 60_000)).toBe(false);
  });
});

/**
 * The routes of a scheduler spoken by hand: its clock reads 5,000,000 in each answer; its command
 * stream carries the batches given, each stamped as the test says. A batch of reports holding the
 * start of `hold` is answered when the test says (`release`); the starts of `refuse` are refused,
 * the first with its reason, the others with none said.
 */
function lateRoutes(
  batches: ReadonlyArray<{ at: number; run: object }>,
  hold: string,
  refuse: readonly string[],
) {
  const posted: string[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  const routes: HandRoutes = {
    register: () => registrationAnswer({ now: 5_000_000 }),
    commands: (stream) => {
      for (const b of batches) commands(stream, [b.run], b.at);
    },
    reports: async (body, res) => {
      posted.push(body);
      const messages = (JSON.parse(body) as { messages: Array<{ kind: string; token: string }> }).messages;
      const started = (token: string) => messages.some((m) => m.kind === "started" && m.token === token);
      if (started(hold)) await released;
      const refused = refuse
        .filter(started)
        .map((token) =>
          token === refuse[0]
            ? { kind: "started", token, reason: "attempt 1 of its instance already ended (abandoned)" }
            : { kind: "started", token },
        );
      answer(
        res,
        { accepted: messages.length - refused.length, refused, now: 5_000_000 },
        refused.length > 0 ? 409 : 200,
      );
    },
    release: () => release(),
  };
  return { routes, posted, release: () => release() };
}

describe("a remote worker given a run its stream delivered late", () => {
  const stops: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it("runs an idempotent one that came a quarter of its lease late only once its start is accepted; a refused one never", async () => {
    const dir = await tempDir("chronolog-late-run-");
    const pidOf = (name: string) => join(dir, `${name}.pid`);
    const run = (name: string) => runCmd(shell(`echo $$ > ${pidOf(name)}`), { token: name, leaseSeconds: 6 });
    // Two queued 2.5 s before the registration's answer (past a quarter of 6 s), then one queued as
    // it answered.
    const { routes, posted, release } = lateRoutes(
      [
        { at: 5_000_000 - 2_500, run: run("late") },
        { at: 5_000_000 - 2_500, run: run("given-up") },
        { at: 5_000_000 - 2_500, run: run("unexplained") },
        { at: 5_000_000, run: run("timely") },
      ],
      "late",
      ["given-up", "unexplained"],
    );
    // The worker's clock stands still: the commands are as late as their stamps say.
    const { logs } = await handScheduler(routes, stops, { capacity: 4, now: () => 1_000 });
    // The timely one runs at once; the late one has reported its start and waits for the answer.
    await waitFor(() => readPid(pidOf("timely")), 10_000);
    await waitFor(() => posted.some((b) => b.includes('"started"') && b.includes('"late"')), 10_000);
    await sleep(300);
    expect(existsSync(pidOf("late"))).toBe(false);
    expect(logs.find((l) => l.includes("the run of late"))).toMatch(
      /^held: the run of late came 2\.5 s after http:\/\/127\.0\.0\.1:\d+ sent it, a quarter of its lease or more .*: it starts once the scheduler accepts its start$/,
    );
    expect(logs.some((l) => l.includes("the run of timely"))).toBe(false);
    // Accepted: it runs. Refused (given up meanwhile): it never runs, and is reported cancelled.
    release();
    await waitFor(() => readPid(pidOf("late")), 10_000);
    await waitFor(
      () =>
        posted.some(
          (b) => b.includes('"failed"') && b.includes('"given-up"') && b.includes("its start was refused"),
        ),
      10_000,
    );
    expect(existsSync(pidOf("given-up"))).toBe(false);
    // A refusal that gives no reason is a refusal all the same.
    await waitFor(
      () =>
        posted.some(
          (b) =>
            b.includes('"failed"') &&
            b.includes('"unexplained"') &&
            b.includes("its start was refused: refused"),
        ),
      10_000,
    );
    expect(existsSync(pidOf("unexplained"))).toBe(false);
  });
});

describe("a remote worker with an attempt's end waiting on its output's upload", () => {
  const stops: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it("sends a held start first, not behind the upload, and the end once its output is home", async () => {
    const dir = await tempDir("chronolog-upload-first-");
    const pidOf = (name: string) => join(dir, `${name}.pid`);
    // `big` writes more output than goes inside an end; `late` comes 2.5 s late (held for its start's answer).
    const big = runCmd(shell(`head -c 4000 /dev/zero | tr '\\0' x; echo $$ > ${pidOf("big")}`), {
      token: "big",
    });
    const late = runCmd(shell(`echo $$ > ${pidOf("late")}`), { token: "late", leaseSeconds: 6 });
    const posted: string[] = [];
    let uploads = 0;
    let stream: ServerResponse | undefined;
    let releaseReports: () => void = () => {};
    const reportsHeld = new Promise<void>((r) => {
      releaseReports = r;
    });
    let releaseUploads: () => void = () => {};
    const uploadsHeld = new Promise<void>((r) => {
      releaseUploads = r;
    });
    const command = (run: object, at: number) => commands(stream, [run], at);
    await handScheduler(
      {
        register: () => registrationAnswer({ now: 5_000_000, inlineOutputMax: 100 }),
        commands: (res) => {
          stream = res;
          command(big, 5_000_000);
        },
        reports: async (body, res) => {
          posted.push(body);
          // The first batch (big's start) is answered when the test says: what comes meanwhile queues.
          if (posted.length === 1) await reportsHeld;
          answer(res, { accepted: 1, refused: [], now: 5_000_000 });
        },
        output: async (offset, body, res) => {
          uploads += 1;
          await uploadsHeld;
          answer(res, { bytes: offset + body.length });
        },
        release: () => {
          releaseReports();
          releaseUploads();
        },
      },
      stops,
      { capacity: 4, runtime: { outputRoot: dir }, now: () => 1_000 },
    );
    // big ran and ended while its start's batch was unanswered; late came meanwhile.
    await waitFor(() => readPid(pidOf("big")), 10_000);
    await sleep(300);
    command(late, 5_000_000 - 2_500);
    await sleep(300);
    expect(posted).toHaveLength(1);
    releaseReports();
    // late's start goes while big's output is still on its way, and late runs once accepted.
    await waitFor(() => posted.some((b) => b.includes('"started"') && b.includes('"late"')), 10_000);
    await waitFor(() => readPid(pidOf("late")), 10_000);
    // The end's upload follows the start's answer (on a loaded machine, after late has run).
    await waitFor(() => uploads > 0, 10_000);
    expect(posted.some((b) => b.includes('"succeeded"') && b.includes('"big"'))).toBe(false);
    releaseUploads();
    await waitFor(() => posted.some((b) => b.includes('"succeeded"') && b.includes('"big"')), 10_000);
  });
});

import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { lateRun, RemoteWorker } from "../src/remote/client.js";
import { Link } from "../src/remote/link.js";
import { SchedulerClock } from "../src/remote/scheduler-clock.js";
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
 * A scheduler spoken by hand on a loopback port: its clock reads 5,000,000 in each answer; its
 * command stream carries the batches given, each stamped as the test says. A batch of reports
 * holding the start of `hold` is answered when the test says; the starts of `refuse` are refused,
 * the first with its reason, the others with none said.
 */
function handScheduler(
  batches: ReadonlyArray<{ at: number; run: object }>,
  hold: string,
  refuse: readonly string[],
) {
  const posted: string[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", async () => {
      if (req.method === "POST" && req.url === "/api/v1/workers") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(registrationAnswer({ now: 5_000_000 }));
      } else if (req.method === "GET" && req.url?.endsWith("/commands")) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        for (const b of batches)
          res.write(`event: commands\ndata: ${JSON.stringify({ messages: [b.run], at: b.at })}\n\n`);
      } else if (req.method === "POST" && req.url?.endsWith("/reports")) {
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
        res.writeHead(refused.length > 0 ? 409 : 200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            accepted: messages.length - refused.length,
            refused,
            now: 5_000_000,
          }),
        );
      } else {
        res.writeHead(404);
        res.end();
      }
    });
  });
  return { server, posted, release: () => release() };
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
    const { server, posted, release } = handScheduler(
      [
        { at: 5_000_000 - 2_500, run: run("late") },
        { at: 5_000_000 - 2_500, run: run("given-up") },
        { at: 5_000_000 - 2_500, run: run("unexplained") },
        { at: 5_000_000, run: run("timely") },
      ],
      "late",
      ["given-up", "unexplained"],
    );
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    stops.push(() => {
      release();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    });
    const { port } = server.address() as AddressInfo;
    const logs: string[] = [];
    const worker = new RemoteWorker({
      links: [new Link({ url: `http://127.0.0.1:${port}`, token: "t" })],
      id: "w",
      host: "h",
      queues: ["q"],
      capacity: 4,
      version: "test",
      runtime: {},
      log: (m) => logs.push(m),
      // The worker's clock stands still: the commands are as late as their stamps say.
      now: () => 1_000,
    });
    const running = worker.run();
    stops.push(async () => {
      await worker.stop(0);
      await worker.stop(0);
      await running.catch(() => {});
    });
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
    const command = (run: object, at: number) =>
      stream?.write(`event: commands\ndata: ${JSON.stringify({ messages: [run], at })}\n\n`);
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const body = Buffer.concat(chunks);
        if (req.method === "POST" && req.url === "/api/v1/workers") {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(registrationAnswer({ now: 5_000_000, inlineOutputMax: 100 }));
        } else if (req.method === "GET" && req.url?.endsWith("/commands")) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          stream = res;
          command(big, 5_000_000);
        } else if (req.method === "POST" && req.url?.endsWith("/reports")) {
          const text = body.toString("utf8");
          posted.push(text);
          // The first batch (big's start) is answered when the test says: what comes meanwhile queues.
          if (posted.length === 1) await reportsHeld;
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ accepted: 1, refused: [], now: 5_000_000 }));
        } else if (req.method === "PUT" && req.url?.includes("/output?offset=")) {
          uploads += 1;
          await uploadsHeld;
          const offset = Number(new URL(req.url, "http://x").searchParams.get("offset"));
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify({ bytes: offset + body.length }));
        } else {
          res.writeHead(404);
          res.end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    stops.push(() => {
      releaseReports();
      releaseUploads();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    });
    const { port } = server.address() as AddressInfo;
    const worker = new RemoteWorker({
      links: [new Link({ url: `http://127.0.0.1:${port}`, token: "t" })],
      id: "w",
      host: "h",
      queues: ["q"],
      capacity: 4,
      version: "test",
      runtime: { outputRoot: dir },
      log: () => {},
      now: () => 1_000,
    });
    const running = worker.run();
    stops.push(async () => {
      await worker.stop(0);
      await running.catch(() => {});
    });
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

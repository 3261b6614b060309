import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { completed, freePort, of, readLog, startScheduler, workToken } from "../remote/support.js";
import { Leftovers, tempDataDir } from "../support/cli.js";
import { type LinkedNamespace, linkedNamespace, namespacesUnavailable } from "../support/netns.js";
import { waitUntil } from "../support/wait.js";
import { declarePython, startPythonWorker } from "./support.js";

/** The file's whole lines (one being written is left out until its newline). */
const lines = (file: string) =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(0, -1).filter(Boolean) : [];
const unavailable = namespacesUnavailable();

/**
 * A Python worker in a network namespace of its own, its link to the scheduler cut for longer
 * than the lease: it fences itself (kills its idempotent attempts' process groups) before the
 * scheduler takes their leases for expired and retries them, so no attempt overlaps its retry
 * (each holds a kernel lock, flock, while it runs); once the link is back, everything finishes,
 * each task once.
 */
describe.skipIf(unavailable !== undefined)("the Python worker: a link cut past the lease", () => {
  const left = new Leftovers();
  let net: LinkedNamespace | null = null;
  let cut = false;
  afterAll(async () => {
    if (cut) net?.restore();
    await left.clear();
    net?.remove();
  });

  it("no attempt overlaps its retry, nothing runs twice to its end, everything finishes", async () => {
    net = linkedNamespace("pywork");
    const dir = tempDataDir("pyworker-netcut");
    left.dirs.push(dir, `${dir}-tasks`);
    const starts = join(dir, "starts");
    const ends = join(dir, "ends");
    const overlaps = join(dir, "overlaps");
    const names = ["n1", "n2", "n3"];
    declarePython(
      dir,
      names.map((name) => ({
        name,
        fn: "locked",
        leaseSeconds: 6,
        args: { lock: join(dir, `${name}.lock`), starts, ends, overlaps, seconds: 10 },
      })),
    );
    const token = workToken(dir, "pn", ["py"]);
    const s = await startScheduler(left, dir, await freePort(), net.hostAddress);
    const w = startPythonWorker(left, s.url, token, ["py"], "pn-1", ["--insecure"], net.exec);
    await waitUntil("every attempt to start in the namespace", () =>
      lines(starts).length === names.length ? true : undefined,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}`);
    });
    // And every start to be on record, so that each attempt is one whose lease runs out: one
    // whose start report the cut held back (a slow machine) is never confirmed instead, and
    // ends abandoned, not the way this test is about.
    await waitUntil("every start on the scheduler's record", async () => {
      const events = await readLog(dir);
      return names.every((n) => of(events, n).some((e) => e.type === "AttemptStarted")) ? true : undefined;
    }).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}`);
    });
    net.cut();
    cut = true;
    // Each first attempt ends on the scheduler's side while the link is cut: its lease expires,
    // or (the reconcile later than the worker's silence, on a loaded machine) its worker is
    // dropped as silent and the attempt recorded lost. Either way it is retried, and the fence
    // is what keeps the two from overlapping.
    const endedHere = (events: Awaited<ReturnType<typeof readLog>>, n: string) =>
      of(events, n).some(
        (e) =>
          e.type === "AttemptHeartbeatExpired" ||
          (e.type === "AttemptFailed" && (e.data as { error?: { kind?: string } }).error?.kind === "lost"),
      );
    await waitUntil(
      "every first attempt to end on the scheduler (lease expired, or lost with its worker)",
      async () => {
        const events = await readLog(dir);
        return names.every((n) => endedHere(events, n)) ? true : undefined;
      },
      60_000,
      500,
    ).catch(async (error: Error) => {
      const events = await readLog(dir);
      const seen = names
        .map(
          (n) =>
            `${n}: ${of(events, n)
              .map((e) => e.type)
              .join(", ")}`,
        )
        .join("\n");
      throw new Error(
        `${error.message}\n${seen}\nscheduler:\n${s.output.slice(-6000)}\nworker:\n${w.output}`,
      );
    });
    expect(w.output).toContain("fenced:");
    net.restore();
    cut = false;
    const events = await completed(dir, names, 120_000).catch((error: Error) => {
      throw new Error(`${error.message}\nworker:\n${w.output}`);
    });
    expect(lines(overlaps)).toEqual([]);
    // The first attempts were killed before their end: each task ended once, by its retry.
    expect(lines(ends).sort()).toEqual(names.map((n) => `p/a/${n}/ALL`));
    for (const n of names) {
      const ok = of(events, n).filter((e) => e.type === "AttemptSucceeded");
      expect(ok).toHaveLength(1);
      expect((ok[0]?.data as { attempt: number } | undefined)?.attempt).toBeGreaterThan(1);
    }
  }, 240_000);
});

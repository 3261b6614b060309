import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, chronologSpawn, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * `up --example` declares the example once into a data directory: a restart keeps what was
 * declared since (the README's tour moves its start date back) rather than declaring it anew.
 */
const left = new Leftovers();
afterAll(() => left.clear());

const TOUR = fileURLToPath(new URL("../../docs/examples/orders.yaml", import.meta.url));
const RAW = "ingest/acme/orders_raw";

/** Runs `up --example` until it is up and has said `line`, then stops it with Ctrl-C. */
async function upOnce(dir: string, line: string): Promise<string> {
  const p = chronologSpawn(dir, ["up", "--example", "--http", "off", "--workers", "1", "--grace", "1"]);
  left.processes.push(p);
  let err = "";
  p.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => p.once("exit", (code) => resolve(code)));
  await waitUntil(`up to say "${line}"`, () =>
    err.includes("chronolog is up") && err.includes(line) ? true : undefined,
  );
  p.kill("SIGINT");
  expect(await exited, err).toBe(0);
  return err;
}

/** The start dates the task was declared with, oldest first. */
const startDates = (dir: string): string[] =>
  chronolog(dir, ["log", "read", "--json"])
    .stdout.split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { streamId: string; dataJson: string })
    .filter((e) => e.streamId === `task-${RAW}/ALL`)
    .map((e) => (JSON.parse(e.dataJson) as { spec?: { startDate?: string } }).spec?.startDate)
    .filter((d): d is string => d !== undefined);

describe("up --example", () => {
  it("declares the example into a new data directory, and keeps what was declared since on a restart", async () => {
    const dir = tempDataDir("up-example");
    left.dirs.push(dir);
    await upOnce(dir, "example task");
    const first = startDates(dir);
    expect(first).toHaveLength(1);
    // The tour: a producer declares the pipeline with an earlier start date.
    expect(chronolog(dir, ["declare", TOUR]).code).toBe(0);
    expect(startDates(dir)).toEqual([...first, "2026-11-01T00:00:00.000Z"]);
    const second = await upOnce(dir, "the example is declared here already");
    expect(second).not.toContain("example task");
    expect(startDates(dir)).toEqual([...first, "2026-11-01T00:00:00.000Z"]);
  });
});

import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { chronolog, tempDataDir } from "../support/cli.js";

/** `chronolog worker` refuses flags that cannot work before it connects anywhere, saying why. */
const dir = tempDataDir("worker-flags");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const worker = (...args: string[]) =>
  chronolog(dir, ["worker", "--token", "chl.x.y", "--queue", "a", "--dir", join(dir, "w"), ...args]);

it("needs a scheduler, each once, and a capacity of at least one attempt per scheduler", () => {
  const none = worker();
  expect(none.code).toBe(2);
  expect(none.stderr).toContain("worker needs --connect URL (one per scheduler)");
  const twice = worker("--connect", "http://127.0.0.1:9", "--connect", "http://127.0.0.1:9");
  expect(twice.code).toBe(2);
  expect(twice.stderr).toContain("--connect names the same scheduler twice");
  const small = worker(
    "--connect",
    "http://127.0.0.1:9",
    "--connect",
    "http://127.0.0.1:10",
    "--capacity",
    "1",
  );
  expect(small.code).toBe(2);
  expect(small.stderr).toContain("--capacity 1 is shared by the 2 schedulers of --connect: give at least 2");
  const offLoopback = worker("--connect", "http://127.0.0.1:9", "--connect", "http://192.0.2.1:8080");
  expect(offLoopback.code).toBe(2);
  expect(offLoopback.stderr).toMatch(/192\.0\.2\.1/);
});

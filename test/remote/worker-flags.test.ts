import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { chronolog, chronologSpawn, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

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

it("clears what killed attempts left in its task directory, and is refused one another worker holds", async () => {
  // What a killed worker's attempt left in its working directory goes as the next one starts.
  const shared = join(dir, "shared");
  const leftover = join(`${shared}-tasks`, "work", "killed-attempt");
  mkdirSync(leftover, { recursive: true });
  writeFileSync(join(leftover, "scratch.txt"), "left behind");
  // The first runs on, trying to reach a scheduler that is not there; the second, given the same
  // directory (and so the same task directory), is refused at once.
  const args = [
    "worker",
    "--token",
    "chl.x.y",
    "--queue",
    "a",
    "--connect",
    "http://127.0.0.1:9",
    "--dir",
    shared,
  ];
  const first = chronologSpawn(dir, args);
  first.stdout?.resume();
  let said = "";
  first.stderr?.on("data", (c: Buffer) => {
    said += c.toString();
  });
  try {
    await waitUntil("the first worker to hold its task directory", () =>
      existsSync(join(`${shared}-tasks`, "scheduler.lock.json")) ? true : undefined,
    );
    await waitUntil("the leftover working directory to go", () => (existsSync(leftover) ? undefined : true));
    await waitUntil("the worker to say so", () => (said.includes('"workDirs":1') ? true : undefined));
    const second = chronolog(dir, args);
    expect(second.code, `${second.stderr}\n${said}`).toBe(8);
    expect(second.stderr).toContain(
      `the task directory ${shared}-tasks is in use by pid ${first.pid} on host `,
    );
    expect(second.stderr).toContain(`(worker directory ${shared})`);
    expect(first.exitCode).toBeNull();
  } finally {
    first.kill("SIGKILL");
    await new Promise((r) => first.once("exit", r));
    rmSync(`${shared}-tasks`, { recursive: true, force: true });
  }
}, 30_000);

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, cliEnv, Leftovers, tempDataDir } from "../support/cli.js";

const left = new Leftovers();
afterAll(() => left.clear());

/** The CLI with its code cache in `cache` (or as the environment says, when undefined). */
function run(dataDir: string, cache: string | undefined, args: string[], flags: string[] = []) {
  const env = cliEnv(cache === undefined ? {} : { CHRONOLOG_CODE_CACHE: cache });
  const r = spawnSync(process.execPath, [...flags, CLI, "--data-dir", dataDir, ...args], {
    encoding: "utf8",
    env,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const files = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".bin"));

/**
 * The code cache of the CLI's bundle: the same answers with no cache, a cache, a stale cache and
 * a broken one, and a command that runs whatever the cache's directory is.
 */
describe("the CLI's code cache", () => {
  const dir = tempDataDir("code-cache");
  left.dirs.push(dir);
  const file = join(dir, "tasks.yaml");
  writeFileSync(
    file,
    `tasks:
  - { project: p, account: a, name: up1, cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", idempotent: true, operator: { type: noop } }
  - { project: p, account: a, name: down, parents: [p/a/up1], cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", idempotent: true, operator: { type: noop } }
`,
  );
  const off = run(dir, "off", ["declare", file]);
  const expected = run(dir, "off", ["why", "p/a/down"]);

  it("answers as without it, from an empty cache and from the one that run wrote", () => {
    expect(off.code).toBe(0);
    expect(expected.code).toBe(0);
    expect(expected.stdout).toMatch(/p\/a\/down/);
    const parent = tempDataDir("code-cache-dir");
    left.dirs.push(parent);
    const cache = join(parent, "cache");
    expect(run(dir, cache, ["why", "p/a/down"])).toEqual(expected);
    const written = files(cache);
    expect(written.length).toBeGreaterThan(0);
    expect(statSync(cache).mode & 0o777).toBe(0o700);
    const times = written.map((f) => statSync(join(cache, f)).mtimeMs);
    expect(run(dir, cache, ["why", "p/a/down"])).toEqual(expected);
    // Used, not written again.
    expect(written.map((f) => statSync(join(cache, f)).mtimeMs)).toEqual(times);
  });

  it("answers as without it from a broken or stale cache, and writes it anew", () => {
    const parent = tempDataDir("code-cache-dir");
    left.dirs.push(parent);
    const cache = join(parent, "cache");
    expect(run(dir, cache, ["why", "p/a/down"]).code).toBe(0);
    const written = files(cache);
    for (const [i, f] of written.entries()) {
      const path = join(cache, f);
      const text = readFileSync(path);
      if (i % 3 === 0) writeFileSync(path, "not a cache");
      // The header right, the data broken.
      else if (i % 3 === 1) {
        const broken = Buffer.from(text);
        broken.fill(0x5a, 200);
        writeFileSync(path, broken);
      }
      // Stale: another bundle's text (the key in the header differs).
      else
        writeFileSync(
          path,
          Buffer.concat([Buffer.from(`chronolog-code-cache 1\n${"0".repeat(64)}\n`), text.subarray(88)]),
        );
    }
    expect(run(dir, cache, ["why", "p/a/down"])).toEqual(expected);
    // Written anew, as they were.
    for (const f of written) expect(readFileSync(join(cache, f)).length).toBeGreaterThan(200);
    expect(run(dir, cache, ["why", "p/a/down"])).toEqual(expected);
  });

  it("keeps a cache per set of Node's flags, and at most 128 files, the oldest going first", () => {
    const parent = tempDataDir("code-cache-dir");
    left.dirs.push(parent);
    const cache = join(parent, "cache");
    expect(run(dir, cache, ["why", "p/a/down"])).toEqual(expected);
    const plain = files(cache);
    const times = plain.map((f) => statSync(join(cache, f)).mtimeMs);
    expect(run(dir, cache, ["why", "p/a/down"], ["--max-semi-space-size=32"])).toEqual(expected);
    expect(files(cache).length).toBe(2 * plain.length);
    // The other flags' files are left as they were.
    expect(plain.map((f) => statSync(join(cache, f)).mtimeMs)).toEqual(times);
    // Old files of earlier builds: the oldest go.
    const old = Array.from({ length: 200 }, (_, i) => `${String(i).padStart(32, "0")}.bin`);
    for (const [i, f] of old.entries()) {
      writeFileSync(join(cache, f), "old");
      utimesSync(join(cache, f), 1_000_000 + i, 1_000_000 + i);
    }
    expect(run(dir, cache, ["why", "p/a/down"], ["--stack-size=2000"])).toEqual(expected);
    const kept = files(cache);
    expect(kept.length).toBe(128);
    expect(kept).toEqual(expect.arrayContaining(plain));
    expect(kept).not.toContain(old[0]);
    expect(kept).toContain(old[199]);
  });

  it("runs the command when the cache's directory cannot be made or is not the user's alone", () => {
    const blocked = join(dir, "tasks.yaml", "cache");
    expect(run(dir, blocked, ["why", "p/a/down"])).toEqual(expected);
    const open = tempDataDir("code-cache-open");
    left.dirs.push(open);
    spawnSync("chmod", ["0777", open]);
    expect(run(dir, open, ["why", "p/a/down"])).toEqual(expected);
    expect(files(open)).toEqual([]);
  });

  it("writes nothing when turned off", () => {
    const home = tempDataDir("code-cache-home");
    left.dirs.push(home);
    const env = cliEnv({ CHRONOLOG_CODE_CACHE: "off", XDG_CACHE_HOME: home, HOME: home });
    const r = spawnSync(process.execPath, [CLI, "--data-dir", dir, "why", "p/a/down"], {
      encoding: "utf8",
      env,
    });
    expect(r.stdout).toBe(expected.stdout);
    expect(readdirSync(home)).toEqual([]);
  });
});

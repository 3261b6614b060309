import { spawn, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, chronolog, chronologSpawn, cliEnv, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/** The CLI accepts what it prints, says where a read stopped, and exits with one table of codes. */
const left = new Leftovers();
afterAll(() => left.clear());

function declared(): string {
  const dir = tempDataDir("args");
  left.dirs.push(dir);
  const file = join(dir, "etl.yaml");
  writeFileSync(
    file,
    `workflows:
  - name: etl
    project: p
    account: a
    cron: "0 0 * * *"
    startDate: "2026-11-01T00:00:00Z"
    # Standing at its latest day, not at November's first: a backfill of November runs again
    # what it has passed (one further on than where a task stands is refused).
    catchup: false
    tasks:
      - { name: extract, idempotent: true, operator: { type: noop } }
      - { name: load, parents: [extract], idempotent: true, operator: { type: noop } }
`,
  );
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
  return dir;
}

/** A data directory of its own, and `chronolog declare` of `text` (as t.yaml) in it. */
function declareIn(label: string, text: string): { dir: string; r: ReturnType<typeof chronolog> } {
  const dir = tempDataDir(label);
  left.dirs.push(dir);
  const file = join(dir, "t.yaml");
  writeFileSync(file, text);
  return { dir, r: chronolog(dir, ["declare", file]) };
}

describe("the CLI's arguments and exit codes", () => {
  it("--version prints the version; --help lists the exit codes", () => {
    const dir = tempDataDir("args-v");
    left.dirs.push(dir);
    const v = chronolog(dir, ["--version"]);
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const h = chronolog(dir, ["--help"]);
    expect(h.code).toBe(0);
    expect(h.stdout).toContain("Exit codes (every command):");
    expect(h.stdout).toContain("4  what was named does not exist");
    expect(chronolog(dir, ["tasks", "--help"]).code).toBe(0);
    // A usage error is invalid input (2), its message and the command's help printed.
    for (const args of [["declare"], ["tasks", "--bogus"], ["nosuch"], ["why", "a", "b"]]) {
      const r = chronolog(dir, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(/^error: /);
    }
  });

  it("runs from any directory of the checkout, never reaching for a package of that name elsewhere", () => {
    const sub = fileURLToPath(new URL("../../packages/core", import.meta.url));
    const r = spawnSync("npx", ["--no-install", "chronolog", "--version"], {
      cwd: sub,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("takes run ids and instants in the short form the tables print, and dates", () => {
    const dir = declared();
    const t = chronolog(dir, ["trigger", "etl", "--logical-date", "2026-11-30"]);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toContain("started run etl@2026-11-30T00:00:00.000Z");
    for (const id of ["etl@2026-11-30T00:00Z", "etl@2026-11-30", "etl@2026-11-30T00:00:00.000Z"]) {
      const r = chronolog(dir, ["run", id]);
      expect(r.code, `${id}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain("run etl@2026-11-30T00:00:00.000Z: running, 1 try");
    }
    // (On a log of its own: beside the run just triggered, still pending, a backfill of a range
    // apart from it is refused.)
    const b = chronolog(declared(), [
      "backfill",
      "p/a/extract",
      "--from",
      "2026-11-02",
      "--to",
      "2026-11-03T00:00Z",
      "--detach",
    ]);
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toContain("reset p/a/extract/ALL: 2 intervals 2026-11-02T00:00Z .. 2026-11-03T00:00Z");
  });

  it("refuses an instant it cannot read, naming the flag, and writes nothing", () => {
    const dir = declared();
    const head = chronolog(dir, ["log", "read", "--json", "-n", "100000"]).stdout;
    const r = chronolog(dir, [
      "backfill",
      "p/a/extract",
      "--from",
      "yesterday",
      "--to",
      "2026-11-03",
      "--detach",
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--from: "yesterday" is not an instant or a day');
    const bad = chronolog(dir, ["run", "etl"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"etl" is not a run id');
    expect(chronolog(dir, ["log", "read", "--json", "-n", "100000"]).stdout).toBe(head);
  });

  it("not found exits 4 in every command; a refusal for the task's state exits 8", () => {
    const dir = declared();
    const runs = chronolog(dir, ["runs", "nope"]);
    expect(runs.code).toBe(4);
    expect(runs.stderr).toContain("no workflow nope is declared");
    expect(chronolog(dir, ["trigger", "nope"]).code).toBe(4);
    expect(chronolog(dir, ["run", "nope@2026-11-30"]).code).toBe(4);
    expect(chronolog(dir, ["pause", "p/a/nope"]).code).toBe(4);
    expect(chronolog(dir, ["pause", "p/a/extract"]).code).toBe(0);
    const again = chronolog(dir, ["pause", "p/a/extract"]);
    expect(again.code).toBe(8);
    expect(again.stderr).toContain(
      "state: task p/a/extract/ALL is paused, not active: it is paused already (chronolog resume p/a/extract/ALL resumes it)",
    );
  });

  it("log read says where it stopped at its limit", () => {
    const dir = declared();
    const r = chronolog(dir, ["log", "read", "-n", "2"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(2);
    const shown = chronolog(dir, ["log", "read", "-n", "2", "--json"]).stdout.trim().split("\n");
    const position = Number((JSON.parse(shown.at(-1) as string) as { position: string }).position);
    expect(r.stderr).toMatch(
      new RegExp(
        `^2 events shown, up to position ${position}; the log's head is at \\d+: --limit N to see more, or --from ${position + 1} for the next ones\n$`,
      ),
    );
    const all = chronolog(dir, ["log", "read", "-n", "1000"]);
    expect(all.stderr).toBe("");
  });
});

describe("declaration errors a person can act on", () => {
  it("an unknown field suggests the known one it resembles", () => {
    const { r } = declareIn(
      "args-field",
      `tasks:\n  - { project: p, account: a, name: t, cron: "0 0 * * *", startDate: "2026-11-01T00:00:00Z", operator: { type: shell, command: "true", timeoutMS: 5 } }\n`,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown field "timeoutMS" (did you mean "timeoutMs"?)');
  });

  it("an unquoted cron says to quote it", () => {
    const { r } = declareIn(
      "args-cron",
      "tasks:\n  - project: p\n    account: a\n    name: t\n    cron: * * * * *\n    startDate: 2026-11-01T00:00:00Z\n    operator: { type: noop }\n",
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('a value starting with * must be quoted, e.g. cron: "* * * * *"');
    expect(r.stderr).toContain("line 5");
  });

  it("a directory or an empty file is a clear error, exit 2, nothing written", () => {
    const dir = tempDataDir("args-empty");
    left.dirs.push(dir);
    const d = chronolog(dir, ["declare", dir]);
    expect(d.code).toBe(2);
    expect(d.stderr).toContain(`${dir} is a directory: name the declaration files in it`);
    const empty = join(dir, "empty.yaml");
    writeFileSync(empty, "");
    const e = chronolog(dir, ["declare", empty]);
    expect(e.code).toBe(2);
    expect(e.stderr).toContain("the file is empty: it declares nothing");
    const missing = chronolog(dir, ["declare", join(dir, "nope.yaml")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("nope.yaml: no such file");
  });
});

describe("backfill guards", () => {
  /** `chronolog backfill p/a/extract --from FROM --to TO` and `more`, on `dir`. */
  const backfillExtract = (dir: string, from: string, to: string, ...more: string[]) =>
    chronolog(dir, ["backfill", "p/a/extract", "--from", from, "--to", to, ...more]);

  it("refuses a range before the task's startDate, or a paused task, unless --force", () => {
    const dir = declared();
    const early = backfillExtract(dir, "2026-10-01", "2026-11-02", "--detach");
    expect(early.code).toBe(2);
    expect(early.stderr).toContain("is before p/a/extract/ALL's startDate 2026-11-01T00:00:00.000Z");
    expect(early.stderr).toContain("use --force");
    const forced = backfillExtract(dir, "2026-10-31", "2026-11-02", "--detach", "--force");
    expect(forced.code, forced.stderr).toBe(0);
    expect(chronolog(dir, ["pause", "p/a/load"]).code).toBe(0);
    const paused = backfillExtract(dir, "2026-11-02", "2026-11-03", "--downstream", "--detach");
    expect(paused.code).toBe(8);
    expect(paused.stderr).toContain("p/a/load/ALL is paused: a backfill would wait for the resume");
  });

  it("says what it waits for when nothing moves", () => {
    const dir = declared();
    // No scheduler runs: the backfill cannot move, and says why before its timeout.
    const r = backfillExtract(dir, "2026-11-02", "2026-11-03", "--timeout", "5");
    expect(r.code).toBe(7);
    expect(r.stdout).toMatch(
      /waiting: p\/a\/extract\/ALL ready: 2026-11-02T00:00Z is due and its parents are done/,
    );
  });

  it("refuses a --timeout that is not a number of seconds, before writing anything", () => {
    const dir = declared();
    for (const bad of ["abc", "0", "-5", "5s"]) {
      const r = backfillExtract(dir, "2026-11-02", "2026-11-03", "--timeout", bad);
      expect(r.code, bad).toBe(2);
      expect(r.stderr).toContain(
        `--timeout: takes a number of seconds more than 0, such as 30 or 2.5, not "${bad}"`,
      );
    }
    // Nothing was set back: the task still stands where it did.
    expect(chronolog(dir, ["history", "p/a/extract"]).stdout).not.toContain("IntervalReset");
  });
});

describe("output whose reader goes away (chronolog tasks | head)", () => {
  /** Runs the CLI with its output's reader closed before it writes; its exit code and stderr. */
  function readerGone(dir: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [CLI, "--data-dir", dir, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: cliEnv(),
    });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    return new Promise((resolve) => child.once("close", (code) => resolve({ code, stderr })));
  }

  it("ends the command quietly, with 141 as SIGPIPE would, and what it wrote stands whole", async () => {
    const dir = tempDataDir("epipe");
    left.dirs.push(dir);
    const file = join(dir, "many.yaml");
    const task = (i: number) =>
      `  - { project: p, account: a, name: t${i}, cron: "0 2 * * *", startDate: "2026-11-01T00:00:00Z", operator: { type: noop } }`;
    writeFileSync(file, `tasks:\n${Array.from({ length: 2000 }, (_, i) => task(i)).join("\n")}\n`);
    for (const args of [["--help"], ["declare", file], ["tasks"]]) {
      const r = await readerGone(dir, args);
      expect(r, args.join(" ")).toEqual({ code: 141, stderr: "" });
    }
    expect(chronolog(dir, ["tasks", "--json"]).stdout).toContain('"p/a/t1999/ALL"');
  });
});

describe("a terminal's control characters in what the CLI prints", () => {
  it("are shown escaped: in a refused name, and in a failed task's stderr that why quotes", async () => {
    const { dir, r: refused } = declareIn(
      "controls",
      'tasks:\n  - { project: p, account: a, name: "x\\e[31mred\\u0007", cron: "0 2 * * *", startDate: "2026-11-01T00:00:00Z", operator: { type: noop } }\n',
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("p/a/x\\u001b[31mred\\u0007/ALL");
    expect(refused.stderr.includes("\u001b") || refused.stderr.includes("\u0007")).toBe(false);

    // A task's own stderr, quoted by why: the title, the screen's clearing and the bell escaped.
    const hour = 3_600_000;
    const start = new Date(Math.floor(Date.now() / hour) * hour - hour).toISOString();
    const end = new Date(Date.parse(start) + hour / 2).toISOString();
    const file = join(dir, "t.yaml");
    writeFileSync(
      file,
      `tasks:\n  - { project: p, account: a, name: loud, cron: "0 * * * *", startDate: "${start}", endDate: "${end}", retry: { maxAttempts: 1 }, operator: { type: shell, command: "printf '\\\\033]0;pwned\\\\007\\\\033[2Jboom\\\\n' >&2; exit 3" } }\n`,
    );
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    const why = await waitUntil("the task to fail", () => {
      const r = chronolog(dir, ["why", "p/a/loud"]);
      return r.stdout.includes(": failed") ? r.stdout : undefined;
    });
    expect(why).toContain("\\u001b]0;pwned\\u0007\\u001b[2Jboom");
    expect(why.includes("\u001b") || why.includes("\u0007")).toBe(false);
    // attempts --output quotes its tails among the CLI's lines: escaped too.
    const output = chronolog(dir, ["attempts", "p/a/loud", "--output"]).stdout;
    expect(output).toContain("\\u001b]0;pwned\\u0007\\u001b[2Jboom");
    expect(output.includes("\u001b") || output.includes("\u0007")).toBe(false);
    // JSON carries the text as it was, escaped as JSON escapes it.
    expect(
      JSON.stringify(JSON.parse(chronolog(dir, ["why", "p/a/loud", "--json"]).stdout).reasons),
    ).toContain("\\u001b]0;pwned\\u0007\\u001b[2Jboom");
  }, 60_000);
});

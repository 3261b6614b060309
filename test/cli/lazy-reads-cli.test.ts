import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";

const left = new Leftovers();
afterAll(() => left.clear());

/** A catalogue of `n` tasks in 5 projects, each after 0 to 2 tasks of other projects before it. */
function catalogue(n: number, extra: string[] = []): string {
  const lines = ["tasks:"];
  let seed = 11;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const project: number[] = [];
  for (let i = 0; i < n; i++) {
    project[i] = Math.floor(rnd() * 5);
    const parents = new Set<string>();
    for (let k = Math.floor(rnd() * 3), tries = 0; parents.size < k && i > 0 && tries < 10; tries++) {
      const j = Math.floor(rnd() * i);
      if (project[j] !== project[i]) parents.add(`r${project[j]}/acme/u${j}`);
    }
    const weight = i % 11 === 2 ? ", priority: 3, priorityRule: downstream" : "";
    lines.push(
      `  - { project: r${project[i]}, account: acme, name: u${i}, cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", operator: { type: noop }, parents: [${[...parents].join(", ")}]${weight} }`,
    );
  }
  return `${[...lines, ...extra].join("\n")}\n`;
}

/**
 * `why`, `task` and `tasks --limit` at the head read only the tasks they answer about from the
 * checkpoint's index; what they print is what the whole projection gives: the same commands on
 * the same log with no checkpoint (folded from the start), and with a checkpoint of the layout
 * before the index (read whole).
 */
describe("reads of a few tasks from the checkpoint", () => {
  it("print what the whole projection gives, with events after the checkpoint and from an old checkpoint", () => {
    const dir = tempDataDir("lazy-reads");
    left.dirs.push(dir);
    const file = join(dir, "tasks.yaml");
    writeFileSync(file, catalogue(150));
    const keyOf = (name: string) =>
      `${
        /project: (r\d), account: acme, name: ([^,]+)/.exec(
          catalogue(150)
            .split("\n")
            .find((l) => l.includes(` name: ${name},`)) ?? "",
        )?.[1] ?? "r1"
      }/acme/${name}`;
    expect(chronolog(dir, ["declare", file]).code).toBe(0);
    expect(chronolog(dir, ["rebuild"]).code).toBe(0);
    // Events after the checkpoint: a task paused, one retired, new tasks (a child of one
    // checkpointed, one in the middle of the key order).
    expect(chronolog(dir, ["pause", keyOf("u3"), "--reason", "held"]).code).toBe(0);
    expect(chronolog(dir, ["retire", keyOf("u7")]).code).toBe(0);
    const more = catalogue(150, [
      `  - { project: r2, account: acme, name: u1000, cron: "0 * * * *", startDate: "2026-01-01T00:00:00Z", operator: { type: noop }, parents: [${keyOf("u3")}] }`,
    ]).replace(/\n {2}- \{ project: r\d, account: acme, name: u7, [^\n]*/, "");
    writeFileSync(file, more);
    expect(chronolog(dir, ["declare", file]).code).toBe(0);

    const ids = [
      ...Array.from({ length: 150 }, (_, i) => i)
        .filter((i) => i % 25 === 3)
        .map((i) => `u${i}`),
      "u1000",
      "u7",
    ].map((name) => (name === "u1000" ? "r2/acme/u1000" : keyOf(name)));
    const reads = (): string[] => {
      const out: string[] = [];
      const run = (args: string[]) => {
        const r = chronolog(dir, args);
        out.push(`${args.join(" ")} -> ${r.code}\n${r.stdout}${r.stderr}`);
      };
      for (const id of ids) {
        run(["why", id, "--json"]);
        run(["task", id]);
      }
      run(["why", "r4/acme/nothing"]);
      run(["task", "r4/acme/nothing"]);
      for (const after of [[], ["--after", "r2/acme/u1"], ["--after", "r4/acme/u99"]]) {
        run(["tasks", "--limit", "9", "--json", ...after]);
      }
      return out;
    };
    const checkpoint = join(dir, "projection.snapshot.json");
    const lazy = reads();
    expect(lazy.join("")).toContain("r2/acme/u1000/ALL");

    // A checkpoint as the version before wrote it, with no index: read whole.
    const text = readFileSync(checkpoint, "utf8");
    const lines = text.split("\n");
    const header = JSON.parse(lines[0] as string);
    const older = [
      JSON.stringify({ ...header, lines: "lines/3" }),
      ...lines.slice(1, lines.indexOf('"index"')),
    ];
    writeFileSync(checkpoint, `${older.join("\n")}\n`);
    const old = reads();

    // No checkpoint at all: the whole log folded.
    renameSync(checkpoint, `${checkpoint}.aside`);
    rmSync(join(dir, "snapshots"), { recursive: true, force: true });
    expect(existsSync(checkpoint)).toBe(false);
    const folded = reads();
    for (const [i, answer] of folded.entries()) {
      expect(lazy[i], answer.split("\n")[0]).toBe(answer);
      expect(old[i], answer.split("\n")[0]).toBe(answer);
    }
  }, 240_000);
});

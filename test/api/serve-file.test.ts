import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { exportLine, hashStored, parseExportLine, type StoredEvent } from "@chronolog/log";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATEST_HOUR, startUp, stopUp, tasksJson } from "../faults/support.js";
import { chronolog as cli, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { api, createToken, Leftovers, startApi } from "./support.js";

/**
 * `serve --file EXPORT` serves what the export holds only once its hash chain checks out, and
 * an attempt's output only from its own data directory's output/: an export that records a
 * path elsewhere, however well chained, gets that file refused.
 */
const left = new Leftovers();
const OUTSIDE = "a file outside the data directory: never served";
let dir: string;
let parent: string;
let reader: string;
let attemptToken: string;
let recordedPath: string;
let exported: string;

/** The export's events, with `edit` applied to each and the chain hashed again from the first change. */
function rechained(text: string, edit: (e: StoredEvent) => StoredEvent): string {
  let prev: string | null = null;
  let out = "";
  text
    .split("\n")
    .filter((l) => l !== "")
    .forEach((l, i) => {
      const e = edit(parseExportLine(l, i + 1));
      const prevHash = prev ?? e.metadata.prevHash;
      const hash = hashStored(prevHash, e);
      const again = { ...e, metadata: { ...e.metadata, prevHash, hash } };
      prev = hash;
      out += exportLine(again);
    });
  return out;
}

beforeAll(async () => {
  parent = tempDataDir("serve-file");
  left.dirs.push(parent);
  dir = join(parent, "data");
  const end = new Date(Date.parse(LATEST_HOUR) + 1_800_000).toISOString();
  const file = join(parent, "t.yaml");
  writeFileSync(
    file,
    `tasks:\n  - { project: p, account: a, name: t, cron: "0 * * * *", startDate: "${LATEST_HOUR}", endDate: "${end}", idempotent: true, operator: { type: shell, command: "echo inside the data directory" } }\n`,
  );
  expect(cli(dir, ["declare", file]).code).toBe(0);
  left.dirs.push(`${dir}-tasks`);
  const up = startUp(dir);
  left.processes.push(up.proc);
  await waitUntil("the attempt to succeed", () =>
    tasksJson(dir).every((t) => t.prevIntervalStart === LATEST_HOUR) ? true : undefined,
  );
  await stopUp(up);
  const [row] = JSON.parse(cli(dir, ["attempts", "p/a/t", "--json"]).stdout) as Array<{
    token: string;
    outputFile: { path: string };
  }>;
  attemptToken = row?.token as string;
  recordedPath = row?.outputFile.path as string;
  reader = createToken(dir, "reader", "read");
  exported = cli(dir, ["log", "export"]).stdout;
}, 120_000);
afterAll(() => left.clear());

describe("serve --file", () => {
  it("serves an attempt's output from its data directory, from a verified export", async () => {
    const good = join(parent, "good.jsonl");
    writeFileSync(good, exported);
    const s = await startApi(left, dir, ["--file", good, "serve"]);
    const r = await api(s.url, `/attempts/${attemptToken}/output`, { token: reader });
    expect(r.status).toBe(200);
    expect(r.text).toBe("inside the data directory\n");
  });

  it("refuses an output path outside the data directory, even in a well-chained export", async () => {
    const outside = join(parent, "outside.txt");
    writeFileSync(outside, OUTSIDE);
    const crafted = join(parent, "crafted.jsonl");
    writeFileSync(
      crafted,
      rechained(exported, (e) => ({ ...e, dataJson: e.dataJson.replaceAll(recordedPath, outside) })),
    );
    expect(cli(dir, ["--file", crafted, "log", "verify"]).code).toBe(0);
    const s = await startApi(left, dir, ["--file", crafted, "serve"]);
    const r = await api(s.url, `/attempts/${attemptToken}/output`, { token: reader });
    expect(r.status).toBe(403);
    expect(r.text).toContain(`its recorded output file ${outside} is outside this data directory's output/`);
    expect(r.text).not.toContain(OUTSIDE);
    // `chronolog logs` reads no such file either.
    const logs = cli(dir, ["--file", crafted, "logs", "p/a/t"]);
    expect(logs.stdout).not.toContain(OUTSIDE);
    expect(logs.stderr).toContain("is outside this data directory's output/");
  });

  it("refuses a tampered export at start, naming the first bad position", () => {
    const lines = exported.split("\n");
    const at = lines.findIndex((l) => l.includes('"type":"TaskDeclared"'));
    const e = parseExportLine(lines[at] as string, at + 1);
    lines[at] = exportLine({ ...e, dataJson: e.dataJson.replace('"p"', '"q"') }).trimEnd();
    const tampered = join(parent, "tampered.jsonl");
    writeFileSync(tampered, lines.join("\n"));
    const r = cli(dir, ["--file", tampered, "serve", "--http", "127.0.0.1:0"]);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain(
      `--file ${tampered}: not served: its hash chain is broken at line ${at + 1}, position ${e.position}: the event's content does not match its hash`,
    );
  });
});

import { once } from "node:events";
import { afterAll, describe, expect, it } from "vitest";
import { chronologSpawn } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { chronolog, client, createToken, dataDir, headOf, Leftovers, startApi } from "./support.js";

const HOUR = 3_600_000;
const left = new Leftovers();
afterAll(() => left.clear());

/** One hourly interval, ended: the one a trigger without a logical date starts. */
const start = new Date(Math.floor(Date.now() / HOUR) * HOUR - HOUR).toISOString();
const end = new Date(Date.parse(start) + HOUR / 2).toISOString();

const workflow = (command: string) => ({
  workflows: [
    {
      name: "notes",
      project: "p",
      account: "a",
      cron: "0 * * * *",
      startDate: start,
      endDate: end,
      params: { note: "none" },
      tasks: [
        { name: "say", idempotent: true, operator: { type: "shell", command } },
        // Started by its parent's success commit, not by the pass: the variables come along too.
        {
          name: "after",
          parents: ["say"],
          idempotent: true,
          operator: { type: "shell", command: 'echo "after: $CHRONOLOG_PARAM_NOTE"' },
        },
      ],
    },
  ],
});

/**
 * A param given through the HTTP API never runs as code: a command that quotes its placeholder
 * is refused at `POST /declarations`, and one that reads the param from the environment prints
 * it literally, inside double quotes, a here-document and `sh -c` alike.
 */
describe("params from the HTTP API reach a shell task as data", () => {
  it("refuses the quoted placeholder, then runs $(id) as the literal text it is", async () => {
    const dir = dataDir(left, "quoting");
    const declarer = createToken(dir, "ci", "declare", ["p"]);
    const operator = createToken(dir, "op", "operate", ["p"]);
    const server = await startApi(left, dir, ["serve", "--writable"]);
    const call = client(server);

    const command = [
      'echo "dq: $CHRONOLOG_PARAM_NOTE"',
      "cat <<EOF",
      "doc: $CHRONOLOG_PARAM_NOTE",
      "EOF",
      "sh -c 'echo \"sh: $CHRONOLOG_PARAM_NOTE\"'",
      "echo plain: {{ params.note }}",
      'echo "run: $CHRONOLOG_RUN_ID $CHRONOLOG_DS $CHRONOLOG_TASK_NAME"',
    ].join("\n");
    const declared = await call("/declarations", { token: declarer, body: workflow(command) });
    expect(declared.status, declared.text).toBe(200);

    const head = await headOf(server, declarer);
    const refused = await call("/declarations", {
      token: declarer,
      body: workflow('echo "dq: {{ params.note }}"'),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.issues).toEqual([
      {
        path: "<request>: workflows[0].tasks[0].operator.command",
        message:
          'p/a/say/ALL: {{ params.note }} stands inside double quotes, where its value would not be one quoted word and could run as shell code; use "$CHRONOLOG_PARAM_NOTE" instead (the same value, from the environment) (line 1, column 11)',
      },
    ]);
    expect(await headOf(server, declarer)).toBe(head);

    const triggered = await call("/workflows/notes/runs", {
      token: operator,
      body: { params: { note: "$(id)" } },
    });
    expect(triggered.status, triggered.text).toBe(200);
    server.child.kill("SIGTERM");
    await once(server.child, "exit");

    const up = chronologSpawn(dir, ["up", "--workers", "1"]);
    left.processes.push(up);
    const attempt = await waitUntil("the task to finish", () => {
      const rows = JSON.parse(chronolog(dir, ["attempts", "p/a/say/ALL", "--json"]).stdout || "[]") as Array<{
        status: string;
        stdoutTail?: string;
      }>;
      const last = rows.at(-1);
      return last && last.status !== "running" && last.status !== "queued" ? last : undefined;
    });
    expect(attempt.status).toBe("success");
    expect(attempt.stdoutTail).toBe(
      [
        "dq: $(id)",
        "doc: $(id)",
        "sh: $(id)",
        "plain: $(id)",
        `run: notes@${start} ${start.slice(0, 10)} say`,
        "",
      ].join("\n"),
    );
    expect(attempt.stdoutTail).not.toContain("uid=");
    const after = await waitUntil("the child to finish", () => {
      const rows = JSON.parse(
        chronolog(dir, ["attempts", "p/a/after/ALL", "--json"]).stdout || "[]",
      ) as Array<{
        status: string;
        stdoutTail?: string;
      }>;
      const last = rows.at(-1);
      return last && last.status !== "running" && last.status !== "queued" ? last : undefined;
    });
    expect(after).toMatchObject({ status: "success", stdoutTail: "after: $(id)\n" });
  }, 90_000);
});

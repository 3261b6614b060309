import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { lastSlotEndingBy } from "@chronolog/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startUp, stopUp, type Up } from "../faults/support.js";
import { chronolog, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";

/**
 * The ten-job graph (three fetches, three parses, a join, an index, a report and a notify, with a
 * 0.50 s critical path) as one workflow of shell tasks, run for one logical date by real worker
 * processes: start when ready, failure policies, reruns of what failed, critical path.
 */
const GRAPH: Record<string, { sleep: number; parents: string[] }> = {
  fetch_a: { sleep: 0.3, parents: [] },
  fetch_b: { sleep: 0.05, parents: [] },
  fetch_c: { sleep: 0.1, parents: [] },
  parse_a: { sleep: 0.05, parents: ["fetch_a"] },
  parse_b: { sleep: 0.3, parents: ["fetch_b"] },
  parse_c: { sleep: 0.05, parents: ["fetch_c"] },
  join_ab: { sleep: 0.1, parents: ["parse_a", "parse_b"] },
  index_c: { sleep: 0.2, parents: ["parse_c"] },
  report: { sleep: 0.05, parents: ["join_ab", "index_c"] },
  notify: { sleep: 0.3, parents: ["parse_c"] },
};

const DAY = 86_400_000;
// A daily slot hour twelve hours away from now, and the latest interval of that schedule that
// has ended (the one a task with catch-up off jumps to): with the slot hour far from now, no run
// crosses the slot's boundary (a fixed 02:00 moved the latest interval under runs made between
// 02:00 and 03:00 UTC).
const SLOT_HOUR = (new Date().getUTCHours() + 12) % 24;
const LATEST_DAY = lastSlotEndingBy(`0 ${SLOT_HOUR} * * *`, "UTC", new Date()).toISOString();

function graphYaml(
  dir: string,
  policy: "skip_dependents" | "fail_fast",
  maxActiveTasks = 16,
  sleeps: Record<string, number> = {},
): string {
  const tasks = Object.entries(GRAPH).map(([name, { sleep: graphSleep, parents }]) => {
    const sleep = sleeps[name] ?? graphSleep;
    const fail = name === "parse_b" ? `[ -f ${join(dir, "fail_parse_b")} ] && exit 3; ` : "";
    const command = `sleep ${sleep}; ${fail}echo ${name} >> ${join(dir, "ran")}`;
    const cache = name === "fetch_a" ? `, cacheKey: "fetch_a-{{ ds }}"` : "";
    return `      - { name: ${name}, parents: [${parents.join(", ")}], operator: { type: shell, command: ${JSON.stringify(command)} }${cache} }`;
  });
  return workflowYaml("graph", tasks, { failurePolicy: policy, maxActiveTasks });
}

/** A daily workflow of the given task lines, due for LATEST_DAY, with catch-up off. */
function workflowYaml(name: string, tasks: string[], settings: Record<string, string | number>): string {
  const extra = Object.entries(settings).map(([k, v]) => `    ${k}: ${v}\n`);
  return `workflows:
  - name: ${name}
    project: demo
    account: acme
    cron: "0 ${SLOT_HOUR} * * *"
    startDate: "${new Date(Date.parse(LATEST_DAY) - 10 * DAY).toISOString()}"
    catchup: false
    idempotent: true
${extra.join("")}    tasks:
${tasks.join("\n")}
`;
}

const RUN = `graph@${LATEST_DAY}`;
const id = (name: string) => `demo/acme/${name}/ALL`;

let dir: string;
let up: Up | null = null;
beforeEach(() => {
  dir = tempDataDir("graph");
});
afterEach(async () => {
  if (up) await stopUp(up);
  up = null;
  rmSync(dir, { recursive: true, force: true });
});

function declareGraph(policy: "skip_dependents" | "fail_fast", sleeps: Record<string, number> = {}): void {
  const file = join(dir, "graph.yaml");
  writeFileSync(file, graphYaml(dir, policy, 16, sleeps));
  const r = chronolog(dir, ["declare", file]);
  expect(r.code, r.stderr).toBe(0);
}

interface RunJson {
  run: { status: string; outcomes: Record<string, string> };
  instances: Array<{
    task: string;
    instance?: {
      status: string;
      attempts: Array<{
        status: string;
        endReason: string | null;
        intendedAt: string;
        endedAt: string | null;
      }>;
    };
  }>;
}

async function finishedRun(run = RUN): Promise<RunJson> {
  return waitUntil(
    `run ${run} to finish`,
    () => {
      const r = chronolog(dir, ["run", run, "--json"]);
      if (r.code !== 0) return undefined;
      const view = JSON.parse(r.stdout) as RunJson;
      return view.run.status === "running" ? undefined : view;
    },
    60_000,
    150,
  );
}

const ran = () =>
  existsSync(join(dir, "ran")) ? readFileSync(join(dir, "ran"), "utf8").trim().split("\n") : [];
const byStatus = (view: RunJson, status: string) =>
  Object.entries(view.run.outcomes)
    .filter(([, s]) => s === status)
    .map(([t]) => t)
    .sort();

describe("the ten-job graph as a workflow", () => {
  it("skip_dependents: only the failed task's descendants are upstream_failed; a rerun of what failed runs exactly those", async () => {
    writeFileSync(join(dir, "fail_parse_b"), "");
    declareGraph("skip_dependents");
    up = startUp(dir);
    const view = await finishedRun();
    expect(view.run.status).toBe("failed");
    expect(byStatus(view, "failed")).toEqual([id("parse_b")]);
    expect(byStatus(view, "upstream_failed")).toEqual([id("join_ab"), id("report")]);
    expect(byStatus(view, "success")).toEqual(
      ["fetch_a", "fetch_b", "fetch_c", "index_c", "notify", "parse_a", "parse_c"].map(id).sort(),
    );
    expect(ran().sort()).toEqual([
      "fetch_a",
      "fetch_b",
      "fetch_c",
      "index_c",
      "notify",
      "parse_a",
      "parse_c",
    ]);

    // Fix parse_b, rerun what failed: exactly parse_b, join_ab and report run again.
    rmSync(join(dir, "fail_parse_b"));
    const before = ran().length;
    const r = chronolog(dir, ["rerun", RUN, "--failed"]);
    expect(r.code, r.stderr).toBe(0);
    const again = await finishedRun();
    expect(again.run.status).toBe("success");
    expect(ran().slice(before)).toEqual(["parse_b", "join_ab", "report"]);
  }, 120_000);

  it("fail_fast: the first failure cancels the running attempts, recorded, and nothing new starts", async () => {
    writeFileSync(join(dir, "fail_parse_b"), "");
    // notify (unrelated to parse_b) runs 3 s instead of 0.3 s here, so that it is certainly
    // still running when parse_b fails, however slow the machine.
    declareGraph("fail_fast", { notify: 3 });
    up = startUp(dir);
    const view = await finishedRun();
    expect(view.run.status).toBe("failed");
    expect(byStatus(view, "failed")).toEqual([id("parse_b")]);
    const cancelled = byStatus(view, "cancelled");
    expect(cancelled).toContain(id("notify"));
    expect(ran()).not.toContain("notify");
    // Every cancelled task that had an attempt has it recorded as cancelled, with why.
    for (const t of cancelled) {
      const inst = view.instances.find((i) => i.task === t)?.instance;
      const attempt = inst?.attempts.at(-1);
      if (attempt) expect(attempt.status).toBe("cancelled");
    }
    // join_ab and report never started.
    expect(ran()).not.toContain("join_ab");
    expect(ran()).not.toContain("report");
    // Nothing started after the failure: every task is terminal and none is still running.
    expect(
      Object.values(view.run.outcomes).every((s) => s !== "running" && s !== "queued"),
      JSON.stringify(view, null, 1),
    ).toBe(true);
  }, 120_000);

  it("runs each task the moment its own parents finish: wall time near the 0.50 s critical path", async () => {
    declareGraph("skip_dependents");
    up = startUp(dir);
    const view = await finishedRun();
    expect(view.run.status).toBe("success");
    // A task with one parent is dispatched in the very commit that records its parent's success:
    // its intent and its parent's end carry the same time of record.
    const last = (name: string) => view.instances.find((i) => i.task === id(name))?.instance?.attempts.at(-1);
    for (const [name, { parents }] of Object.entries(GRAPH)) {
      if (parents.length === 1)
        expect(last(name)?.intendedAt, name).toBe(last(parents[0] as string)?.endedAt);
    }
    const cp = chronolog(dir, ["run", RUN, "--critical-path", "--json"]);
    expect(cp.code, cp.stderr).toBe(0);
    const path = JSON.parse(cp.stdout) as { links: Array<{ task: string }>; pathMs: number; wallMs: number };
    // A chain of "last parent to finish" links from a first task to the task that finished last
    // (report on a quiet machine; notify, 0.05 s shorter, when the hops before report were slow).
    const chain = path.links.map((l) => l.task.split("/")[2] as string);
    expect(["report", "notify"]).toContain(chain.at(-1));
    expect(GRAPH[chain[0] as string]?.parents).toEqual([]);
    for (let i = 1; i < chain.length; i++) expect(GRAPH[chain[i] as string]?.parents).toContain(chain[i - 1]);
    // Its tasks took at least their sleeps; on a quiet machine it is fetch -> parse -> join_ab -> report, 0.50 s.
    const sleeps = chain.reduce((sum, t) => sum + (GRAPH[t]?.sleep ?? 0) * 1000, 0);
    expect(path.pathMs).toBeGreaterThanOrEqual(sleeps - 10);
    const text = chronolog(dir, ["run", RUN, "--critical-path"]).stdout;
    expect(text).toMatch(/path \d\.\d{3} s; try wall time \d\.\d{3} s; gap -?\d\.\d{3} s/);

    // A rerun of the whole run: fetch_a declares a cache key that matches its earlier success,
    // so it is recorded as a cache hit instead of running; everything else runs again.
    const before = ran().length;
    expect(chronolog(dir, ["rerun", RUN]).code).toBe(0);
    const again = await finishedRun();
    expect(again.run.status).toBe("success");
    expect(ran().slice(before).sort()).toEqual(
      Object.keys(GRAPH)
        .filter((n) => n !== "fetch_a")
        .sort(),
    );
    const fetchA = again.instances.find((i) => i.task === id("fetch_a"))?.instance?.attempts.at(-1) as
      | { cacheHit?: boolean }
      | undefined;
    expect(fetchA?.cacheHit).toBe(true);
  }, 120_000);

  it("runs at most maxActiveTasks at once from the run's start, and gives a free slot to the task that waited longest", async () => {
    // maxActiveTasks 1: the two roots are ready at once, and one of them waits. When the other
    // ends, its child becomes ready too: the slot goes to the root that has waited longer.
    const file = join(dir, "fifo.yaml");
    const task = (name: string, parents: string[]) =>
      `      - { name: ${name}, parents: [${parents.join(", ")}], operator: { type: shell, command: "sleep 0.05; echo ${name} >> ${join(dir, "ran")}" } }`;
    const tasks = [
      task("root_a", []),
      task("root_b", []),
      task("child_a", ["root_a"]),
      task("child_b", ["root_b"]),
    ];
    writeFileSync(file, workflowYaml("fifo", tasks, { maxActiveTasks: 1 }));
    const r = chronolog(dir, ["declare", file]);
    expect(r.code, r.stderr).toBe(0);
    up = startUp(dir);
    await waitUntil("the four tasks to run", () => (ran().length === 4 ? true : undefined), 60_000, 100);
    expect(ran().slice(0, 2).sort()).toEqual(["root_a", "root_b"]);
    // One attempt at a time, from its intent to its end, the run's start included.
    const view = JSON.parse(chronolog(dir, ["run", `fifo@${LATEST_DAY}`, "--json"]).stdout) as {
      instances: Array<{ instance?: { attempts: Array<{ intendedAt: string; endedAt: string }> } }>;
    };
    const spans = view.instances
      .flatMap((i) => i.instance?.attempts ?? [])
      .map((a) => [Date.parse(a.intendedAt), Date.parse(a.endedAt)] as const)
      .sort((a, b) => a[0] - b[0]);
    expect(spans).toHaveLength(4);
    for (let i = 1; i < spans.length; i++)
      expect(spans[i]?.[0]).toBeGreaterThanOrEqual(spans[i - 1]?.[1] ?? 0);
  }, 120_000);

  it("gives a run's free slots to the highest priority first, from the run's start", async () => {
    // maxActiveTasks 1 and three roots ready at once: one at a time, by priority.
    const file = join(dir, "ranked.yaml");
    const task = (name: string, priority: number) =>
      `      - { name: ${name}, priority: ${priority}, operator: { type: shell, command: "sleep 0.05; echo ${name} >> ${join(dir, "ran")}" } }`;
    const tasks = [task("r_low", -1), task("r_mid", 0), task("r_high", 5)];
    writeFileSync(file, workflowYaml("ranked", tasks, { maxActiveTasks: 1 }));
    const r = chronolog(dir, ["declare", file]);
    expect(r.code, r.stderr).toBe(0);
    up = startUp(dir);
    await waitUntil("the three tasks to run", () => (ran().length === 3 ? true : undefined), 60_000, 100);
    expect(ran()).toEqual(["r_high", "r_mid", "r_low"]);
  }, 120_000);

  it("starts a task's children with its success only while the run has slots for them", async () => {
    // maxActiveTasks 2 and three children of one root: two start in the commit of the root's
    // success, the third once one of them has ended.
    const file = join(dir, "fan.yaml");
    const task = (name: string, parents: string[], sleep: number) =>
      `      - { name: ${name}, parents: [${parents.join(", ")}], operator: { type: shell, command: "sleep ${sleep}" } }`;
    const tasks = [
      task("root", [], 0.05),
      task("child_1", ["root"], 0.2),
      task("child_2", ["root"], 0.2),
      task("child_3", ["root"], 0.2),
    ];
    writeFileSync(file, workflowYaml("fan", tasks, { maxActiveTasks: 2 }));
    const r = chronolog(dir, ["declare", file]);
    expect(r.code, r.stderr).toBe(0);
    up = startUp(dir);
    const view = await finishedRun(`fan@${LATEST_DAY}`);
    expect(view.run.status).toBe("success");
    const last = (name: string) => view.instances.find((i) => i.task === id(name))?.instance?.attempts.at(-1);
    const rootEnd = last("root")?.endedAt;
    const children = ["child_1", "child_2", "child_3"].map((n) => last(n));
    const withRoot = children.filter((a) => a?.intendedAt === rootEnd);
    expect(withRoot).toHaveLength(2);
    const third = children.find((a) => a?.intendedAt !== rootEnd);
    const firstEnd = Math.min(...withRoot.map((a) => Date.parse(a?.endedAt ?? "")));
    expect(Date.parse(third?.intendedAt ?? "")).toBeGreaterThanOrEqual(firstEnd);
  }, 120_000);

  it("a cycle among a workflow's tasks is refused at declaration, named in order", () => {
    const file = join(dir, "cycle.yaml");
    writeFileSync(
      file,
      graphYaml(dir, "skip_dependents").replace(
        "{ name: fetch_a, parents: []",
        "{ name: fetch_a, parents: [report]",
      ),
    );
    const r = chronolog(dir, ["declare", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/dependency cycle .*demo\/acme\/\w+\/ALL -> .* -> demo\/acme\/\w+\/ALL/);
    expect(chronolog(dir, ["tasks", "--json"]).stdout.trim()).toBe("[]");
  });
});

import { readFileSync, writeFileSync } from "node:fs";
import { explainTask, SchedulerProjection, shownPriority } from "@chronolog/core";
import {
  answerAtHead,
  catchUp,
  declare,
  loadProjection,
  pauseTask,
  type ReadView,
  renderProblem,
  retireTask,
  taskDeadline,
  taskPage,
} from "@chronolog/scheduler";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../../../../test/support/random.js";
import { dir, log, snapshotPath, useSnapshotFixture, writeInBlocks } from "./fixture.js";

/*
 * `why`, `task` and a page of `tasks` answered from the checkpoint's index (only the tasks they
 * look at decoded, then the events after the checkpoint applied to them) give what the whole
 * projection gives, for every task of a catalogue with parents across projects, with events
 * after the checkpoint, and fall back to the whole load where the index cannot answer.
 */
useSnapshotFixture();

const NOW = Date.parse("2026-11-30T05:10:00Z");
const N = 240;

/**
 * N tasks in 6 projects, each after 0 to 2 tasks of other projects declared before it; a few
 * weighted downstream, a few with a deadline; one whose parent is declared after it, one whose
 * parent is never declared.
 */
function catalogue(): Record<string, unknown>[] {
  const rnd = seededRandom(7);
  const project: number[] = [];
  const key = (i: number) => `q${project[i]}/acme/c${i}`;
  const tasks: Record<string, unknown>[] = [];
  for (let i = 0; i < N; i++) {
    project[i] = Math.floor(rnd() * 6);
    const parents = new Set<string>();
    const count = Math.floor(rnd() * 3);
    for (let tries = 0; parents.size < count && i > 0 && tries < 10; tries++) {
      const j = Math.floor(rnd() * i);
      if (project[j] !== project[i]) parents.add(key(j));
    }
    tasks.push({
      project: `q${project[i]}`,
      account: "acme",
      name: `c${i}`,
      cron: "0 * * * *",
      startDate: "2026-11-30T00:00:00Z",
      operator: { type: "noop" },
      parents: [...parents],
      ...(i % 17 === 3 ? { priority: 5, priorityRule: "downstream" } : i % 5 === 0 ? { priority: 1 } : {}),
      ...(i % 13 === 4 ? { deadline: { within: "30m" } } : {}),
    });
  }
  const base = {
    account: "acme",
    cron: "0 * * * *",
    startDate: "2026-11-30T00:00:00Z",
    operator: { type: "noop" },
  };
  // A child listed before its parent (its parent is named by id in the file), and one whose
  // parent is never declared.
  tasks.unshift({ ...base, project: "q9", name: "early", parents: ["q8/acme/later"] });
  tasks.push({ ...base, project: "q8", name: "later", parents: [key(5)] });
  tasks.push({ ...base, project: "q7", name: "orphan", parents: ["q6/acme/never"] });
  return tasks;
}

async function declared(tasks: Record<string, unknown>[], projection: SchedulerProjection): Promise<void> {
  await declare(log, projection, [{ filename: "tasks.json", document: { tasks } }], NOW);
}

/** What `why` and `task` answer of one task. */
function whyOf(projection: SchedulerProjection, id: string) {
  const why = explainTask(projection, id, NOW, { renderProblem: renderProblem(projection) });
  const task = projection.tasks.get(id);
  return {
    why,
    deadline: task ? taskDeadline(projection, task, NOW) : null,
    priority: task ? shownPriority(task, projection.weights) : null,
    instance: task ? (projection.currentInstance(task) ?? null) : null,
  };
}

/** Every page of `limit` tasks, from the view's ids. */
function pagesOf(view: ReadView, limit: number, after?: string) {
  return taskPage(view.projection, NOW, { limit, ...(after ? { after } : {}) }, view.idsAfter);
}

async function whole(): Promise<ReadView> {
  const { projection } = await loadProjection(log, dir);
  return { projection, idsAfter: () => [] };
}

describe("reads from the checkpoint's index", () => {
  it("answer why, task and every page as the whole projection does, with events after the checkpoint", async () => {
    const tasks = catalogue();
    const projection = new SchedulerProjection();
    await declared(tasks, projection);
    await catchUp(log, projection);
    // Blocks of 16 tasks: the catalogue is 16 blocks, of which a read decodes a few.
    await writeInBlocks(projection, 16);
    // The tail: a task paused, one retired, a parent changed, new tasks (one a new child of a
    // task, one a new parent's child), one of them in the middle of the key order.
    await pauseTask(log, projection, `${(tasks[2] as { project: string }).project}/acme/c1/ALL`, "held");
    await catchUp(log, projection);
    const victim = tasks[40] as { project: string; name: string };
    await retireTask(log, projection, `${victim.project}/acme/${victim.name}/ALL`, "gone");
    await catchUp(log, projection);
    const changed = tasks.map((t, i) =>
      i === 60 ? { ...t, parents: [`${(tasks[10] as { project: string }).project}/acme/c9`] } : t,
    );
    const base = {
      account: "acme",
      cron: "0 * * * *",
      startDate: "2026-11-30T00:00:00Z",
      operator: { type: "noop" },
    };
    changed.push({ ...base, project: "q3", name: "c1000", parents: ["q9/acme/early"] });
    changed.push({ ...base, project: "q0", name: "new", parents: ["q6/acme/never"] });
    await declared(
      changed.filter((t) => (t as { name: string }).name !== victim.name),
      projection,
    );
    await catchUp(log, projection);

    const full = await whole();
    const ids = [...full.projection.tasks.keys(), "q6/acme/never/ALL", "q5/acme/none/ALL"];
    let decoded = 0;
    for (const id of ids) {
      const lazy = await answerAtHead(log, dir, (v) => whyOf(v.projection, id));
      expect(lazy.why, id).toBeNull();
      expect(lazy.lazy, id).toBe(true);
      expect(lazy.answer, id).toEqual(whyOf(full.projection, id));
      decoded = Math.max(decoded, lazy.blocksRead);
    }
    // No read decoded the whole catalogue (16 blocks).
    expect(decoded).toBeLessThan(16);

    // Pages of 7, from the start to the end, and from an id no task has.
    const fullView: ReadView = {
      projection: full.projection,
      idsAfter: (after, count) =>
        [...full.projection.tasks.keys()]
          .filter((id) => after === undefined || id > after)
          .sort()
          .slice(0, count),
    };
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const lazy = await answerAtHead(log, dir, (v) => pagesOf(v, 7, after));
      expect(lazy.lazy).toBe(true);
      // The page's tasks fetched together: not a round of look-ups for each.
      expect(lazy.rounds).toBeLessThanOrEqual(3);
      const expected = pagesOf(fullView, 7, after);
      expect(lazy.answer).toEqual(expected);
      // The same rows as the whole projection's own page (its ids from the map itself).
      expect(lazy.answer).toEqual(taskPage(full.projection, NOW, { limit: 7, ...(after ? { after } : {}) }));
      pages += 1;
      if (!expected.more) break;
      after = expected.rows.at(-1)?.task;
    }
    expect(pages).toBe(Math.ceil(full.projection.tasks.size / 7));
    const middle = await answerAtHead(log, dir, (v) => pagesOf(v, 5, "q3/acme/c1"));
    expect(middle.answer).toEqual(pagesOf(fullView, 5, "q3/acme/c1"));
    expect(middle.answer.rows.map((r) => r.task)).toContain("q3/acme/c1000/ALL");
  });

  it("loads the whole projection when the answer needs every task, the tail is long, or the checkpoint has no index", async () => {
    const projection = new SchedulerProjection();
    await declared(catalogue(), projection);
    await catchUp(log, projection);
    await writeInBlocks(projection, 16);
    const id = "q8/acme/later/ALL";
    await pauseTask(log, projection, id, "held");
    await catchUp(log, projection);
    const full = await whole();
    const expected = whyOf(full.projection, id);

    const all = await answerAtHead(log, dir, (v) => v.projection.tasks.size);
    expect([all.lazy, all.why, all.answer]).toEqual([
      false,
      "the answer needs every task",
      full.projection.tasks.size,
    ]);

    const long = await answerAtHead(log, dir, (v) => whyOf(v.projection, id), { maxTail: 0 });
    expect([long.lazy, long.why]).toEqual([false, "more than 0 events after the checkpoint"]);
    expect(long.answer).toEqual(expected);

    const few = await answerAtHead(log, dir, (v) => whyOf(v.projection, id), { maxTasks: 0 });
    expect([few.lazy, few.why]).toEqual([false, "more than 0 tasks looked at"]);
    expect(few.answer).toEqual(expected);

    // A checkpoint as the version before wrote it (`lines/3`, no index): read whole.
    const text = readFileSync(snapshotPath(), "utf8");
    const lines = text.split("\n");
    const header = JSON.parse(lines[0] as string);
    const older = [
      JSON.stringify({ ...header, lines: "lines/3" }),
      ...lines.slice(1, lines.indexOf('"index"')),
    ];
    writeFileSync(snapshotPath(), `${older.join("\n")}\n`);
    const old = await answerAtHead(log, dir, (v) => whyOf(v.projection, id));
    expect(old.lazy).toBe(false);
    expect(old.why).toBe("no index: the file does not end with its index");
    expect(old.answer).toEqual(expected);
    const loaded = await loadProjection(log, dir);
    expect(loaded.discarded).toBeNull();
    expect(loaded.snapshotPosition).toBe(BigInt(header.position));
    expect(loaded.projection.toSnapshot()).toEqual(full.projection.toSnapshot());

    // A checkpoint of another log is not used (a hash of the same length: the offsets hold).
    const otherHash = "0".repeat(String(header.headHash).length);
    writeFileSync(
      snapshotPath(),
      text.replace(`"headHash":"${header.headHash}"`, `"headHash":"${otherHash}"`),
    );
    const other = await answerAtHead(log, dir, (v) => whyOf(v.projection, id));
    expect([other.lazy, other.why]).toEqual([false, "the snapshot does not match this log"]);
    expect(other.answer).toEqual(expected);

    // An error the answer is (no such task) is thrown as the whole load throws it.
    writeFileSync(snapshotPath(), text);
    await expect(
      answerAtHead(log, dir, (v) => {
        if (!v.projection.tasks.get("q5/acme/none/ALL")) throw new Error("no task q5/acme/none/ALL");
      }),
    ).rejects.toThrow("no task q5/acme/none/ALL");
  });
});

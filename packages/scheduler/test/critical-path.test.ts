import { describe, expect, it } from "vitest";
import { criticalPath, type RunView } from "../src/runs.js";

describe("criticalPath", () => {
  it("takes a run of half a million tasks (no spread of them into one call)", () => {
    const n = 500_000;
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
    const instances = Array.from({ length: n }, (_, i) => ({
      task: `p/a/t${i}/-`,
      // Task i ran from second i to second i + 2; the last one ended last.
      attempts: [{ startedAt: at(i), endedAt: at(i + 2) }],
    }));
    const view = {
      run: { runId: "wf@big", tasks: instances.map((x) => x.task) },
      tries: [{ try: 1, startedAt: at(0) }],
      try: 1,
      instances,
    } as unknown as RunView;
    // No task after another: the path is the task that ended last, from the try's start.
    const path = criticalPath(view, () => []);
    expect(path.wallMs).toBe((n + 1) * 1000);
    expect(path.links.map((l) => [l.task, l.waitMs, l.durationMs])).toEqual([
      [`p/a/t${n - 1}/-`, (n - 1) * 1000, 2000],
    ]);
  });
});

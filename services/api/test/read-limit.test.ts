import type { AccessToken, Caller } from "@chronolog/api";
import { SchedulerProjection, type WorkflowSpec } from "@chronolog/core";
import { describe, expect, it } from "vitest";
import { canReadEvent } from "../src/auth.js";

/**
 * Which events a token limited to some projects' reads sees in `/log` and `/events`: a run's
 * events name its tasks, so a run holding another project's task is left out, judged by the run
 * the projection holds or, for a run it no longer keeps (it keeps the latest finished ones), by
 * the tasks each event names.
 */

const reader: Caller = {
  token: {
    name: "books-reader",
    scope: "read",
    projects: [],
    readProjects: ["books"],
  } as unknown as AccessToken,
  actor: "api:books-reader",
};
const admin: Caller = { token: null, actor: "api:anonymous" };
const RUN = "run-books_wf@2026-12-01T00:00:00.000Z";
const key = (project: string, name: string) => ({ project, account: "acme", name, partition: "ALL" });

function projection(): SchedulerProjection {
  const p = new SchedulerProjection();
  p.workflows.set("books_wf", { name: "books_wf", project: "books" } as unknown as WorkflowSpec);
  return p;
}

const started = (...tasks: ReturnType<typeof key>[]) => ({
  runId: RUN.slice(4),
  workflow: "books_wf",
  logicalDate: "2026-12-01T00:00:00.000Z",
  tasks,
});
const finished = (failed: string[]) => ({
  runId: RUN.slice(4),
  state: "failed",
  workflow: "books_wf",
  logicalDate: "2026-12-01T00:00:00.000Z",
  succeeded: ["books/acme/broken/ALL"],
  failed,
});

describe("a run's events read with a token of one project", () => {
  it("of a run no longer held, are judged by the tasks each names", () => {
    const p = projection();
    const can = (data: unknown) => canReadEvent(reader, RUN, p, () => data);
    expect(can(started(key("books", "broken"), key("shelf", "after")))).toBe(false);
    expect(can(finished(["shelf/acme/after/ALL"]))).toBe(false);
    expect(can(started(key("books", "broken")))).toBe(true);
    expect(can(finished([]))).toBe(true);
    expect(canReadEvent(admin, RUN, p, () => started(key("shelf", "after")))).toBe(true);
  });

  it("of a run held, are judged by the run's tasks, without reading the event", () => {
    const p = projection();
    p.runs.set(RUN.slice(4), { tasks: ["books/acme/broken/ALL", "shelf/acme/after/ALL"] } as never);
    const unread = () => {
      throw new Error("the event's data was read");
    };
    expect(canReadEvent(reader, RUN, p, unread)).toBe(false);
    p.runs.set(RUN.slice(4), { tasks: ["books/acme/broken/ALL"] } as never);
    expect(canReadEvent(reader, RUN, p, unread)).toBe(true);
  });

  it("of a workflow of another project or none known, are left out", () => {
    const p = new SchedulerProjection();
    expect(canReadEvent(reader, RUN, p, () => started(key("books", "broken")))).toBe(false);
  });
});

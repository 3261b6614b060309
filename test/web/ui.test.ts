import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiProcess,
  chronolog,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  Leftovers,
  startApi,
} from "../api/support.js";
import { chronologSpawn } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { type Browser, loggedIn, open, startBrowser } from "./support.js";

/**
 * The web UI in a real Chromium, against a real `chronolog up --example` with a failing
 * workflow, a task that runs until the test lets it finish, a task blocked behind the failure
 * and one whose parent is not declared.
 */
const left = new Leftovers();
let p: ApiProcess;
let b: Browser;
let ops: string;
let viewer: string;
let call: ReturnType<typeof client>;
let dir: string;

const SLOW = "ops/acme/slow/ALL";
const EXTRACT = "ops/acme/extract/ALL";
const RAW = "ingest/acme/orders_raw/ALL";

function opsYaml(d: string): string {
  const start = dayAt(-1);
  return `
tasks:
  - { project: ops, account: acme, name: slow, cron: "0 0 * * *", startDate: "${start}",
      operator: { type: shell, command: "echo waiting for go; while [ ! -f ${join(d, "go")} ]; do sleep 0.1; done; echo slow done" } }
  - { project: ops, account: acme, name: downstream, cron: "0 0 * * *", startDate: "${start}",
      parents: ["ops/acme/extract"], operator: { type: shell, command: "echo downstream" } }
  - { project: ops, account: acme, name: orphan, cron: "0 0 * * *", startDate: "${start}",
      parents: ["ops/acme/never_declared"], operator: { type: shell, command: "echo orphan" } }
workflows:
  - name: nightly
    project: ops
    account: acme
    cron: "0 0 * * *"
    startDate: "${start}"
    tasks:
      - name: extract
        operator: { type: shell, command: "echo extracting; echo bad input >&2; exit 3" }
        retry: { maxAttempts: 1 }
        priority: 2
        priorityRule: downstream
      - name: load
        parents: [extract]
        operator: { type: shell, command: "echo load" }
`;
}

const cellState = (page: Page, task: string) =>
  page.locator(`tr[data-task="${task}"] td.cell`).first().getAttribute("data-state");

beforeAll(async () => {
  dir = dataDir(left, "web");
  ops = createToken(dir, "ops", "operate");
  viewer = createToken(dir, "viewer", "read");
  declareFile(dir, opsYaml(dir));
  [p, b] = await Promise.all([startApi(left, dir, ["up", "--example"]), startBrowser()]);
  call = client(p);
  // The failing run has finished, and the slow task is running.
  await waitUntil(
    "the nightly run to finish",
    async () => {
      const r = await call("/runs?workflow=nightly", { token: ops });
      return r.status === 200 && r.body.length > 0 && r.body[0].status !== "running" ? true : undefined;
    },
    30_000,
  );
}, 90_000);

afterAll(async () => {
  await b?.close();
  await left.clear();
});

describe("the web UI", () => {
  it("grid: a running task's cell turns green without a reload when it succeeds", async () => {
    const page = await loggedIn(b, p.url, ops);
    await page.locator(`tr[data-task="${RAW}"]`).waitFor();
    await expect.poll(() => cellState(page, SLOW), { timeout: 15_000 }).toBe("running");
    const running = page.locator(`tr[data-task="${SLOW}"] td.cell[data-state=running]`);
    const date = (await running.getAttribute("data-date")) as string;
    const cell = page.locator(`tr[data-task="${SLOW}"] td.cell[data-date="${date}"]`);
    expect(await cellState(page, EXTRACT)).toBe("failed");
    expect(
      await page.locator(`tr[data-task="ops/acme/load/ALL"] td.cell`).first().getAttribute("data-state"),
    ).toBe("upstream_failed");
    await page.evaluate(() => {
      (window as unknown as { marker: number }).marker = 1;
    });
    // Its task page shows the running attempt's output as it comes.
    const task = await loggedIn(b, p.url, ops, `#/task/${encodeURIComponent(SLOW)}`);
    await expect
      .poll(() => task.getByTestId("live-output").textContent(), { timeout: 10_000 })
      .toContain("waiting for go");
    writeFileSync(join(dir, "go"), "");
    await expect.poll(() => cell.getAttribute("data-state"), { timeout: 15_000 }).toBe("success");
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    await expect
      .poll(() => task.locator("[data-testid=attempts] tbody tr").first().textContent(), { timeout: 10_000 })
      .toContain("slow done");
    await task.close();
    // Filters: the ops project's failed tasks.
    await page.selectOption("select[name=project]", "ops");
    await page.selectOption("select[name=state]", "failed");
    await expect.poll(() => page.locator("table.grid tbody tr").count(), { timeout: 15_000 }).toBe(1);
    expect(await page.locator("table.grid tbody tr").getAttribute("data-task")).toBe(EXTRACT);
    expect(page.url()).toContain("project=ops");
    await page.close();
  });

  it("graph: every declaration, coloured, a blocked node's reasons on hover, a missing parent", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, "#/graph", "graph");
    const node = (id: string) => page.locator(`g.node[data-task="${id}"]`);
    await node(RAW).waitFor();
    expect(await node(EXTRACT).getAttribute("data-state")).toBe("failed");
    expect(await node("ops/acme/never_declared/ALL").getAttribute("class")).toContain("missing");
    expect(await node("ops/acme/downstream/ALL").getAttribute("data-state")).toBe("blocked");
    await node("ops/acme/downstream/ALL").hover();
    await expect
      .poll(() => page.getByTestId("tooltip").textContent(), { timeout: 15_000 })
      .toContain("waiting for ops/acme/extract");
    // One workflow alone.
    await open(page, p.url, "#/graph?workflow=nightly", "graph");
    await expect.poll(() => page.locator("g.node:not(.outside)").count(), { timeout: 15_000 }).toBe(2);
    await page.close();
  });

  it("task page: where it stands and why, attempts with output, history with actors", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/task/${encodeURIComponent(EXTRACT)}`, "where");
    expect(await page.getByTestId("condition").textContent()).toBe("failed");
    // Its priority, and its weight with the tasks below it (load and downstream, at 0).
    expect(await page.getByTestId("priority").textContent()).toBe("2 (downstream: weight 2)");
    const attempt = page.locator("[data-testid=attempts] tbody tr").first();
    await attempt.waitFor();
    expect(await attempt.textContent()).toContain("bad input");
    expect(await attempt.locator("a", { hasText: "whole output" }).getAttribute("href")).toMatch(
      /^#\/output\/ops%2Facme%2Fextract%2FALL%2F[^/]+%2F1$/,
    );
    const history = page.locator("[data-testid=history] li");
    await expect.poll(() => history.count(), { timeout: 15_000 }).toBeGreaterThan(3);
    const types = await history.evaluateAll((els) => els.map((e) => e.getAttribute("data-type")));
    expect(types).toContain("TaskDeclared");
    expect(types).toContain("AttemptFailed");
    await page.close();
  });

  it("task page: a pending backfill's Cancel backfill button takes it back, with the reason", async () => {
    // The orphan never runs (its parent is not declared): its backfill stays pending.
    const ORPHAN = "ops/acme/orphan/ALL";
    const started = await call("/backfills", {
      token: ops,
      body: { task: ORPHAN, from: dayAt(-1), to: dayAt(-1) },
    });
    expect(started.status, started.text).toBe(200);
    const id = started.body.backfillId as string;
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/task/${encodeURIComponent(ORPHAN)}`, "where");
    const button = page.locator('button[data-action="Cancel backfill"]');
    await button.waitFor();
    await button.click();
    const dialog = page.getByTestId("confirm");
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`This cancels backfill ${id}`);
    await dialog.locator("input[name=reason]").fill("asked for the wrong task");
    await page.getByTestId("confirm-ok").click();
    await dialog.waitFor({ state: "detached" });
    await expect
      .poll(
        async () => (await call(`/tasks/${encodeURIComponent(ORPHAN)}`, { token: ops })).body.task.backfill,
      )
      .toBeNull();
    // The page follows it live: the cancel's reset in the history, and the button gone.
    await expect
      .poll(() => page.locator('[data-testid=history] li[data-type="IntervalReset"]').count())
      .toBe(2);
    await expect.poll(() => button.count()).toBe(0);
    expect((await call(`/backfills/${id}`, { token: ops })).body.cancelled).toMatchObject({
      by: "api:ops",
      reason: "asked for the wrong task",
    });
    await page.close();
  });

  it("run page: graph by instance state, a Gantt with the critical path, the run's sets", async () => {
    const page = await loggedIn(b, p.url, ops);
    const runs = (await call("/runs?workflow=nightly", { token: ops })).body;
    const runId = runs[0].runId as string;
    await open(page, p.url, `#/run/${encodeURIComponent(runId)}`, "gantt");
    expect(await page.locator(`[data-set=failed]`).textContent()).toContain(EXTRACT);
    expect(await page.locator(`[data-set=upstream_failed]`).textContent()).toContain("ops/acme/load/ALL");
    expect(await page.locator(`g.node[data-task="${EXTRACT}"]`).getAttribute("data-state")).toBe("failed");
    expect(await page.locator(`rect.bar[data-task="${EXTRACT}"]`).getAttribute("data-critical")).toBe("yes");
    expect(await page.getByTestId("critical-path").textContent()).toContain(EXTRACT);
    // The example's daily run, which succeeded.
    const done = await waitUntil(
      "a daily run of the example to succeed",
      async () =>
        (await call("/runs?workflow=orders_daily", { token: ops })).body.find(
          (r: { status: string }) => r.status === "success",
        ),
      30_000,
    );
    await open(page, p.url, `#/run/${encodeURIComponent(done.runId)}`, "gantt");
    // The bars are drawn as the run's attempts arrive: the critical path may follow a moment later.
    await expect
      .poll(() => page.locator("rect.bar[data-critical=yes]").count(), { timeout: 15_000 })
      .toBeGreaterThan(0);
    await expect
      .poll(() => page.locator("[data-set=success]").textContent(), { timeout: 15_000 })
      .toContain("orders_daily_report");
    await page.close();
  });

  it("log page: the head, verify, paging and the live tail", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, "#/log", "head");
    // The head as the API gives it (the example may still be catching up: both are read again,
    // until the page has caught up with a head that stands still long enough to be compared).
    await expect
      .poll(
        async () => {
          const head = (await call("/log/head", { token: ops })).body;
          return (await page.getByTestId("head").textContent())?.includes(head.hash);
        },
        { timeout: 20_000 },
      )
      .toBe(true);
    await page.getByTestId("verify").click();
    await expect
      .poll(() => page.getByTestId("verify-result").textContent(), { timeout: 10_000 })
      .toContain("intact");
    await open(page, p.url, "#/log?from=0", "log");
    // The page of the head's 50 events shows until the first 50 have loaded: wait for those.
    const first = (await call("/log?from=0&limit=1", { token: ops })).body.events[0].position;
    await expect
      .poll(() => page.locator("[data-testid=log] tbody tr").last().getAttribute("data-position"), {
        timeout: 10_000,
      })
      .toBe(first);
    expect(await page.locator("[data-testid=log] tbody tr").count()).toBe(50);
    // The log starts at position 0: the first page is 0 to 49, with nothing older.
    expect(first).toBe("0");
    expect(await page.getByTestId("log-range").textContent()).toBe("positions 0–49");
    expect(await page.getByRole("button", { name: "‹ Older" }).isDisabled()).toBe(true);
    // An event written now shows in the live tail.
    await call(`/tasks/${encodeURIComponent("ops/acme/orphan/ALL")}/pause`, { token: ops, body: {} });
    await expect
      .poll(() => page.getByTestId("tail").textContent(), { timeout: 10_000 })
      .toContain("TaskPaused");
    await page.close();
  });

  it("live: the status shows the stream as open even when it opened before the page listened", async () => {
    // Without animation frames, the page's effects run only after a 100 ms fallback, so the
    // stream (on loopback) opens before the status line subscribes to it.
    const page = await b.context.newPage();
    await page.addInitScript(() => {
      window.requestAnimationFrame = () => 0;
    });
    await page.goto(`${p.url}/#/log`);
    await page.fill("input[name=token]", viewer);
    await page.press("input[name=token]", "Enter");
    await page.getByTestId("who").waitFor();
    await expect
      .poll(() => page.getByTestId("live").getAttribute("data-status"), { timeout: 15_000 })
      .toBe("live");
    await page.close();
  });

  it("live: a lost connection is shown, and resumes from the last position seen", async () => {
    // A second, read-only server on the same log, stopped and started again on its port.
    const serve = await startApi(left, dir, ["serve"]);
    const port = new URL(serve.url).port;
    const page = await loggedIn(b, serve.url, viewer, "#/log");
    const live = page.getByTestId("live");
    await expect.poll(() => live.getAttribute("data-status"), { timeout: 15_000 }).toBe("live");
    serve.child.kill("SIGTERM");
    await new Promise((r) => serve.child.once("exit", r));
    await expect.poll(() => live.getAttribute("data-status"), { timeout: 10_000 }).toBe("lost");
    expect(await live.textContent()).toMatch(/connection lost: resuming from position \d+/);
    // Written while the page is cut off: it shows once the stream resumes.
    const paused = await call(`/tasks/${encodeURIComponent("ops/acme/downstream/ALL")}/pause`, {
      token: ops,
      body: { reason: "while the UI was away" },
    });
    expect(paused.status).toBe(200);
    const again = chronologSpawn(dir, ["serve", "--http", `127.0.0.1:${port}`]);
    left.processes.push(again);
    await expect.poll(() => live.getAttribute("data-status"), { timeout: 20_000 }).toBe("live");
    // Every event from the first the page heard to the pause, none missed or repeated.
    const tail = page.locator("[data-testid=tail] li");
    await expect
      .poll(() => tail.evaluateAll((els) => els.map((e) => e.getAttribute("data-position"))), {
        timeout: 10_000,
      })
      .toContain(paused.body.position);
    const seen = (
      await tail.evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-position"))))
    ).reverse();
    expect(seen).toEqual(seen.map((_, i) => (seen[0] as number) + i));
    await page.close();
  });

  it("a pause clicked in the UI is an event with the token's actor", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/task/${encodeURIComponent(RAW)}`, "where");
    await page.locator("button[data-action=Pause]").click();
    expect(await page.getByTestId("confirm-what").textContent()).toContain(`pauses ${RAW}`);
    await page.getByTestId("confirm-ok").click();
    await expect.poll(() => page.getByTestId("status").textContent(), { timeout: 10_000 }).toBe("paused");
    const paused = page.locator("[data-testid=history] li[data-type=TaskPaused]");
    await paused.first().waitFor();
    expect(await paused.first().locator("[data-testid=actor]").textContent()).toBe("api:ops");
    const history = (await call(`/tasks/${encodeURIComponent(RAW)}/history`, { token: ops })).body;
    expect(history.find((e: { type: string }) => e.type === "TaskPaused").metadata.actor).toBe("api:ops");
    // Resume, the same way.
    await page.locator("button[data-action=Resume]").click();
    await page.getByTestId("confirm-ok").click();
    await expect.poll(() => page.getByTestId("status").textContent(), { timeout: 10_000 }).toBe("active");
    await page.close();
  });

  it("?at= shows the state as of that position, as the CLI says it, in a banner", async () => {
    const log = (await call("/log?from=0&limit=10000", { token: ops })).body.events as Array<{
      position: string;
      type: string;
      data: { key?: { name: string } };
    }>;
    // Right after the failing attempt: extract failed, the slow task still running.
    const at = log.find((e) => e.type === "AttemptFailed")?.position as string;
    const cli = JSON.parse(chronolog(dir, ["tasks", "--at", at, "--json"]).stdout) as Array<{
      task: string;
      condition: string;
    }>;
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/grid?at=${at}`, "as-of");
    expect(await page.getByTestId("as-of").textContent()).toContain(`log position ${at}`);
    await page.locator("table.grid tbody tr").first().waitFor();
    const shown = await page
      .locator("table.grid tbody tr")
      .evaluateAll((rows) =>
        rows.map((r) => [r.getAttribute("data-task"), r.querySelector("td.cond")?.textContent]),
      );
    expect(Object.fromEntries(shown)).toEqual(Object.fromEntries(cli.map((t) => [t.task, t.condition])));
    // The task page as of the same position, its history cut there, with a slider.
    await open(page, p.url, `#/task/${encodeURIComponent(SLOW)}?at=${at}`, "history");
    expect(await page.getByTestId("as-of").textContent()).toContain(at);
    expect(await page.getByTestId("slider").inputValue()).toBe(at);
    const positions = await page
      .locator("[data-testid=history] li")
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-position"))));
    expect(positions.length).toBeGreaterThan(0);
    expect(Math.max(...positions)).toBeLessThanOrEqual(Number(at));
    expect(await page.locator("button.action").count()).toBe(0);
    await page.close();
  });

  it("a read-only token sees no action buttons", async () => {
    const page = await loggedIn(b, p.url, viewer);
    expect(await page.getByTestId("who").textContent()).toContain("read");
    await open(page, p.url, `#/task/${encodeURIComponent(EXTRACT)}`, "where");
    await page.locator("[data-testid=attempts] tbody tr").first().waitFor();
    expect(await page.locator("button.action").count()).toBe(0);
    const runs = (await call("/runs?workflow=nightly", { token: viewer })).body;
    await open(page, p.url, `#/run/${encodeURIComponent(runs[0].runId)}`, "gantt");
    await open(page, p.url, "#/graph?workflow=nightly", "graph");
    expect(await page.locator("button.action").count()).toBe(0);
    await page.close();
  });

  it("under the server's Content-Security-Policy, no page is refused anything and none fails", async () => {
    const page = await loggedIn(b, p.url, ops);
    const runs = await call("/runs?workflow=nightly", { token: ops });
    await open(page, p.url, "#/graph", "graph");
    await open(page, p.url, `#/task/${encodeURIComponent(EXTRACT)}`, "where");
    await open(page, p.url, `#/run/${encodeURIComponent(runs.body[0].runId)}`, "gantt");
    await open(page, p.url, "#/log", "head");
    await open(page, p.url, "#/grid", "who");
    expect((page as Page & { errors?: string[] }).errors).toEqual([]);
    await page.close();
  });

  it("keyboard: Tab reaches every action and Enter opens its confirmation", async () => {
    const page = await loggedIn(b, p.url, ops);
    const runs = (await call("/runs?workflow=nightly", { token: ops })).body;
    for (const hash of [
      `#/task/${encodeURIComponent(RAW)}`,
      `#/run/${encodeURIComponent(runs[0].runId)}`,
      "#/graph?workflow=nightly",
    ]) {
      await page.goto(`${p.url}/${hash}`);
      const actions = page.locator("button.action");
      await actions.first().waitFor();
      const all = await actions.evaluateAll((els) => els.map((e) => e.getAttribute("data-action")));
      const reached = new Set<string>();
      for (let i = 0; i < 80 && reached.size < all.length; i++) {
        await page.keyboard.press("Tab");
        const a = await page.evaluate(() => document.activeElement?.getAttribute("data-action") ?? null);
        if (a) reached.add(a);
      }
      expect([...reached].sort()).toEqual([...all].sort());
      // Enter on a focused action opens its confirmation; Tab reaches Cancel, Enter closes it.
      // (Live updates may re-render the page meanwhile: Tab on to an action before Enter.)
      const onAction = () => page.evaluate(() => !!document.activeElement?.getAttribute("data-action"));
      for (let i = 0; i < 80 && !(await onAction()); i++) await page.keyboard.press("Tab");
      expect(await onAction()).toBe(true);
      await page.keyboard.press("Enter");
      await page.getByTestId("confirm").waitFor();
      for (let i = 0; i < 10; i++) {
        const text = await page.evaluate(() => document.activeElement?.textContent?.trim());
        if (text === "Cancel") break;
        await page.keyboard.press("Tab");
      }
      await page.keyboard.press("Enter");
      await page.getByTestId("confirm").waitFor({ state: "detached" });
    }
    await page.close();
  }, 90_000);
});

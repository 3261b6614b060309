import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiProcess,
  chronolog,
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
 * The UI's details, in a real Chromium, over a log a real scheduler wrote: a workflow whose
 * extract failed, rerun while extract is paused (so the run waits); an hourly and daily tasks
 * side by side in the grid; an attempt a shutdown interrupted. The API serves it read-only.
 */
const left = new Leftovers();
let p: ApiProcess;
let b: Browser;
let ops: string;
let dir: string;
let runId: string;

// Two days back: the daily workflow's interval and the 1-hour deadline after it are both over,
// whatever the time now (from yesterday, the deadline fell at 01:00 today, "at risk" before).
const DAY = dayAt(-2);
const EXTRACT = "finance/acme/extract/ALL";
const LOAD = "finance/acme/load/ALL";
const HOURLY = "ingest/acme/orders_raw_from_the_shop/ALL";
const SLOW = "ops/acme/slow/ALL";
const hourAfter = (h: number) => new Date(Date.parse(DAY) + h * 3_600_000).toISOString();

function yaml(d: string): string {
  return `
tasks:
  - { project: ingest, account: acme, name: orders_raw_from_the_shop, cron: "0 * * * *", startDate: "${DAY}",
      endDate: "${hourAfter(8.5)}", operator: { type: shell, command: "echo rows" } }
  - { project: ops, account: acme, name: slow, cron: "0 0 * * *", startDate: "${DAY}", endDate: "${hourAfter(1)}",
      operator: { type: shell, command: "echo started; sleep 60" } }
workflows:
  - name: etl
    project: finance
    account: acme
    cron: "0 0 * * *"
    startDate: "${DAY}"
    endDate: "${hourAfter(1)}"
    params: { region: eu }
    tasks:
      - name: extract
        retry: { maxAttempts: 1 }
        operator: { type: shell, command: "echo reading ${join(d, "input")}; echo bad input >&2; exit 3" }
      - name: load
        parents: [extract]
        deadline: { within: "1h" }
        operator: { type: shell, command: "echo load" }
`;
}

const json = <T>(args: string[]): T => JSON.parse(chronolog(dir, [...args, "--json"]).stdout || "null") as T;

beforeAll(async () => {
  dir = dataDir(left, "ui-details");
  ops = createToken(dir, "ops", "operate");
  declareFile(dir, yaml(dir));
  runId = `etl@${DAY}`;
  // A scheduler runs until the workflow has failed, the hourly task is done and the slow task
  // runs; its stop (with a grace of 1 s) interrupts the slow task.
  const up = chronologSpawn(dir, ["up", "--workers", "2", "--grace", "1"]);
  left.processes.push(up);
  up.stdout?.resume();
  up.stderr?.resume();
  const exited = new Promise((r) => up.once("exit", r));
  await waitUntil(
    "the run to fail, the hourly task to finish and the slow one to run",
    () => {
      const run = json<{ run: { status: string } } | null>(["run", runId]);
      const tasks = json<Array<{ task: string; prevIntervalStart: string | null }>>(["tasks"]);
      const slow = json<Array<{ status: string }>>(["attempts", SLOW]);
      return run?.run.status === "failed" &&
        tasks.find((t) => t.task === HOURLY)?.prevIntervalStart === hourAfter(8) &&
        slow[0]?.status === "running"
        ? true
        : undefined;
    },
    60_000,
  );
  up.kill("SIGTERM");
  await exited;
  expect(chronolog(dir, ["pause", EXTRACT, "--reason", "source is down"]).code).toBe(0);
  expect(chronolog(dir, ["rerun", runId, "--failed"]).code).toBe(0);
  [p, b] = await Promise.all([startApi(left, dir, ["serve"]), startBrowser()]);
}, 120_000);

afterAll(async () => {
  await b?.close();
  await left.clear();
});

const box = async (page: Page, selector: string) => {
  const r = await page.locator(selector).first().boundingBox();
  if (!r) throw new Error(`${selector} is not shown`);
  return r;
};

describe("the UI's details", () => {
  it("run page and runs list: the run's summary, its graph alike, and why it waits", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/run/${encodeURIComponent(runId)}`, "waiting");
    expect(await page.getByTestId("run-status").textContent()).toBe("running");
    expect(await page.getByTestId("waiting").textContent()).toContain(`${EXTRACT} is paused: source is down`);
    expect(await page.locator("[data-set=pending]").textContent()).toMatch(/pending 2 .*extract.*load/);
    expect(await page.locator("[data-set=failed]").textContent()).toMatch(/failed 0/);
    expect(await page.locator("[data-set=upstream_failed]").textContent()).toMatch(/upstream failed 0/);
    await page.locator(`g.node[data-task="${EXTRACT}"]`).waitFor();
    for (const t of [EXTRACT, LOAD])
      expect(await page.locator(`g.node[data-task="${t}"]`).getAttribute("data-state")).toBe("pending");
    // The trigger dialog: the CLI's default date, and the workflow's own params.
    await page.locator("button[data-action='Trigger etl']").click();
    const what = (await page.getByTestId("confirm-what").textContent()) as string;
    expect(what).toContain("by default the latest interval that has ended");
    expect(what).not.toMatch(/\bnow\b/);
    expect(await page.locator("[data-testid=confirm] input[name=params]").inputValue()).toBe("region=eu");
    expect(await page.getByTestId("confirm").textContent()).toContain("Params (region)");
    await page.getByRole("button", { name: "Cancel" }).click();

    await open(page, p.url, "#/runs", "runs");
    const row = page.locator(`tr[data-run="${runId}"]`);
    await row.waitFor();
    expect(await row.getByTestId("run-waiting").textContent()).toContain(`${EXTRACT} is paused`);
    expect(await row.getByTestId("run-counts").textContent()).toContain("0 of 2 ended pending 2");
    await page.close();
  });

  it("graph: labels keep the project, the reasons are beside the graph, never over a node", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, "#/graph", "graph");
    const node = page.locator(`g.node[data-task="${HOURLY}"]`);
    await node.waitFor();
    const lines = await node.locator("text").allTextContents();
    expect(lines[0]).toBe("ingest/acme");
    expect(lines[1]).toBe("orders_raw_from_the_shop");
    await page.locator(`g.node[data-task="${LOAD}"]`).hover();
    await expect.poll(() => page.getByTestId("tooltip").textContent(), { timeout: 10_000 }).toContain(LOAD);
    const tip = await box(page, "[data-testid=tooltip]");
    const nodes = await page.locator("g.node").evaluateAll((els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        return { x: r.x, y: r.y, width: r.width, height: r.height };
      }),
    );
    const scroll = await page.evaluate(() => ({ x: scrollX, y: scrollY }));
    for (const n of nodes) {
      const x = n.x + scroll.x;
      const y = n.y + scroll.y;
      const apart =
        x + n.width <= tip.x || tip.x + tip.width <= x || y + n.height <= tip.y || tip.y + tip.height <= y;
      expect(apart).toBe(true);
    }
    await page.close();
  });

  it("grid: columns are dates, the same down every row, hourly and daily alike", async () => {
    const page = await loggedIn(b, p.url, ops);
    await page.locator(`tr[data-task="${HOURLY}"] td.cell`).first().waitFor();
    const header = await page
      .locator("table.grid thead th.date")
      .evaluateAll((els) => els.map((e) => e.getAttribute("data-date")));
    // Newest first, the hourly task's dates and the daily tasks' among them.
    expect(header).toEqual([...header].sort((x, y) => Date.parse(y as string) - Date.parse(x as string)));
    expect(header).toEqual(expect.arrayContaining([hourAfter(8), hourAfter(7), DAY]));
    for (const task of [HOURLY, SLOW, EXTRACT]) {
      const dates = await page
        .locator(`tr[data-task="${task}"] td[data-date]`)
        .evaluateAll((els) => els.map((e) => e.getAttribute("data-date")));
      expect(dates).toEqual(header);
    }
    expect(await page.locator(`tr[data-task="${SLOW}"] td.cell[data-date="${DAY}"]`).count()).toBe(1);
    expect(await page.locator(`tr[data-task="${SLOW}"] td.gap[data-date="${hourAfter(7)}"]`).count()).toBe(1);
    // A date older than the recent ones shown of a row is marked so, not left as if nothing ran.
    const older = page.locator(`tr[data-task="${HOURLY}"] td.gap.older[data-date="${DAY}"]`);
    expect(await older.textContent()).toBe("…");
    expect(await older.getAttribute("title")).toContain(`older than the 8 recent dates shown for ${HOURLY}`);
    await page.close();
  });

  it("time travel: the banner's words are apart, and the badge says time travel, not live", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, "#/grid?at=5", "as-of");
    const banner = (await page.getByTestId("as-of").textContent()) as string;
    expect(banner).toContain("Nothing here changes live. Back to now");
    const live = page.getByTestId("live");
    expect(await live.getAttribute("data-status")).toBe("time-travel");
    expect(await live.textContent()).toBe("time travel: position 5");
    expect(await live.evaluate((e) => getComputedStyle(e).backgroundColor)).not.toBe("rgb(46, 157, 79)");
    await page.getByRole("link", { name: "Back to now" }).click();
    await expect.poll(() => live.getAttribute("data-status"), { timeout: 10_000 }).toBe("live");
    await page.close();
  });

  it("log page: spaces between words and values, Newer off on the latest page, an empty tail says so", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, "#/log", "head");
    await expect
      .poll(() => page.getByTestId("head").textContent(), { timeout: 10_000 })
      .toMatch(/^Head: position \d+, hash [0-9a-f]{16,}$/);
    await page.locator("[data-testid=log] tbody tr").first().waitFor();
    expect(await page.getByTestId("newer").isDisabled()).toBe(true);
    expect(await page.getByTestId("tail-empty").textContent()).toMatch(
      /^Nothing written since this page opened \(the head is at position \d+\): each event appears here as it is written\.$/,
    );
    await page.getByTestId("verify").click();
    await expect
      .poll(() => page.getByTestId("verify-result").textContent(), { timeout: 10_000 })
      .toMatch(/^intact: \d+ events checked, head \d+ [0-9a-f]{64}$/);
    // An older page has a newer one (the log holds more than a page).
    const head = Number(/position (\d+)/.exec((await page.getByTestId("head").textContent()) as string)?.[1]);
    expect(head).toBeGreaterThan(50);
    await open(page, p.url, "#/log?from=0", "log");
    await expect.poll(() => page.getByTestId("newer").isDisabled(), { timeout: 10_000 }).toBe(false);
    await page.close();
  });

  it("task page: an interrupted attempt is not red, a long reason does not widen the table", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/task/${encodeURIComponent(SLOW)}`, "attempts");
    const row = page.locator("[data-testid=attempts] tbody tr").first();
    await row.waitFor();
    expect(await row.getAttribute("data-status")).toBe("interrupted");
    const pill = row.locator(".pill");
    expect(await pill.textContent()).toBe("interrupted");
    expect(await pill.evaluate((e) => getComputedStyle(e).backgroundColor)).not.toBe("rgb(210, 60, 60)");
    expect(await row.getByTestId("budget").textContent()).toBe("not counted in its budget of 1");
    const why = row.getByTestId("why");
    expect(await why.textContent()).toMatch(/^interrupted: worker shutdown/);
    const width = (await why.boundingBox())?.width ?? Number.POSITIVE_INFINITY;
    expect(width).toBeLessThanOrEqual(18 * 16);
    await page.close();
  });

  it("task page: a deadline missed, with the estimate and the root cause the waits lead to", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/task/${encodeURIComponent(LOAD)}`, "deadline");
    const box = page.getByTestId("deadline");
    expect(await box.getAttribute("data-state")).toBe("missed");
    expect(await page.getByTestId("deadline-state").textContent()).toBe("missed");
    expect(await box.textContent()).toContain("cannot be done without an operator");
    const cause = await page.getByTestId("deadline-cause").textContent();
    expect(cause).toMatch(new RegExp(`^it waits for ${EXTRACT} .*, which is paused \\(source is down\\)$`));
    await page.close();
  });

  it("whole output: its own page, with the task, interval, attempt and the integrity check", async () => {
    const page = await loggedIn(b, p.url, ops);
    await open(page, p.url, `#/task/${encodeURIComponent(EXTRACT)}`, "attempts");
    const link = page.locator("[data-testid=attempts] tbody tr").first().getByTestId("whole-output");
    await link.click();
    await page.getByTestId("output-of").waitFor();
    expect(new URL(page.url()).hash).toMatch(/^#\/output\//);
    expect(await page.getByTestId("output-task").textContent()).toBe(EXTRACT);
    expect(await page.getByTestId("output-interval").textContent()).toBe(
      DAY.replace("T", " ").replace(".000Z", "Z"),
    );
    expect(await page.getByTestId("output-attempt").textContent()).toBe("1");
    expect(await page.getByTestId("output-of").textContent()).toContain("attempt 1 of 1");
    await expect
      .poll(() => page.getByTestId("integrity").getAttribute("data-check"), { timeout: 10_000 })
      .toBe("ok");
    expect(await page.getByTestId("integrity").textContent()).toMatch(
      /^Integrity: intact: the file matches what the attempt's end recorded \(\d+ bytes, SHA-256 [0-9a-f]{64}\)$/,
    );
    expect(await page.getByTestId("output").textContent()).toContain("bad input");
    // An attempt that does not exist is named as such.
    await open(page, p.url, `#/output/${encodeURIComponent(`${EXTRACT}/${DAY}/9`)}`, "no-attempt");
    expect(await page.getByTestId("no-attempt").textContent()).toContain(`${EXTRACT} has no attempt 9`);
    expect((page as Page & { errors?: string[] }).errors ?? []).toEqual([]);
    await page.close();
  });
});

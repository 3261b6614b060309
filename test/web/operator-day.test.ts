import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiProcess,
  client,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  Leftovers,
  startApi,
} from "../api/support.js";
import { waitUntil } from "../support/wait.js";
import { type Browser, loggedIn, open, startBrowser } from "./support.js";

/**
 * An operator's day in the web UI, in a real Chromium against a real `chronolog up`: a workflow
 * whose first task fails on purpose for two days. The operator finds the failing task from the
 * failed run, reads its output, marks one day skipped (its child then runs), makes the task able
 * to succeed and retries the other day, and watches the run finish.
 */
const left = new Leftovers();
let p: ApiProcess;
let b: Browser;
let ops: string;
let viewer: string;
let call: ReturnType<typeof client>;
let dir: string;

const FETCH = "finance/acme/fetch_rates/ALL";
const REPORT = "finance/acme/report/ALL";
const DAY1 = dayAt(-2);
const DAY2 = dayAt(-1);
const runOf = (day: string) => `finance_daily@${day}`;

beforeAll(async () => {
  dir = dataDir(left, "operator-day");
  ops = createToken(dir, "ops", "operate");
  viewer = createToken(dir, "viewer", "read");
  declareFile(
    dir,
    `workflows:
  - name: finance_daily
    project: finance
    account: acme
    cron: "0 0 * * *"
    startDate: "${DAY1}"
    tasks:
      - name: fetch_rates
        operator: { type: shell, command: ${JSON.stringify(`echo "fetching rates for $CHRONOLOG_DS"; test -e ${join(dir, "rates")} || { echo "no rates file for $CHRONOLOG_DS" >&2; exit 4; }`)} }
      - name: report
        parents: [fetch_rates]
        operator: { type: shell, command: "echo report for {{ ds }}" }
`,
  );
  [p, b] = await Promise.all([startApi(left, dir, ["up"]), startBrowser()]);
  call = client(p);
}, 90_000);

afterAll(async () => {
  await b?.close();
  await left.clear();
});

const runStatus = async (day: string) => {
  const r = await call(`/runs/${encodeURIComponent(runOf(day))}`, { token: viewer });
  return r.status === 200 ? (r.body.run.status as string) : undefined;
};

/** Clicks a way out of the task page and confirms it, with a reason. */
async function takeWayOut(page: Page, step: string, interval: string, reason: string): Promise<void> {
  const way = page.locator(`.way[data-step="${step}"][data-task="${FETCH}"][data-interval="${interval}"]`);
  await way.locator("button.action").click();
  const dialog = page.getByTestId("confirm");
  await dialog.waitFor();
  await dialog.locator("input[name=reason]").fill(reason);
  await page.getByTestId("confirm-ok").click();
  await dialog.waitFor({ state: "detached" });
}

describe("an operator's day in the web UI", () => {
  it("finds the failing task, reads its output, marks a day skipped, retries another, and the run finishes", async () => {
    await waitUntil("the first day's run to fail", async () =>
      (await runStatus(DAY1)) === "failed" ? true : undefined,
    );
    const page = await loggedIn(b, p.url, ops, `#/run/${encodeURIComponent(runOf(DAY1))}`);

    // The failed run names its halted task, with the command; its link leads to the task page.
    const next = page.getByTestId("run-next");
    await next.waitFor();
    expect(await next.textContent()).toContain(`chronolog retry ${FETCH} --interval ${DAY1}`);
    await next.locator(`a[href*="task"]`).click();
    await page.getByTestId("where").waitFor();
    expect(await page.getByTestId("condition").textContent()).toBe("failed");

    // Its output says why: the tail in the attempts table, then the whole output on its own page,
    // with its interval, attempt and the check of the file against what the attempt's end recorded.
    await expect
      .poll(() => page.locator("table").filter({ hasText: "fetching rates" }).first().textContent())
      .toContain("no rates file for");
    const taskPage = page.url();
    await page.locator("[data-testid=attempts] tbody tr").first().getByTestId("whole-output").click();
    await expect.poll(() => page.getByTestId("output").textContent()).toContain("no rates file for");
    expect(await page.getByTestId("output-interval").textContent()).toContain(DAY1.slice(0, 10));
    await expect.poll(() => page.getByTestId("integrity").getAttribute("data-check")).toBe("ok");
    expect(await page.getByTestId("integrity").textContent()).toContain("intact");
    await page.goto(taskPage);
    await page.getByTestId("where").waitFor();

    // Every way out is a button, with the CLI command beside it.
    const ways = page.getByTestId("ways-out");
    await ways.waitFor();
    expect(
      await ways.locator(".way").evaluateAll((els) => els.map((e) => e.getAttribute("data-step"))),
    ).toEqual(["retry", "mark_succeeded", "mark_skipped"]);
    expect(await ways.textContent()).toContain(
      `chronolog mark ${FETCH} --interval ${DAY1} --skipped --reason "say why"`,
    );
    expect(await ways.locator("button.action").count()).toBe(3);
    // A token that may only read sees the commands, and no button.
    const reader = await loggedIn(b, p.url, viewer, `#/task/${encodeURIComponent(FETCH)}`);
    await reader.getByTestId("ways-out").waitFor();
    expect(await reader.getByTestId("ways-out").locator(".way").count()).toBe(3);
    expect(await reader.locator("button.action").count()).toBe(0);
    await reader.close();

    // Day one: marked skipped. Its child runs and the run finishes, saying it was marked.
    await takeWayOut(page, "mark_skipped", DAY1, "the vendor published nothing that day");
    await waitUntil("the first day's run to finish again", async () =>
      (await runStatus(DAY1)) === "partial" ? true : undefined,
    );
    // The task moves on to day two, and fails there: the page follows it live.
    await page
      .locator(`.way[data-step="retry"][data-task="${FETCH}"][data-interval="${DAY2}"]`)
      .waitFor({ timeout: 30_000 });
    await expect
      .poll(() => page.getByTestId("history").textContent())
      .toContain("marked skipped by api:ops: the vendor published nothing that day");

    // Day two: made able to succeed, then retried.
    writeFileSync(join(dir, "rates"), "1.08\n");
    await takeWayOut(page, "retry", DAY2, "the rates file is there now");
    await expect.poll(() => page.getByTestId("history").textContent()).toContain("retried by api:ops");

    // The run of day two finishes, a success, in the run page, live.
    await page.goto(`${p.url}/#/run/${encodeURIComponent(runOf(DAY2))}`);
    await expect
      .poll(() => page.getByTestId("run-status").textContent(), { timeout: 30_000 })
      .toBe("success");
    await open(page, p.url, `#/run/${encodeURIComponent(runOf(DAY1))}`, "run-marked");
    expect(await page.getByTestId("run-status").textContent()).toBe("partial");
    expect(await page.getByTestId("run-marked").textContent()).toBe(`Marked by hand: ${FETCH} skipped`);
    const report = await call(`/tasks/${encodeURIComponent(REPORT)}`, { token: viewer });
    expect(report.body.task.prevIntervalStart).toBe(DAY2);
    expect((page as Page & { errors?: string[] }).errors).toEqual([]);
  });
});

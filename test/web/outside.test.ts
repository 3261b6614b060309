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
import { type Browser, loggedIn, startBrowser } from "./support.js";

/**
 * An outside task in the web UI, in a real Chromium against a real `chronolog up`: its task page
 * offers Report buttons for the interval it waits for, beside the CLI command; a report made
 * there is recorded with the token's actor, shown among the task's reports, and its child runs.
 */
const left = new Leftovers();
let p: ApiProcess;
let b: Browser;
let ops: string;
let viewer: string;
let call: ReturnType<typeof client>;

const PRICES = "vendor/acme/prices/ALL";
const USES = "vendor/acme/uses/ALL";
const DAY = dayAt(-1);
/** One interval: yesterday's. */
const END = new Date(Date.parse(DAY) + 12 * 3_600_000).toISOString();

beforeAll(async () => {
  const dir = dataDir(left, "outside-web");
  ops = createToken(dir, "acme-drop", "operate", ["vendor"]);
  viewer = createToken(dir, "viewer", "read");
  const daily = `cron: "0 0 * * *", startDate: "${DAY}", endDate: "${END}"`;
  declareFile(
    dir,
    `tasks:
  - { project: vendor, account: acme, name: prices, ${daily}, operator: { type: external } }
  - { project: vendor, account: acme, name: uses, ${daily}, parents: [vendor/acme/prices], operator: { type: shell, command: "true" } }
`,
  );
  [p, b] = await Promise.all([startApi(left, dir, ["up"]), startBrowser()]);
  call = client(p);
}, 90_000);

afterAll(async () => {
  await b?.close();
  await left.clear();
});

describe("an outside task's page", () => {
  it("reports the awaited interval with its button; the report is shown and the child runs", async () => {
    const page = await loggedIn(b, p.url, ops, `#/task/${encodeURIComponent(PRICES)}`);
    const ways = page.getByTestId("ways-out");
    await ways.waitFor({ timeout: 30_000 });
    expect(
      await ways.locator(".way").evaluateAll((els) => els.map((e) => e.getAttribute("data-step"))),
    ).toEqual(["report_succeeded", "report_failed"]);
    expect(await ways.textContent()).toContain(`chronolog report ${PRICES} --interval ${DAY}`);
    expect(await page.getByTestId("reasons").textContent()).toContain(
      `waits for an outside report of ${PRICES} ${DAY.slice(0, 10)}`,
    );

    const way = page.locator(`.way[data-step="report_succeeded"][data-interval="${DAY}"]`);
    await way.locator("button.action").click();
    const dialog = page.getByTestId("confirm");
    await dialog.waitFor();
    await dialog.locator("input[name=reason]").fill("file delivered");
    await page.getByTestId("confirm-ok").click();
    await dialog.waitFor({ state: "detached" });

    await expect
      .poll(() => page.getByTestId("history").textContent(), { timeout: 30_000 })
      .toContain("reported succeeded by api:acme-drop: file delivered");
    await expect
      .poll(() => page.getByTestId("reports").textContent(), { timeout: 30_000 })
      .toContain("reported succeeded by api:acme-drop");
    await waitUntil("the child to run", async () =>
      (await call(`/tasks/${encodeURIComponent(USES)}`, { token: viewer })).body.task.prevIntervalStart ===
      DAY
        ? true
        : undefined,
    );
    expect((page as Page & { errors?: string[] }).errors).toEqual([]);
  }, 180_000);
});

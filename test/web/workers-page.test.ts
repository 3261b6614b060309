import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ApiProcess,
  createToken,
  dataDir,
  dayAt,
  declareFile,
  key,
  Leftovers,
  startApi,
} from "../api/support.js";
import { chronologAsync } from "../support/cli.js";
import { type Browser, loggedIn, open, startBrowser } from "./support.js";

/**
 * The Workers page in a real Chromium, over a real log the API server follows: the events a
 * scheduler writes as remote workers connect, run attempts and go are appended while the page
 * is open, and it shows each as it happens, without a reload. A task's page names its queue.
 */
const left = new Leftovers();
let p: ApiProcess;
let b: Browser;
let page: Page;
let dir: string;

const TRAIN = "ml/acme/train/ALL";

async function append(stream: string, type: string, data: unknown): Promise<void> {
  const r = await chronologAsync(dir, [
    "log",
    "append",
    stream,
    "-t",
    type,
    "-d",
    JSON.stringify(data),
    "--actor",
    "scheduler:s1",
  ]);
  expect(r.code, r.stderr).toBe(0);
}

beforeAll(async () => {
  dir = dataDir(left, "ui-workers");
  declareFile(
    dir,
    `tasks:
  - { project: ml, account: acme, name: train, cron: "0 2 * * *", startDate: "${dayAt(-2)}", queue: gpu, operator: { type: noop } }
`,
  );
  const watcher = createToken(dir, "watcher", "read");
  p = await startApi(left, dir, ["serve"]);
  b = await startBrowser();
  page = await loggedIn(b, p.url, watcher);
}, 120_000);

afterAll(async () => {
  await b?.close();
  left.clear();
});

describe("the Workers page", { timeout: 180_000 }, () => {
  it("is in the navigation, and says when no worker is connected", async () => {
    await page.getByRole("link", { name: "Workers" }).click();
    await page.getByTestId("no-workers").waitFor();
    expect(page.url()).toContain("#/workers");
  });

  it("shows a worker as it connects, then what it runs and its load, live", async () => {
    await append("worker-gpu-1", "WorkerConnected", {
      worker: "gpu-1",
      host: "gpu-1.lab",
      queues: ["gpu", "gpu-large"],
      capacity: 2,
      version: "1 (chronolog 0.1.0)",
      token: "lab-workers",
      running: [],
    });
    const row = page.locator('[data-testid=workers] tr[data-worker="gpu-1"]');
    await row.waitFor({ timeout: 60_000 });
    expect(await row.textContent()).toContain("gpu-1.lab");
    expect(await row.textContent()).toContain("gpu, gpu-large");
    expect(await row.getByTestId("load").textContent()).toBe("0/2");

    const task = await fetch(`${p.url}/api/v1/tasks/${key(TRAIN)}`, {
      headers: {
        authorization: `Bearer ${await page.evaluate(() => sessionStorage.getItem("chronolog.token"))}`,
      },
    }).then((r) => r.json() as Promise<{ task: { logicalDate: string } }>);
    const logicalDate = task.task.logicalDate;
    const stream = `instance-${TRAIN}@${logicalDate}`;
    await append(stream, "DispatchIntended", {
      key: { project: "ml", account: "acme", name: "train", partition: "ALL" },
      logicalDate,
      attempt: 1,
      token: "tok-train-1-abcdef",
      operator: { type: "noop" },
      idempotent: true,
      leaseSeconds: 60,
    });
    await append(stream, "AttemptStarted", {
      attempt: 1,
      token: "tok-train-1-abcdef",
      workerId: "gpu-1",
      leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    await row.locator(`[data-task="${TRAIN}"]`).waitFor({ timeout: 60_000 });
    expect(await row.getByTestId("load").textContent()).toBe("1/2");
    expect(await row.getByTestId("heard").textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    expect(await row.getByTestId("running").textContent()).toContain(TRAIN);
  });

  it("shows a worker gone with why, and it leaves the connected ones", async () => {
    await append("worker-gpu-1", "WorkerDisconnected", {
      worker: "gpu-1",
      reason: "heartbeats stopped for 30 s",
    });
    const gone = page.locator('[data-testid=gone] tr[data-worker="gpu-1"]');
    await gone.waitFor({ timeout: 60_000 });
    expect(await gone.getByTestId("reason").textContent()).toBe("heartbeats stopped for 30 s");
    await page.getByTestId("no-workers").waitFor();
    expect((page as Page & { errors?: string[] }).errors).toEqual([]);
  });

  it("a task's page names its queue, a link to the workers", async () => {
    await open(page, p.url, `#/task/${encodeURIComponent(TRAIN)}`, "where");
    expect(await page.getByTestId("queue").textContent()).toBe("gpu");
    // Its attempt is still in flight on the worker gone, until the reconcile loop settles it.
    expect(await page.getByTestId("reasons").textContent()).toContain("is running on gpu-1");
    await page.getByTestId("queue").click();
    await page.getByTestId("gone").waitFor();
  });
});

// Makes the README's screenshots of the web UI (docs/screenshots/*.png): a `chronolog up
// --example` with a failing workflow beside it, in Debian's Chromium. Run after a build:
//   node scripts/screenshots.mjs
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "services/cli/bin/chronolog.mjs");
const out = join(root, "docs/screenshots");
const dir = mkdtempSync(join(tmpdir(), "chronolog-screenshots-"));
// Actors name an operator and a host of the example's, not whoever made the screenshots.
const env = {
  ...process.env,
  USER: "ops",
  CHRONOLOG_HOST: "scheduler-1",
  CHRONOLOG_LOG_FORMAT: "json",
  CHRONOLOG_LOG_LEVEL: "info",
};
const run = (args) => {
  const r = spawnSync(process.execPath, [cli, "--data-dir", dir, ...args], { encoding: "utf8", env });
  if (r.status !== 0) throw new Error(`chronolog ${args.join(" ")}: ${r.stderr}`);
  return r.stdout.trim();
};

const yesterday = new Date(Date.now() - 86_400_000);
yesterday.setUTCHours(0, 0, 0, 0);
writeFileSync(
  join(dir, "nightly.yaml"),
  `workflows:
  - name: nightly
    project: ops
    account: acme
    cron: "0 0 * * *"
    startDate: "${yesterday.toISOString()}"
    tasks:
      - name: extract
        operator: { type: shell, command: "echo extracting; echo bad input >&2; exit 3" }
        retry: { maxAttempts: 1 }
      - name: load
        parents: [extract]
        operator: { type: shell, command: "echo load" }
      - name: audit
        operator: { type: shell, command: "sleep 0.3; echo audited" }
`,
);
run(["declare", join(dir, "nightly.yaml")]);
const token = run(["token", "create", "screenshots", "--scope", "operate"]);
const child = spawn(process.execPath, [cli, "--data-dir", dir, "up", "--example", "--http", "127.0.0.1:0"], {
  env,
  stdio: ["ignore", "pipe", "pipe"],
});
let text = "";
const url = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error(`no "api listening":\n${text}`)), 30_000);
  const on = (chunk) => {
    text += chunk;
    const m = /"url":"([^"]+)"[^\n]*"msg":"api listening"/.exec(text);
    if (m) {
      clearTimeout(timer);
      resolve(m[1]);
    }
  };
  child.stdout.on("data", on);
  child.stderr.on("data", on);
});

const api = async (path) =>
  (await fetch(`${url}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } })).json();
const until = async (what, check) => {
  for (let i = 0; i < 150; i++) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
};
const daily = await until("a daily run of the example to succeed", async () =>
  (await api("/runs?workflow=orders_daily")).find((r) => r.status === "success"),
);
await until("the nightly run to finish", async () =>
  (await api("/runs?workflow=nightly")).find((r) => r.status !== "running"),
);

const profile = mkdtempSync(join(tmpdir(), "chronolog-screenshots-profile-"));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"],
  viewport: { width: 1280, height: 720 },
});
try {
  mkdirSync(out, { recursive: true });
  const page = await browser.newPage();
  await page.goto(`${url}/#/grid`);
  await page.fill("input[name=token]", token);
  await page.press("input[name=token]", "Enter");
  await page.locator("table.grid tbody tr").first().waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, "grid.png") });

  await page.goto(`${url}/#/graph`);
  await page.locator("g.node").first().waitFor();
  await page.locator('g.node[data-task="sales/acme/orders_daily_report/ALL"]').hover();
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(out, "graph.png") });

  await page.goto(`${url}/#/run/${encodeURIComponent(daily.runId)}`);
  await page.getByTestId("gantt").waitFor();
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(out, "run-gantt.png"), fullPage: true });

  await page.goto(`${url}/#/task/${encodeURIComponent("sales/acme/orders_enriched/ALL")}`);
  await page.locator("[data-testid=history] li").first().waitFor();
  await page.waitForTimeout(500);
  await page.getByRole("heading", { name: "History" }).scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(out, "task-history.png") });
  console.log(`screenshots written to ${out}`);
} finally {
  await browser.close();
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  rmSync(profile, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
}

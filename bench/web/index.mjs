// bench/web: the web UI's time to first render, the grid's and the graph's, with 2,000 and 10,000
// tasks (workflows of 20 tasks in chains with a fan-in, across projects), in Debian's Chromium.
// The server is the real HTTP API on a loopback port, serving the built UI; each page is loaded
// afresh three times, and the table shows the median (targets: grid < 1 s, graph < 3 s).
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { issueToken, startApiServer } from "@chronolog/api";
import { parseDeclarationText, SchedulerProjection } from "@chronolog/core";
import { openSqliteLog } from "@chronolog/log-sqlite";
import { declare } from "@chronolog/scheduler";
import { chromium } from "playwright-core";
import { fmt, printTable } from "../table.mjs";

const CHROMIUM = "/usr/bin/chromium";
if (!existsSync(CHROMIUM)) {
  console.log(`bench/web: skipped, no ${CHROMIUM} (apt-get install chromium)`);
  process.exit(0);
}
const SIZES = process.env.BENCH_QUICK === "1" ? [2000] : [2000, 10_000];
const TARGETS = { grid: 1000, graph: 3000 };
const RUNS = 3;

/** `n` tasks: workflows of 20, each a chain of 19 with one task joining the last three. */
function declaration(n) {
  const start = new Date(Date.now() - 86_400_000);
  start.setUTCHours(0, 0, 0, 0);
  const workflows = [];
  for (let w = 0; w * 20 < n; w++) {
    const tasks = [];
    for (let i = 0; i < Math.min(20, n - w * 20); i++) {
      const t = (k) => `w${w}_t${k}`;
      const parents = i === 0 ? [] : i === 19 ? [t(16), t(17), t(18)] : [t(i - 1)];
      tasks.push({ name: t(i), parents, operator: { type: "noop" } });
    }
    workflows.push({
      name: `wf${w}`,
      project: `p${w % 10}`,
      account: "acme",
      cron: "0 2 * * *",
      startDate: start.toISOString(),
      tasks,
    });
  }
  return JSON.stringify({ workflows });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const profile = mkdtempSync(join(tmpdir(), "chronolog-bench-web-profile-"));
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
  viewport: { width: 1280, height: 900 },
});
const rows = [];
try {
  for (const n of SIZES) {
    const dir = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "chronolog-bench-web-"));
    const log = openSqliteLog({ path: join(dir, "log.db"), actor: "bench" });
    const t0 = performance.now();
    const source = parseDeclarationText(declaration(n), { filename: "bench.json", format: "json" });
    await declare(log, new SchedulerProjection(), [source], Date.now());
    const declaredMs = performance.now() - t0;
    const { token } = await issueToken(log, { name: "bench", scope: "read" });
    const server = await startApiServer({ log, dataDir: dir, listen: "127.0.0.1:0" });
    const page = await browser.newPage();
    try {
      await page.goto(`${server.url}/#/grid`);
      await page.fill("input[name=token]", token);
      await page.press("input[name=token]", "Enter");
      await page.locator("table.grid tbody tr").first().waitFor({ timeout: 60_000 });
      const times = { grid: [], graph: [] };
      const probes = { grid: "table.grid tbody tr", graph: "svg.graph g.node" };
      for (let r = 0; r < RUNS; r++)
        for (const view of ["grid", "graph"]) {
          // A fresh load of the page (the token stays in this tab's sessionStorage).
          await page.goto("about:blank");
          const start = performance.now();
          await page.goto(`${server.url}/#/${view}`);
          await page.locator(probes[view]).first().waitFor({ timeout: 60_000 });
          times[view].push(performance.now() - start);
        }
      const nodes = await page.locator("svg.graph g.node").count();
      // Scrolled half way down, the graph draws the nodes there instead.
      const top = await page.locator("svg.graph g.node").first().getAttribute("data-task");
      await page.locator(".graph-wrap").evaluate((el) => {
        el.scrollTop = el.scrollHeight / 2;
      });
      await page.waitForFunction(
        (before) => document.querySelector("svg.graph g.node")?.getAttribute("data-task") !== before,
        top,
        { timeout: 10_000 },
      );
      for (const view of ["grid", "graph"]) {
        const ms = median(times[view]);
        rows.push([
          view,
          fmt(n),
          view === "graph" ? fmt(nodes) : "100 a page",
          fmt(ms),
          `< ${fmt(TARGETS[view])}`,
          ms < TARGETS[view] ? "yes" : "NO",
        ]);
      }
      console.log(`${fmt(n)} tasks declared in ${fmt(declaredMs)} ms`);
    } finally {
      await page.close();
      await server.close();
      await log.close?.();
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log();
printTable(["page", "tasks", "drawn (in view)", "first render (ms, median of 3)", "target", "met"], rows);

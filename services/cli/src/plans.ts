import { describeCancelled } from "@chronolog/core";
import type { BackfillCancel, BackfillPlan, RunOperation } from "@chronolog/scheduler";
import { short } from "./format.js";

/** How a dry run starts: nothing was written, and what follows is what would be. */
const DRY = "dry run, nothing written:";

const intervals = (n: number) => (n === 1 ? "1 interval" : `${n} intervals`);

/**
 * A backfill's plan in lines, the same before (a dry run) and after it is carried out: every
 * task reset with its range, what its own rules changed, the pending backfill it joined, and
 * every task skipped with why.
 */
export function backfillLines(plan: BackfillPlan): string[] {
  const lines: string[] = [];
  if (plan.dryRun) lines.push(`${DRY} without --dry-run the backfill would`);
  for (const t of plan.targets) {
    lines.push(`reset ${t.task}: ${intervals(t.intervals)} ${short(t.from)} .. ${short(t.until)}`);
    for (const note of t.notes) lines.push(`  ${note}`);
    if (t.merged)
      lines.push(
        `  ${t.merged.how === "joined" ? "joined" : "takes over"} ${t.merged.was}; it now walks ${short(t.merged.from)} .. ${short(t.merged.until)}`,
      );
  }
  for (const s of plan.skipped) lines.push(`skipped ${s.task}: ${s.reason}`);
  if (plan.targets.length === 0) lines.push("nothing to reset");
  else
    lines.push(
      plan.priority !== undefined
        ? `its intervals compete for slots at priority ${plan.priority}`
        : "its intervals wait for slots after every scheduled interval (--priority N to change it)",
    );
  if (!plan.dryRun)
    for (const backfillId of new Set(plan.targets.map((t) => t.backfillId)))
      lines.push(`backfill ${backfillId}`);
  return lines;
}

/**
 * A backfill's cancel in lines, the same before (a dry run) and after: each task with where it
 * stood and where it returns to (or the interval it finishes first), and each run's interval
 * closed as cancelled.
 */
export function cancelLines(c: BackfillCancel): string[] {
  const head = `backfill ${c.backfillId} ${c.dryRun ? "would be cancelled" : "cancelled"}:`;
  const lines = [c.dryRun ? `${DRY} ${head}` : head];
  for (const t of c.targets) lines.push(`  ${describeCancelled(t)}`);
  for (const r of c.runTasks) lines.push(`  run ${r.runId}: ${r.task} cancelled`);
  return lines;
}

/**
 * A trigger's or rerun's plan in lines, the same before (a dry run) and after: the run and its
 * try, then each task with its interval, what it joins, and the tasks kept.
 */
export function runLines(r: RunOperation): string[] {
  const verb =
    r.trigger === "rerun"
      ? r.dryRun
        ? "would rerun"
        : "rerunning"
      : r.dryRun
        ? "would start run"
        : "started run";
  const head = `${verb} ${r.runId} (try ${r.try}) with ${r.tasks.length === 1 ? "1 task" : `${r.tasks.length} tasks`}:`;
  const lines = [r.dryRun ? `${DRY} ${head}` : head];
  const width = r.intervals.reduce((w, t) => Math.max(w, t.task.length), 0);
  for (const t of r.intervals) {
    lines.push(`  ${t.task.padEnd(width)}  ${short(t.interval)}`);
    for (const note of t.notes) lines.push(`    ${note}`);
    if (t.merged)
      lines.push(
        `    ${t.merged.how === "joined" ? "joins" : "takes over"} ${t.merged.was}; it walks ${short(t.merged.from)} .. ${short(t.merged.until)}`,
      );
  }
  if (r.kept.length > 0) lines.push(`kept (their outcome stands): ${r.kept.join(", ")}`);
  if (Object.keys(r.params).length > 0 && r.trigger !== "rerun")
    lines.push(
      `params ${Object.entries(r.params)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}`,
    );
  return lines;
}

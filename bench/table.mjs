import { readFileSync } from "node:fs";

/** Prints rows as an aligned text table. */
export function printTable(headers, rows) {
  const cells = [headers, ...rows.map((r) => r.map((c) => String(c)))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of cells.slice(1)) console.log(line(r));
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export const fmt = (n, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "n/a";

/** A logger for the scheduler under a bench: errors only. */
export const silent = {
  info() {},
  warn() {},
  debug() {},
  error(o, m) {
    console.error(m, o);
  },
};

/** Resolves once `check()` holds, looking every millisecond; throws after `timeoutMs`. */
export async function waitFor(check, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("benchmark timed out");
    await new Promise((r) => setTimeout(r, 1));
  }
}

/**
 * The flags the `chronolog` command gives node (on the line of its file that starts node), so
 * that a bench running the scheduler in its own process, or starting the CLI with
 * `process.execPath`, runs it as the command does.
 */
export function cliNodeFlags() {
  const bin = new URL("../services/cli/bin/chronolog.mjs", import.meta.url);
  for (const line of readFileSync(bin, "utf8").split("\n", 3)) {
    const m = /exec node (.*) "\$0" "\$@"$/.exec(line);
    if (m) return m[1].trim().split(/\s+/).filter(Boolean);
  }
  return [];
}

import { type AlertState, alertMessage, counted } from "@chronolog/core";
import type { Command } from "commander";
import type { DataDirOptions } from "../data-dir.js";
import { toJson } from "../edge.js";
import { listing, short } from "../format.js";
import { withSession } from "../projection.js";

/** Where an alert's deliveries stand, in words. */
function deliveryOf(a: AlertState): string {
  return a.sinks
    .map((s, i) => {
      const sink = a.raised.sinks[i];
      const what =
        sink?.command !== undefined ? "command" : `${sink?.http?.method ?? "POST"} ${sink?.http?.url ?? ""}`;
      if (s.delivered) return `${what}: delivered${s.attempts > 1 ? ` (try ${s.attempts})` : ""}`;
      if (s.retryAt === null)
        return `${what}: gave up after ${counted(s.attempts, "try", "tries")}: ${s.lastError ?? ""}`;
      return s.attempts === 0
        ? `${what}: being delivered`
        : `${what}: try ${s.attempts} failed (${s.lastError ?? ""}); next try ${short(s.retryAt)}`;
    })
    .join("; ");
}

export function registerAlertsCommand(program: Command, globals: () => DataDirOptions): void {
  program
    .command("alerts")
    .description(
      "alerts raised (a task halted, an attempt needs an operator, a run failed) and their deliveries",
    )
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) => {
      await withSession(globals(), "read", async ({ projection }) => {
        const alerts = [...projection.alerts.values()].reverse();
        if (opts.json) {
          console.log(
            toJson(alerts.map((a) => ({ ...a, message: alertMessage(a.raised), delivery: deliveryOf(a) }))),
          );
          return;
        }
        console.log(
          listing(
            ["RAISED", "KIND", "MESSAGE", "DELIVERY"],
            alerts.map((a) => [short(a.raisedAt), a.raised.kind, alertMessage(a.raised), deliveryOf(a)]),
            "no alerts",
          ),
        );
      });
    });
}

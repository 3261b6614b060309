import { post } from "../api";
import { go } from "../router";
import type { Triggered, Whoami } from "../schemas";
import { ActionButton } from "./action-button";

/** `region=eu, day=2026-12-01` as params: NAME=VALUE pairs, comma-separated. */
export const parseParams = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => [s.slice(0, s.indexOf("=")), s.slice(s.indexOf("=") + 1)]),
  );

/** Triggers a run of `workflow` (asking for its params and logical date), then opens it. */
export function TriggerButton({ who, workflow }: { who: Whoami | null; workflow: string }) {
  return (
    <ActionButton
      who={who}
      label={`Trigger ${workflow}`}
      title={`Trigger a run of ${workflow}`}
      what={`This starts a run of workflow ${workflow} now, outside its schedule (logical date: now, unless you give one), with the params below (NAME=VALUE, comma-separated).`}
      fields={[
        { name: "params", label: "Params", placeholder: "region=eu, day=..." },
        { name: "logicalDate", label: "Logical date (optional)", placeholder: "2026-12-01T00:00Z" },
      ]}
      ok="Trigger"
      run={async (v) => {
        const params = parseParams(v.params ?? "");
        const body = { params, ...(v.logicalDate ? { logicalDate: v.logicalDate } : {}) };
        const r = await post("/api/v1/workflows/{name}/runs", { path: { name: workflow }, body });
        const runId = (r.value as Triggered | null)?.runId;
        if (runId) go("run", runId);
      }}
    />
  );
}

import { get, post } from "../api";
import { go } from "../router";
import type { Triggered, Whoami } from "../schemas";
import { useLoad } from "../use-load";
import { ActionButton, canOperate } from "./action-button";

/** `region=eu, day=2026-12-01` as params: NAME=VALUE pairs, comma-separated. */
export const parseParams = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => [s.slice(0, s.indexOf("=")), s.slice(s.indexOf("=") + 1)]),
  );

/** The params field of a workflow's trigger: each declared param at its default, or none. */
export function paramsField(params: Readonly<Record<string, string>> | undefined) {
  const names = Object.keys(params ?? {}).sort();
  if (names.length === 0) return null;
  return {
    name: "params",
    label: `Params (${names.join(", ")})`,
    value: names.map((n) => `${n}=${params?.[n] ?? ""}`).join(", "),
  };
}

/** Triggers a run of `workflow` (asking for its params and logical date), then opens it. */
export function TriggerButton({ who, workflow }: { who: Whoami | null; workflow: string }) {
  const wfs = useLoad(() => (canOperate(who) ? get("/api/v1/workflows") : Promise.resolve(null)), [workflow]);
  // (Shown once the workflow's params are known: the dialog offers exactly those.)
  if (!wfs.data) return null;
  const spec = (wfs.data?.value ?? []).find((w) => w.name === workflow);
  const field = paramsField(spec?.params);
  const params = field
    ? `with its params below (NAME=VALUE, comma-separated; each at its declared default unless you change it)`
    : "(it declares no params)";
  return (
    <ActionButton
      who={who}
      label={`Trigger ${workflow}`}
      title={`Trigger a run of ${workflow}`}
      what={`This starts a run of workflow ${workflow} outside its schedule, for the logical date you give, or by default the latest interval that has ended, ${params}.`}
      fields={[
        ...(field ? [field] : []),
        {
          name: "logicalDate",
          label: "Logical date (optional: the latest interval that has ended)",
          placeholder: "2026-12-01T00:00Z",
        },
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

import type { TaskKey } from "@chronolog/core";
import { TemplateError } from "./errors.js";

/** What a render needs: the task, its interval, and the values templates may read. */
export interface RenderContext {
  readonly task: TaskKey;
  /** The interval being run for (ISO instant); also the start of the data interval by default. */
  readonly logicalDate: string;
  /** End of the data interval (ISO instant): the next cron slot after the logical date. */
  readonly dataIntervalEnd: string;
  /** Defaults to `logicalDate`. */
  readonly dataIntervalStart?: string;
  /** The interval the task last finished; `null` (renders as empty) when none. */
  readonly prevIntervalStart?: string | null;
  /**
   * The task's IANA time zone (default `UTC`): `ds`, `ds_nodash`, `ts`, `ts_nodash` and the
   * `date` filter are in it, so a daily 02:00 Asia/Tokyo task's `ds` is the Tokyo date.
   */
  readonly timezone?: string;
  /** The merged config (workflow -> task -> inline). */
  readonly config?: Readonly<Record<string, unknown>>;
  /** The run's parameters: the workflow's declared defaults, overridden by `trigger --param`. */
  readonly params?: Readonly<Record<string, string>>;
  /**
   * The names of the params the workflow declares. When given, a template that reads any other
   * param (even under `| default:` or `{% if %}`) fails: `declare` checks templates this way.
   */
  readonly declaredParams?: readonly string[];
  /**
   * The names of the task's secrets: an http operator's headers and body may write
   * `{{ secrets.NAME }}`, rendered as a placeholder the worker fills in with the value it resolves.
   */
  readonly secrets?: readonly string[];
}

/**
 * A secret as templates see it: a reference, written out as `{{ secrets.NAME }}` (the
 * placeholder the worker replaces with the value). Any filter or `raw` is refused: the count of
 * placeholders written is checked against the count of references output.
 */
export class SecretRef {
  constructor(readonly name: string) {}
  get placeholder(): string {
    return `{{ secrets.${this.name} }}`;
  }
  /** Called only when a filter or `raw` turns the reference into text: noted, and refused. */
  toString(): string {
    if (renderWatch.current) renderWatch.current.secretMisused = true;
    return this.placeholder;
  }
}

/** `{{ secrets.NAME }}` as the scheduler writes it into a payload for the worker to fill in. */
export const SECRET_PLACEHOLDER = /\{\{ secrets\.([A-Za-z_][A-Za-z0-9_]*) \}\}/g;

/**
 * What the render under way has read: set by `renderTemplateWith` around one synchronous render,
 * read by the params object and by the `raw` filter (rendering is synchronous, so one slot
 * suffices).
 */
export const renderWatch: {
  current:
    | { paramsRead: boolean; rawUsed: boolean; secretsOut?: number; secretMisused?: boolean }
    | undefined;
} = {
  current: undefined,
};

/**
 * The params as templates see them: a plain-data object whose every read is noted (so that a
 * `raw` output can be refused in a template that reads params), and, with `declared`, that
 * refuses a name the workflow does not declare.
 */
function watchedParams(
  params: Record<string, string>,
  declared: readonly string[] | undefined,
): Record<string, string> {
  const known = declared ? new Set(declared) : undefined;
  const read = () => {
    if (renderWatch.current) renderWatch.current.paramsRead = true;
  };
  // A template reads a param through an own-property test (the engine reads own properties
  // only), so that is where a name is checked; other reads are only noted.
  const check = (key: string | symbol) => {
    read();
    if (known && typeof key === "string" && !known.has(key) && !Object.hasOwn(params, key)) {
      const list = known.size > 0 ? `its params are ${[...known].sort().join(", ")}` : "it declares none";
      throw new Error(`undefined param "params.${key}": the workflow does not declare it (${list})`);
    }
  };
  return new Proxy(params, {
    get(target, key, receiver) {
      read();
      return Reflect.get(target, key, receiver);
    },
    has(target, key) {
      read();
      return Reflect.has(target, key);
    },
    getOwnPropertyDescriptor(target, key) {
      check(key);
      return Reflect.getOwnPropertyDescriptor(target, key);
    },
    ownKeys(target) {
      read();
      return Reflect.ownKeys(target);
    },
  });
}

/** The variables a template sees. */
export interface TemplateVariables {
  readonly config: Readonly<Record<string, unknown>>;
  readonly params: Readonly<Record<string, string>>;
  /** `YYYY-MM-DD` of the logical date in the task's time zone. */
  readonly ds: string;
  /** `YYYYMMDD`. */
  readonly ds_nodash: string;
  /** The logical date in the task's time zone with its offset: `2026-11-01T02:00:00+00:00`. */
  readonly ts: string;
  /** `YYYYMMDDTHHMMSS` in the task's time zone. */
  readonly ts_nodash: string;
  /** UTC ISO instants, as in the log: `2026-11-01T02:00:00.000Z`. */
  readonly logical_date: string;
  readonly data_interval_start: string;
  readonly data_interval_end: string;
  readonly prev_interval_start: string | null;
  /** Only where secrets may be written (an http operator's headers and body). */
  readonly secrets?: Readonly<Record<string, SecretRef>>;
  readonly task: {
    readonly project: string;
    readonly account: string;
    readonly name: string;
    readonly partition: string;
  };
}

function instant(value: string, what: string): Date {
  const date = new Date(value);
  if (typeof value !== "string" || Number.isNaN(date.getTime())) {
    throw new TemplateError(
      `context.${what}`,
      "context",
      `${what} ${JSON.stringify(value)} is not an ISO instant`,
    );
  }
  return date;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat("en-US", {
        timeZone: timezone,
        hourCycle: "h23",
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        second: "2-digit",
      });
    } catch {
      throw new TemplateError("context.timezone", "context", `unknown time zone ${JSON.stringify(timezone)}`);
    }
    if (formatters.size > 256) formatters.clear();
    formatters.set(timezone, f);
  }
  return f;
}

/** Wall-clock fields of an instant in a time zone, and that zone's offset from UTC in minutes. */
export function zonedParts(date: Date, timezone: string) {
  const parts: Record<string, string> = {};
  for (const p of formatter(timezone).formatToParts(date)) parts[p.type] = p.value;
  const field = (k: string) => Number(parts[k]);
  const wallAsUtc = Date.UTC(
    field("year"),
    field("month") - 1,
    field("day"),
    field("hour"),
    field("minute"),
    field("second"),
  );
  const offsetMinutes = Math.round((wallAsUtc - Math.floor(date.getTime() / 1000) * 1000) / 60_000);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return {
    date: `${pad(field("year"), 4)}-${pad(field("month"))}-${pad(field("day"))}`,
    time: `${pad(field("hour"))}:${pad(field("minute"))}:${pad(field("second"))}`,
    offset: `${offsetMinutes < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`,
  };
}

/** Builds the template variables: `config`, `params`, and the builtins of the logical date. */
export function templateVariables(context: RenderContext): TemplateVariables {
  const timezone = context.timezone ?? "UTC";
  const logical = instant(context.logicalDate, "logicalDate");
  const start = instant(context.dataIntervalStart ?? context.logicalDate, "dataIntervalStart");
  const end = instant(context.dataIntervalEnd, "dataIntervalEnd");
  const prev =
    context.prevIntervalStart == null ? null : instant(context.prevIntervalStart, "prevIntervalStart");
  const local = zonedParts(logical, timezone);
  const entries = Object.entries(context.params ?? {});
  for (const [k, v] of entries) {
    if (typeof v !== "string") {
      throw new TemplateError(`params.${k}`, "context", "params must be strings");
    }
  }
  // fromEntries defines own properties, so even a `__proto__` key stays plain data.
  const params = Object.fromEntries(entries) as Record<string, string>;
  return {
    config: context.config ?? {},
    params: watchedParams(params, context.declaredParams),
    ds: local.date,
    ds_nodash: local.date.replaceAll("-", ""),
    ts: `${local.date}T${local.time}${local.offset}`,
    ts_nodash: `${local.date.replaceAll("-", "")}T${local.time.replaceAll(":", "")}`,
    logical_date: logical.toISOString(),
    data_interval_start: start.toISOString(),
    data_interval_end: end.toISOString(),
    prev_interval_start: prev ? prev.toISOString() : null,
    task: {
      project: context.task.project,
      account: context.task.account,
      name: context.task.name,
      partition: context.task.partition,
    },
  };
}

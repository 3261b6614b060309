// The live connection to the log's events, and the hooks pages follow it with.
import { useEffect, useState } from "preact/hooks";
import { getToken } from "./api";

/** What the live tail shows of an event (its data as sent, when it parses). */
export interface LiveEvent {
  readonly position: string;
  readonly type: string;
  readonly streamId: string;
  readonly metadata?: { readonly actor?: string };
}
export type LiveStatus = "connecting" | "live" | "lost";
type Listener = (event: LiveEvent | null) => void;

/** The live connection: one EventSource, resumed from the last position seen. */
class Live {
  readonly listeners = new Set<Listener>();
  readonly statusListeners = new Set<(s: LiveStatus) => void>();
  status: LiveStatus = "connecting";
  last: bigint | null = null;
  private source: EventSource | null = null;
  private types: readonly string[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;

  start(types: readonly string[], from?: string): void {
    this.types = types;
    if (this.last === null && from !== undefined) this.last = BigInt(from);
    this.open();
  }

  private open(): void {
    this.source?.close();
    const q = new URLSearchParams({ access_token: getToken() ?? "" });
    if (this.last !== null) q.set("from", String(this.last + 1n));
    const source = new EventSource(`/api/v1/events?${q}`);
    this.source = source;
    const onEvent = (ev: MessageEvent<string>) => {
      if (ev.lastEventId) this.last = BigInt(ev.lastEventId);
      let data: LiveEvent | null = null;
      try {
        data = JSON.parse(ev.data);
      } catch {}
      for (const l of this.listeners) l(data);
      this.setStatus("live");
    };
    for (const t of this.types) source.addEventListener(t, onEvent);
    source.addEventListener("dropped", () => this.reconnect());
    source.onopen = () => this.setStatus("live");
    source.onerror = () => {
      this.setStatus("lost");
      // The browser retries on its own with Last-Event-ID; a closed source is reopened here.
      if (source.readyState === EventSource.CLOSED) this.reconnect();
    };
  }

  private reconnect(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.open(), 1000);
  }

  stop(): void {
    this.source?.close();
    this.source = null;
    clearTimeout(this.timer);
  }

  private setStatus(s: LiveStatus): void {
    if (s === this.status) return;
    this.status = s;
    for (const l of this.statusListeners) l(s);
  }
}

export const live = new Live();

/** A counter that goes up (at most every 250 ms) when events arrive: pages reload on it. */
export function useLiveTick(enabled = true): number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!enabled) return undefined;
    let pending: ReturnType<typeof setTimeout> | null = null;
    const l = () => {
      pending ??= setTimeout(() => {
        pending = null;
        setTick((t) => t + 1);
      }, 250);
    };
    live.listeners.add(l);
    return () => {
      live.listeners.delete(l);
      if (pending !== null) clearTimeout(pending);
    };
  }, [enabled]);
  return tick;
}

export function useLiveStatus(): { status: LiveStatus; last: bigint | null } {
  const [s, setS] = useState(live.status);
  useEffect(() => {
    live.statusListeners.add(setS);
    // The status may have changed between the render and this effect: read it again.
    setS(live.status);
    return () => live.statusListeners.delete(setS);
  }, []);
  return { status: s, last: live.last };
}

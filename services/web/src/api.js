// The UI's only way to the scheduler: the HTTP API, with the token kept in sessionStorage.
import { useEffect, useState } from "preact/hooks";

const KEY = "chronolog.token";

export const getToken = () => sessionStorage.getItem(KEY);
export const setToken = (t) => sessionStorage.setItem(KEY, t);
export const clearToken = () => sessionStorage.removeItem(KEY);

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

const withAt = (path, at) =>
  at === undefined || at === null || at === "" ? path : `${path}${path.includes("?") ? "&" : "?"}at=${at}`;

async function call(method, path, body) {
  const headers = { authorization: `Bearer ${getToken()}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const type = res.headers.get("content-type") ?? "";
  const value = /json/.test(type) && text ? JSON.parse(text) : text;
  if (!res.ok) throw new ApiError(res.status, value?.detail ?? value?.title ?? `${res.status}`);
  return { value, asOf: res.headers.get("chronolog-as-of") };
}

export const get = (path, at) => call("GET", withAt(path, at));
export const post = (path, body) => call("POST", path, body);
export const key = (task) => encodeURIComponent(task);

/** The live connection: one EventSource, resumed from the last position seen. */
class Live {
  listeners = new Set();
  status = "connecting";
  last = null;
  source = null;
  types = [];
  statusListeners = new Set();
  timer = null;

  start(types, from) {
    this.types = types;
    if (this.last === null && from !== undefined) this.last = BigInt(from);
    this.open();
  }

  open() {
    this.source?.close();
    const q = new URLSearchParams({ access_token: getToken() ?? "" });
    if (this.last !== null) q.set("from", String(this.last + 1n));
    const source = new EventSource(`/api/v1/events?${q}`);
    this.source = source;
    const onEvent = (ev) => {
      if (ev.lastEventId) this.last = BigInt(ev.lastEventId);
      let data = null;
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

  reconnect() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.open(), 1000);
  }

  stop() {
    this.source?.close();
    this.source = null;
    clearTimeout(this.timer);
  }

  setStatus(s) {
    if (s === this.status) return;
    this.status = s;
    for (const l of this.statusListeners) l(s);
  }
}

export const live = new Live();

/** A counter that goes up (at most every 250 ms) when events arrive: pages reload on it. */
export function useLiveTick(enabled = true) {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!enabled) return undefined;
    let pending = null;
    const l = () => {
      pending ??= setTimeout(() => {
        pending = null;
        setTick((t) => t + 1);
      }, 250);
    };
    live.listeners.add(l);
    return () => {
      live.listeners.delete(l);
      clearTimeout(pending);
    };
  }, [enabled]);
  return tick;
}

export function useLiveStatus() {
  const [s, setS] = useState(live.status);
  useEffect(() => {
    live.statusListeners.add(setS);
    // The status may have changed between the render and this effect: read it again.
    setS(live.status);
    return () => live.statusListeners.delete(setS);
  }, []);
  return { status: s, last: live.last };
}

/** Loads `fn()` again whenever a dependency changes; { data, error, loading }. */
export function useLoad(fn, deps) {
  const [r, setR] = useState({ data: null, error: null, loading: true });
  useEffect(() => {
    let stale = false;
    fn().then(
      (data) => !stale && setR({ data, error: null, loading: false }),
      (error) => !stale && setR((x) => ({ data: x.data, error, loading: false })),
    );
    return () => {
      stale = true;
    };
  }, deps);
  return r;
}

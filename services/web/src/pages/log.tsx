import { useEffect, useState } from "preact/hooks";
import { get, post } from "../api";
import { Banner } from "../components/banner";
import { Slider } from "../components/slider";
import { time } from "../format";
import { type LiveEvent, live, useLiveTick } from "../live";
import { go, href } from "../router";
import type { Verify } from "../schemas";
import { useLoad } from "../use-load";

const PAGE_SIZE = 50;

/** The log: its head, a check of its hash chain, its events a page at a time, and the live tail. */
export function LogPage({ q }: { q: URLSearchParams }) {
  const at = q.get("at");
  const tick = useLiveTick(true);
  const head = useLoad(() => get("/api/v1/log/head"), [tick]);
  const headPos = Number(head.data?.value.position ?? -1);
  const from = q.get("from") ?? (at ? String(Math.max(0, Number(at) - PAGE_SIZE + 1)) : null);
  const start = from ?? String(Math.max(0, headPos - PAGE_SIZE + 1));
  const r = useLoad(
    () => get("/api/v1/log", { query: { from: start, limit: PAGE_SIZE } }),
    [start, from === null ? tick : 0],
  );
  const [verify, setVerify] = useState<Verify | { running: true } | null>(null);
  const [tail, setTail] = useState<LiveEvent[]>([]);
  useEffect(() => {
    const l = (e: LiveEvent | null) => e && setTail((t) => [e, ...t].slice(0, 500));
    live.listeners.add(l);
    return () => live.listeners.delete(l);
  }, []);
  const events = (r.data?.value.events ?? []).filter((e) => !at || Number(e.position) <= Number(at));
  const next = r.data?.value.next;
  const last = Number(start) + events.length - 1;
  // The latest page: nothing newer to go to (as of the position shown, in time travel).
  const latest = !next || last >= (at ? Number(at) : headPos);
  return (
    <section>
      <Banner at={at} asOf={at ? `${at}` : null} />
      <h1>Log</h1>
      <div class="card">
        <p data-testid="head">
          {"Head: position "}
          <strong>{head.data?.value.position ?? "…"}</strong>
          {", hash "}
          <code>{head.data?.value.hash ?? ""}</code>
        </p>
        <button
          type="button"
          data-testid="verify"
          onClick={async () => {
            setVerify({ running: true });
            setVerify((await post("/api/v1/log/verify")).value);
          }}
        >
          Verify the hash chain
        </button>
        {verify && !("running" in verify) && (
          <p data-testid="verify-result" class={verify.ok ? "ok" : "error"}>
            {verify.ok ? "intact" : `broken at ${verify.break?.position}: ${verify.break?.reason}`}:{" "}
            {`${verify.checked} events checked, head ${verify.headPosition} `}
            <code>{verify.headHash}</code>
          </p>
        )}
      </div>
      {head.data && <Slider at={at} max={Math.max(0, headPos)} page="log" arg="" />}
      <div class="pager">
        <button
          type="button"
          disabled={Number(start) <= 0}
          onClick={() => go("log", "", { at, from: Math.max(0, Number(start) - PAGE_SIZE) })}
        >
          ‹ Older
        </button>
        <span data-testid="log-range">{`positions ${start}–${last}`}</span>
        <button
          type="button"
          data-testid="newer"
          disabled={latest}
          onClick={() => go("log", "", { at, from: next })}
        >
          Newer ›
        </button>
        <a href={href("log", "", { at })}>latest</a>
      </div>
      <table class="list" data-testid="log">
        <thead>
          <tr>
            <th>#</th>
            <th>time</th>
            <th>type</th>
            <th>stream</th>
            <th>actor</th>
          </tr>
        </thead>
        <tbody>
          {events
            .slice()
            .reverse()
            .map((e) => (
              <tr data-position={e.position}>
                <td>
                  <a href={href("log", "", { at: e.position })}>{e.position}</a>
                </td>
                <td>{time(e.metadata.recordedAt)}</td>
                <td>{e.type}</td>
                <td>{e.streamId}</td>
                <td>{e.metadata.actor ?? "—"}</td>
              </tr>
            ))}
        </tbody>
      </table>
      <h2>Live tail</h2>
      {tail.length === 0 && (
        <p class="empty-note" data-testid="tail-empty">
          {at
            ? `Nothing yet: this page shows the log as of position ${at}, and the events written from now on appear here as they come.`
            : `Nothing written since this page opened (the head is at position ${head.data?.value.position ?? "…"}): each event appears here as it is written.`}
        </p>
      )}
      <ol class="timeline" data-testid="tail" hidden={tail.length === 0}>
        {tail.map((e) => (
          <li data-position={e.position}>
            <span class="pos">#{e.position}</span> <strong>{e.type}</strong> {e.streamId}{" "}
            <span class="actor">{e.metadata?.actor ?? ""}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}

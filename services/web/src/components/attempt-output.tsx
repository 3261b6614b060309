import { useEffect, useState } from "preact/hooks";
import { getToken } from "../api";

/** A running attempt's output as it comes (`?follow=true`), its last lines shown. */
export function LiveOutput({ token, lines = 6 }: { token: string; lines?: number }) {
  const [text, setText] = useState("");
  useEffect(() => {
    const ctl = new AbortController();
    (async () => {
      const r = await fetch(`/api/v1/attempts/${token}/output?follow=true`, {
        headers: { authorization: `Bearer ${getToken()}` },
        signal: ctl.signal,
      });
      if (!r.ok || !r.body) return;
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const chunk = decoder.decode(value, { stream: true });
        setText((t) => (t + chunk).slice(lines > 6 ? -262_144 : -4096));
      }
    })().catch(() => {});
    return () => ctl.abort();
  }, [token, lines]);
  return (
    <pre class="tail live-output" data-testid="live-output">
      {text.split("\n").slice(-lines).join("\n")}
    </pre>
  );
}

/** What `GET /attempts/{token}/output` answered: the text, and what its headers say of it. */
export interface WholeOutput {
  readonly text: string;
  /** `ok | changed | unchecked | running` (Chronolog-Output-Check), or null when refused. */
  readonly check: string | null;
  readonly status: string | null;
  /** Why there is no output, when the API refused. */
  readonly problem: string | null;
}

/** An attempt's whole output, with the result of the API's check of it against its recorded hash. */
export async function fetchOutput(token: string): Promise<WholeOutput> {
  const r = await fetch(`/api/v1/attempts/${encodeURIComponent(token)}/output`, {
    headers: { authorization: `Bearer ${getToken()}` },
  });
  const text = await r.text();
  if (!r.ok) {
    let problem = text;
    try {
      const p = JSON.parse(text) as { detail?: string; title?: string };
      problem = p.detail ?? p.title ?? text;
    } catch {}
    return { text: "", check: null, status: null, problem };
  }
  return {
    text,
    check: r.headers.get("chronolog-output-check"),
    status: r.headers.get("chronolog-attempt-status"),
    problem: null,
  };
}

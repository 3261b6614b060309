import { useEffect, useState } from "preact/hooks";
import { getToken } from "../api";

/** A running attempt's output as it comes (`?follow=true`), its last lines shown. */
export function LiveOutput({ token }: { token: string }) {
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
        setText((t) => (t + chunk).slice(-4096));
      }
    })().catch(() => {});
    return () => ctl.abort();
  }, [token]);
  return (
    <pre class="tail live-output" data-testid="live-output">
      {text.split("\n").slice(-6).join("\n")}
    </pre>
  );
}

/** The whole output needs the token: fetched and shown in a new window rather than a plain link. */
export const openOutput = (token: string) => async (ev: Event) => {
  ev.preventDefault();
  const w = open("", "_blank");
  const r = await fetch(`/api/v1/attempts/${token}/output`, {
    headers: { authorization: `Bearer ${getToken()}` },
  });
  const text = await r.text();
  if (w) {
    w.document.title = `output of ${token}`;
    const pre = w.document.createElement("pre");
    pre.textContent = text;
    w.document.body.append(pre);
  }
};

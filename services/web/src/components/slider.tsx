import { useEffect, useState } from "preact/hooks";
import { go, href, type Query } from "../router";

/** A slider over log positions: letting go of it shows the page as of that position. */
export function Slider({
  at,
  max: head,
  page,
  arg,
  extra = {},
}: {
  at: string | null;
  max: number;
  page: string;
  arg: string;
  extra?: Query;
}) {
  const max = Math.max(head, Number(at ?? 0));
  const [v, setV] = useState(at ?? String(max));
  useEffect(() => setV(at ?? String(max)), [at, max]);
  return (
    <div class="slider">
      <label>
        Log position
        <input
          type="range"
          data-testid="slider"
          min="0"
          max={max}
          value={v}
          onInput={(e) => setV(e.currentTarget.value)}
          onChange={(e) => go(page, arg, { ...extra, at: e.currentTarget.value })}
        />
      </label>
      <output>{v}</output>
      {at && <a href={href(page, arg, extra)}>now</a>}
    </div>
  );
}

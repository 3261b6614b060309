import { time } from "../format";
import { href, parseHash } from "../router";

/** Says, on a page shown `?at=` a position, which state it shows; with a way back to now. */
export function Banner({ at, asOf }: { at: string | null; asOf: string | null | undefined }) {
  if (!at) return null;
  const [, hash = "", when = ""] = (asOf ?? "").split(" ");
  const { page, arg, q } = parseHash();
  const rest = Object.fromEntries([...q].filter(([k]) => k !== "at"));
  return (
    <div class="banner" data-testid="as-of" role="status">
      Time travel: the state as it was after log position <strong>{at}</strong>
      {when && ` (${time(when)}, hash ${hash.slice(0, 12)}…)`}
      {". Nothing here changes live. "}
      <a href={href(page, arg, rest)}>Back to now</a>
    </div>
  );
}

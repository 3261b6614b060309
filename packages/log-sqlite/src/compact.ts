/*
 * The compact forms the embedded log's layout 2 stores an event's fields in. Each one reads back
 * to exactly the text the writer gave (the hash chain covers that text), and each falls back to
 * the text itself when a value does not have the usual shape.
 */

/**
 * Dictionary 1: JSON fragments that event data and stream names repeat, each stored as one
 * control character (0x01 for the first, 0x02 for the second, ...). JSON text never holds a raw
 * control character (JSON.stringify escapes them) and stream names are printable ASCII, so a
 * control character in a coded text is always a code. Files depend on this list: it never
 * changes. A better one is a new dictionary with a marker of its own.
 */
const DICTIONARY_1: readonly string[] = [
  '{"key":{"project":"',
  '","account":"',
  '","name":"',
  '","partition":"ALL"}',
  '","partition":"',
  ',"logicalDate":"',
  ":00:00.000Z",
  "/ALL@",
  '{"attempt":1,"token":"',
  ',"attempt":1,"token":"',
  ',"attempt":',
  ',"token":"',
  ',"operator":{"type":"noop"}',
  ',"operator":{"type":"',
  ',"idempotent":true,"leaseSeconds":30}',
  ',"idempotent":false,"leaseSeconds":30}',
  ',"durationMs":',
  ',"exitCode":null,"output":{"stdoutTail":"","stderrTail":""},"cacheHit":false',
  ',"exitCode":0,"output":{"stdoutTail":"',
  '","stderrTail":"',
  ',"workerId":"worker-',
  ',"nextLogicalDate":"',
  ',"nextRunDate":"',
  ',"spec":{"key":{"project":"',
  ',"cron":"',
  '","timezone":"UTC","startDate":"',
  ',"catchup":',
  ',"parents":[{"project":"',
  ',"retry":{"maxAttempts":1,"initialDelayMs":1000,"factor":2,"maxDelayMs":300000,"jitter":0.1}',
  ',"config":{},"leaseSeconds":30,"alerts":[]},"logicalDate":"',
  "instance-",
];

/** The first character of a text coded with dictionary 1. */
const MARKER_1 = 1;

/** A dictionary entry, its code, and its third and fourth characters' codes. */
interface Entry {
  readonly text: string;
  readonly code: string;
  readonly c2: number;
  readonly c3: number;
}

/**
 * Each entry and its code, by the entry's first two characters (the first's code times 128 and
 * the second's), longest entries first: an array, looked at for every quote and comma of a
 * text, where a map took a lookup of its own for each.
 */
const byPrefix: Array<Entry[] | undefined> = new Array(128 * 128).fill(undefined);
/** Which characters start an entry (ASCII only: every entry is ASCII). */
const STARTS = new Uint8Array(128);
DICTIONARY_1.forEach((text, i) => {
  // (Every entry has four characters at least: encodeText compares the third and fourth first.)
  if (text.length < 4) throw new Error(`dictionary entry ${JSON.stringify(text)} is shorter than 4`);
  const prefix = (text.charCodeAt(0) << 7) | text.charCodeAt(1);
  STARTS[text.charCodeAt(0)] = 1;
  let list = byPrefix[prefix];
  if (!list) {
    list = [];
    byPrefix[prefix] = list;
  }
  list.push({ text, code: String.fromCharCode(i + 1), c2: text.charCodeAt(2), c3: text.charCodeAt(3) });
  list.sort((a, b) => b.text.length - a.text.length);
});

/**
 * The coded form of `text`: the marker, then the text with each dictionary entry (the longest
 * that starts at each place) replaced by its code. `text` itself when nothing matches, and null
 * when it holds a control character (it cannot be coded; the caller stores its bytes).
 */
export function encodeText(text: string): string | null {
  let out = "";
  let from = 0;
  const n = text.length - 1;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20) return null;
    if (c >= 128 || STARTS[c] === 0) continue;
    const candidates = byPrefix[(c << 7) | (text.charCodeAt(i + 1) & 127)];
    if (candidates === undefined) continue;
    // Entries of one prefix mostly differ in their third or fourth character: compared first,
    // they spare most of the comparisons of whole entries (six of them start with a quote and a comma).
    const c2 = text.charCodeAt(i + 2);
    const c3 = text.charCodeAt(i + 3);
    for (let k = 0; k < candidates.length; k++) {
      const e = candidates[k] as Entry;
      if (e.c2 === c2 && e.c3 === c3 && text.startsWith(e.text, i)) {
        out += text.slice(from, i) + e.code;
        i += e.text.length - 1;
        from = i + 1;
        break;
      }
    }
  }
  if (text.length > 0 && text.charCodeAt(n) < 0x20) return null;
  if (from === 0) return text;
  return `\u0001${out}${text.slice(from)}`;
}

/** The text `stored` was coded from (see encodeText); a text that starts with no marker is as written. */
export function decodeText(stored: string): string {
  const marker = stored.charCodeAt(0);
  if (marker >= 0x20 || stored.length === 0) return stored;
  if (marker !== MARKER_1) throw new CodedTextError(marker);
  let out = "";
  let from = 1;
  const n = stored.length;
  for (let i = 1; i < n; i++) {
    const c = stored.charCodeAt(i);
    if (c >= 0x20) continue;
    const entry = DICTIONARY_1[c - 1];
    if (entry === undefined) throw new CodedTextError(c);
    out += stored.slice(from, i) + entry;
    from = i + 1;
  }
  return out + stored.slice(from);
}

/** A stored text coded with a dictionary this version does not have. */
export class CodedTextError extends Error {
  readonly type = "coded_text";
  constructor(readonly code: number) {
    super(`a stored text uses code ${code}, which no dictionary of this version has`);
    this.name = "CodedTextError";
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The value of each lower-case hex digit, by its character code. */
const NIBBLE = new Uint8Array(128);
for (let d = 0; d < 16; d++) NIBBLE["0123456789abcdef".charCodeAt(d)] = d;

/**
 * A lower-case UUID as its 16 bytes; any other id as its text. The bytes are written into
 * `into` when given (a buffer the caller reuses: SQLite copies a value when it is bound).
 */
export function packId(id: string, into?: Buffer): Buffer | string {
  if (!UUID.test(id)) return id;
  const bytes = into ?? Buffer.allocUnsafe(16);
  let at = 0;
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) i += 1; // a dash
    bytes[at++] = (NIBBLE[id.charCodeAt(i)] as number) * 16 + (NIBBLE[id.charCodeAt(i + 1)] as number);
  }
  return bytes;
}

/** The id packId was given. */
export function unpackId(stored: Buffer | string): string {
  if (typeof stored === "string") return stored;
  const h = stored.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** An ISO-8601 instant as its milliseconds when they print back to the same text; else the text. */
export function packInstant(iso: string): number | string {
  const ms = Date.parse(iso);
  return Number.isFinite(ms) && new Date(ms).toISOString() === iso ? ms : iso;
}

/** The instant packInstant was given. */
export function unpackInstant(stored: bigint | number | string): string {
  return typeof stored === "string" ? stored : new Date(Number(stored)).toISOString();
}

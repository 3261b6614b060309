import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { SecretSource, Secrets } from "@chronolog/core";

/**
 * Secrets by reference, on the worker: resolved when an attempt runs, on this host, never sent
 * anywhere; and masked (`***`) in everything the attempt reports or writes to its output file.
 */

/** `{{ secrets.NAME }}` as the scheduler writes it into an http operator's headers and body. */
export const SECRET_PLACEHOLDER = /\{\{ secrets\.([A-Za-z_][A-Za-z0-9_]*) \}\}/g;

/** A secret that could not be resolved: the message names the secret and its source, never a value. */
export class SecretError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretError";
  }
}

/** Longest a `command` source may take. */
const COMMAND_TIMEOUT_MS = 30_000;
/** Most a source may yield. */
const MAX_SECRET_BYTES = 64 * 1024;

function describe(name: string, source: SecretSource): string {
  if (source.env !== undefined) return `secret ${name} (environment variable ${source.env})`;
  if (source.file !== undefined) return `secret ${name} (file ${source.file})`;
  return `secret ${name} (command)`;
}

function oneLine(value: string): string {
  return value.endsWith("\r\n") ? value.slice(0, -2) : value.endsWith("\n") ? value.slice(0, -1) : value;
}

/** Where secrets are read from, and as whom. */
export interface SecretAccess {
  /** The environment `{ env }` sources read (the worker's). */
  readonly env: NodeJS.ProcessEnv;
  /** The environment a `{ command }` source runs with (the task's clean one). */
  readonly commandEnv: NodeJS.ProcessEnv;
  /**
   * The task's user, when tasks run as another user than the worker's: `{ file }` and `{
   * command }` sources are read and run as that user, so a declaration reaches through them
   * no more than its task could.
   */
  readonly identity?: { readonly uid?: number; readonly gid?: number };
}

async function resolveOne(
  name: string,
  source: SecretSource,
  access: SecretAccess,
  signal?: AbortSignal,
): Promise<string> {
  const what = describe(name, source);
  const asTask = access.identity?.uid !== undefined;
  let value: string;
  if (source.env !== undefined) {
    const v = access.env[source.env];
    if (v === undefined || v === "") throw new SecretError(`${what}: the variable is not set on this worker`);
    value = v;
  } else if (source.file !== undefined && !asTask) {
    try {
      value = oneLine(await readFile(source.file, { encoding: "utf8", signal }));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
      throw new SecretError(`${what}: the file cannot be read (${code})`);
    }
  } else if (source.file !== undefined) {
    const argv = ["cat", "--", source.file];
    const read = run(what, argv, access, signal).catch(() => {
      throw new SecretError(`${what}: the file cannot be read by the task's user`);
    });
    value = oneLine(await read);
  } else {
    value = oneLine(await run(what, ["/bin/sh", "-c", source.command ?? ""], access, signal));
  }
  if (value === "") throw new SecretError(`${what}: the value is empty`);
  if (Buffer.byteLength(value) > MAX_SECRET_BYTES) {
    throw new SecretError(`${what}: the value is longer than ${MAX_SECRET_BYTES} bytes`);
  }
  if (value.includes("\u0000")) throw new SecretError(`${what}: the value contains a NUL byte`);
  return value;
}

/** Runs a source's command as the task's user; its stderr is dropped (it may hold the value). */
function run(
  what: string,
  argv: readonly string[],
  access: SecretAccess,
  signal?: AbortSignal,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const [file, ...args] = argv as [string, ...string[]];
    const child = spawn(file, args, {
      stdio: ["ignore", "pipe", "ignore"],
      env: access.commandEnv,
      timeout: COMMAND_TIMEOUT_MS,
      ...(access.identity ?? {}),
      ...(signal ? { signal } : {}),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    child.stdout.on("data", (b: Buffer) => {
      size += b.length;
      if (size <= MAX_SECRET_BYTES + 2) chunks.push(b);
    });
    child.on("error", (err) => {
      const code = (err as NodeJS.ErrnoException).code ?? err.name;
      reject(new SecretError(`${what}: the command could not run (${code})`));
    });
    child.on("close", (code, sig) => {
      if (code === 0) resolve(Buffer.concat(chunks).toString("utf8"));
      else if (sig) reject(new SecretError(`${what}: the command was killed by ${sig}`));
      else reject(new SecretError(`${what}: the command exited with ${code}`));
    });
  });
}

/** Resolves every secret of an attempt (each source is read once), by name. */
export async function resolveSecrets(
  secrets: Readonly<Secrets>,
  access: SecretAccess,
  signal?: AbortSignal,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, source] of Object.entries(secrets))
    out[name] = await resolveOne(name, source, access, signal);
  return out;
}

/** Values shorter than this are not masked: masking `a` or `42` would mask everything. */
export const MIN_MASKED_LENGTH = 4;
const MASK = "***";

/** The forms of a value that are masked: as is, base64 (standard, URL-safe, with and without padding), URL-encoded. */
export function maskedForms(value: string): string[] {
  if (value.length < MIN_MASKED_LENGTH) return [];
  const b64 = Buffer.from(value, "utf8").toString("base64");
  const b64url = Buffer.from(value, "utf8").toString("base64url");
  const forms = new Set([
    value,
    b64,
    b64.replace(/=+$/, ""),
    b64url,
    `${b64url}${"=".repeat((4 - (b64url.length % 4)) % 4)}`,
    encodeURIComponent(value),
    encodeURIComponent(value).replaceAll("%20", "+"),
    encodeURI(value),
  ]);
  return [...forms].filter((f) => f.length >= MIN_MASKED_LENGTH);
}

/**
 * Replaces every masked form of the given values with `***`. Works on bytes (as latin1 text, one
 * character a byte), so a value is found whatever encoding the task printed around it.
 */
export class Masker {
  private readonly pattern: RegExp | undefined;
  /** Longest form, in bytes: what a stream keeps back in case a value is cut between chunks. */
  readonly longest: number;

  constructor(values: Iterable<string>) {
    const forms = new Set<string>();
    for (const v of values)
      for (const f of maskedForms(v)) forms.add(Buffer.from(f, "utf8").toString("latin1"));
    const sorted = [...forms].sort((a, b) => b.length - a.length);
    this.longest = sorted[0]?.length ?? 0;
    this.pattern =
      sorted.length > 0
        ? new RegExp(sorted.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g")
        : undefined;
  }

  get empty(): boolean {
    return this.pattern === undefined;
  }

  /** The bytes with every form masked. */
  maskBytes(data: Uint8Array): Buffer {
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (!this.pattern) return buf;
    const text = buf.toString("latin1");
    const masked = text.replace(this.pattern, MASK);
    return masked === text ? buf : Buffer.from(masked, "latin1");
  }

  /** A string with every form masked. */
  mask(text: string): string {
    if (!this.pattern) return text;
    return this.maskBytes(Buffer.from(text, "utf8")).toString("utf8");
  }

  /**
   * A tail of a longer output: its first bytes may be the end of a value cut off at the front,
   * so when it may have been cut (`cut`), its first `longest - 1` bytes are dropped before it
   * is masked.
   */
  maskTail(tail: string, cut: boolean): string {
    if (!this.pattern || tail === "") return tail;
    let bytes = Buffer.from(tail, "utf8");
    if (cut) {
      let start = Math.min(bytes.length, this.longest - 1);
      while (start < bytes.length && ((bytes[start] as number) & 0xc0) === 0x80) start++;
      bytes = bytes.subarray(start);
    }
    return this.maskBytes(bytes).toString("utf8");
  }

  /** A writer that masks what passes through it, even a value split across chunks. */
  stream(sink: { write(chunk: Uint8Array | string): void }): MaskingStream {
    return new MaskingStream(this, sink);
  }
}

/**
 * Masks a stream of chunks: keeps back the last `longest - 1` bytes (the start of a value that
 * may go on in the next chunk) until more comes or the stream ends.
 */
export class MaskingStream {
  private held: Buffer = Buffer.alloc(0);

  constructor(
    private readonly masker: Masker,
    private readonly sink: { write(chunk: Uint8Array | string): void },
  ) {}

  write(chunk: Uint8Array | string): void {
    if (this.masker.empty) {
      this.sink.write(chunk);
      return;
    }
    const data = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk);
    const masked = this.masker.maskBytes(this.held.length > 0 ? Buffer.concat([this.held, data]) : data);
    const keep = Math.min(masked.length, this.masker.longest - 1);
    const out = masked.subarray(0, masked.length - keep);
    this.held = Buffer.from(masked.subarray(masked.length - keep));
    if (out.length > 0) this.sink.write(out);
  }

  /** Writes what is held back (masked: a value cannot go on any more). */
  end(): void {
    if (this.held.length > 0) this.sink.write(this.masker.maskBytes(this.held));
    this.held = Buffer.alloc(0);
  }
}

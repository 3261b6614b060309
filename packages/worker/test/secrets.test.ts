import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Masker, maskedForms, resolveSecrets, SecretError } from "../src/secrets.js";

/** Its base64 has a `+` (a `-` URL-safe); the other's ends in padding. */
const VALUE = "s3cr3t-Value/with+odd?chars??~";
const PADDED = "s3cr3t-Value/with+odd?chars>";

/** Everything a stream of `chunks` wrote through a masking stream of `masker`. */
function streamed(masker: Masker, chunks: readonly (string | Uint8Array)[]): string {
  const out: Buffer[] = [];
  const stream = masker.stream({ write: (c) => out.push(Buffer.from(c)) });
  for (const c of chunks) stream.write(c);
  stream.end();
  return Buffer.concat(out).toString("utf8");
}

describe("masking secrets", () => {
  const masker = new Masker([VALUE, PADDED]);
  const b64 = Buffer.from(VALUE).toString("base64");
  const b64url = Buffer.from(VALUE).toString("base64url");
  const padded = Buffer.from(PADDED).toString("base64");
  const paddedUrl = Buffer.from(PADDED).toString("base64url");

  it("masks the value, its base64 (standard, URL-safe, padded or not) and URL-encoded forms", () => {
    expect(b64).not.toBe(b64url);
    expect(padded).toMatch(/==$/);
    const forms = [VALUE, b64, b64url, encodeURIComponent(VALUE), PADDED, padded, padded.replace(/=+$/, "")];
    forms.push(`${paddedUrl}==`, paddedUrl, encodeURIComponent(PADDED));
    for (const form of forms) expect(masker.mask(`before ${form} after`)).toBe("before *** after");
    expect(maskedForms(PADDED)).toContain(`${paddedUrl}==`);
    expect(masker.mask("nothing here")).toBe("nothing here");
  });

  it("catches a value split across chunks, at every cut", () => {
    const text = `line one\n${VALUE}\nand ${b64} end\n`;
    for (let cut = 1; cut < text.length; cut++) {
      const got = streamed(masker, [text.slice(0, cut), text.slice(cut)]);
      expect(got).toBe("line one\n***\nand *** end\n");
    }
    const bytes = [...Buffer.from(text)].map((b) => Uint8Array.of(b));
    expect(streamed(masker, bytes)).toBe("line one\n***\nand *** end\n");
  });

  it("keeps output that holds no secret byte for byte, multi-byte characters included", () => {
    const text = "héllo wörld ✓ ".repeat(50);
    const bytes = Buffer.from(text);
    expect(streamed(masker, [bytes.subarray(0, 7), bytes.subarray(7, 300), bytes.subarray(300)])).toBe(text);
  });

  it("drops the start of a cut tail, which may be the end of a value", () => {
    const tail = `${VALUE.slice(10)} then ${"x".repeat(100)} ${VALUE}`;
    expect(masker.maskTail(tail, true)).not.toContain(VALUE.slice(10));
    expect(masker.maskTail(tail, true)).toMatch(/\*\*\*$/);
    expect(masker.maskTail(`whole ${VALUE}`, false)).toBe("whole ***");
  });

  it("does not mask values shorter than 4 characters", () => {
    const short = new Masker(["abc"]);
    expect(short.empty).toBe(true);
    expect(short.mask("abcabc")).toBe("abcabc");
  });
});

describe("resolving secrets", () => {
  const dir = mkdtempSync(join(tmpdir(), "secrets-"));
  const file = join(dir, "token");
  writeFileSync(file, "from-a-file\n");

  it("reads an environment variable, a file and a command's output (one trailing newline dropped)", async () => {
    const got = await resolveSecrets(
      { A: { env: "MY_TOKEN" }, B: { file }, C: { command: "printf 'from-a-command\\n'" } },
      { env: { MY_TOKEN: "from-the-env" }, commandEnv: { PATH: process.env.PATH } },
    );
    expect(got).toEqual({ A: "from-the-env", B: "from-a-file", C: "from-a-command" });
  });

  it("fails naming the secret and its source, never a value", async () => {
    await expect(resolveSecrets({ A: { env: "UNSET_VAR" } }, { env: {}, commandEnv: {} })).rejects.toThrow(
      new SecretError("secret A (environment variable UNSET_VAR): the variable is not set on this worker"),
    );
    await expect(
      resolveSecrets({ B: { file: join(dir, "missing") } }, { env: {}, commandEnv: {} }),
    ).rejects.toThrow(`secret B (file ${join(dir, "missing")}): the file cannot be read (ENOENT)`);
    const failing = resolveSecrets(
      { C: { command: "echo leaked-value; exit 3" } },
      { PATH: process.env.PATH },
    );
    await expect(failing).rejects.toThrow("secret C (command): the command exited with 3");
    await failing.catch((e: Error) => expect(e.message).not.toContain("leaked-value"));
  });
});

describe.skipIf(process.getuid?.() !== 0)("resolving secrets as the task's user", () => {
  const dir = mkdtempSync(join(tmpdir(), "secrets-root-"));
  chmodSync(dir, 0o755);
  const rootOnly = join(dir, "root-only");
  writeFileSync(rootOnly, "root's-secret\n", { mode: 0o600 });
  const open = join(dir, "open");
  writeFileSync(open, "for-the-task\n", { mode: 0o644 });
  const access = { env: {}, commandEnv: { PATH: process.env.PATH }, identity: { uid: 65534, gid: 65534 } };

  it("reads files and runs commands as the task's user, so it reaches no more than the task", async () => {
    expect(await resolveSecrets({ F: { file: open }, U: { command: "id -u" } }, access)).toEqual({
      F: "for-the-task",
      U: "65534",
    });
    await expect(resolveSecrets({ F: { file: rootOnly } }, access)).rejects.toThrow(
      `secret F (file ${rootOnly}): the file cannot be read by the task's user`,
    );
    await expect(resolveSecrets({ C: { command: `cat ${rootOnly}` } }, access)).rejects.toThrow(
      "secret C (command): the command exited with 1",
    );
  });
});

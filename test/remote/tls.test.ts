import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { chronolog, Leftovers, tempDataDir } from "../support/cli.js";
import { waitUntil } from "../support/wait.js";
import { completed, declareTasks, freePort, of, startScheduler, startWorker, workToken } from "./support.js";

/**
 * The link's security, black-box: a scheduler serving HTTPS with its own certificate; a worker
 * trusts it only with `--ca`, and refuses plain http to a host that is not loopback unless told
 * `--insecure`.
 */
describe("remote workers: HTTPS and plain http", () => {
  const left = new Leftovers();
  afterAll(() => left.clear());

  it("trusts the scheduler's certificate only with --ca, and refuses plain http off loopback", async () => {
    const dir = tempDataDir("remote-tls");
    left.dirs.push(dir, `${dir}-tasks`);
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    const made = spawnSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ]);
    expect(made.status, String(made.stderr)).toBe(0);
    declareTasks(dir, [{ name: "tt", queue: "t", command: "echo over tls" }]);
    const token = workToken(dir, "wt", ["t"]);
    const s = await startScheduler(left, dir, await freePort(), "127.0.0.1", [
      "--tls-cert",
      cert,
      "--tls-key",
      key,
    ]);
    expect(s.url).toMatch(/^https:/);

    // Without the CA, the certificate is not trusted: it keeps trying, and nothing runs.
    const untrusting = startWorker(left, s.url, token, ["t"], "wt-0");
    await waitUntil("the worker to say the certificate is not trusted", () =>
      /self[- ]signed certificate/i.test(untrusting.output) ? true : undefined,
    );
    untrusting.child.kill("SIGKILL");

    startWorker(left, s.url, token, ["t"], "wt-1", ["--ca", cert]);
    const events = await completed(dir, ["tt"]);
    expect(of(events, "tt").find((e) => e.type === "AttemptSucceeded")?.metadata.actor).toMatch(
      /^worker:wt-1@/,
    );

    // Plain http to a host that is not loopback: refused before any connection, unless --insecure.
    const plain = chronolog(dir, [
      "worker",
      "--connect",
      "http://192.0.2.1:8080",
      "--token",
      token,
      "--queue",
      "t",
    ]);
    expect(plain.code).toBe(2);
    expect(plain.stderr).toContain("is plain http to a host that is not loopback");
  }, 120_000);
});

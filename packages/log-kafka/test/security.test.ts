import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectionSettings, KafkaSecurityError, kafkaSecurityFromEnv } from "../src/index.js";

let dir: string;
let cert: string;
let key: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "kafka-security-"));
  execFileSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"].concat([
      "-subj",
      "/CN=test",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ]),
    { stdio: "ignore" },
  );
  cert = join(dir, "cert.pem");
  key = join(dir, "key.pem");
  writeFileSync(join(dir, "password"), "s3cret-in-a-file\n");
  writeFileSync(join(dir, "empty"), "\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("Kafka TLS and SASL settings from the environment", () => {
  it("reads the password from its file without the trailing newline, the mechanism in any case", () => {
    const s = kafkaSecurityFromEnv(
      {
        CHRONOLOG_KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
        CHRONOLOG_KAFKA_USERNAME: "svc",
        CHRONOLOG_KAFKA_PASSWORD_FILE: join(dir, "password"),
        CHRONOLOG_KAFKA_CA_FILE: cert,
        CHRONOLOG_KAFKA_CERT_FILE: cert,
        CHRONOLOG_KAFKA_KEY_FILE: key,
      },
      { tls: true },
    );
    expect(s.sasl).toEqual({ mechanism: "scram-sha-512", username: "svc", password: "s3cret-in-a-file" });
    expect(s.tls).toMatchObject({ ca: expect.stringContaining("BEGIN CERTIFICATE") });
    const settings = connectionSettings(s);
    expect(settings.ssl).toMatchObject({
      rejectUnauthorized: true,
      cert: expect.any(String),
      key: expect.any(String),
    });
    expect(settings.sasl).toMatchObject({ mechanism: "scram-sha-512", username: "svc" });
  });

  it("is plaintext without SASL when nothing is set, and TLS with Node's CAs for kafka+ssl:// alone", () => {
    expect(kafkaSecurityFromEnv({}, { tls: false })).toEqual({});
    expect(kafkaSecurityFromEnv({}, { tls: true })).toEqual({ tls: true });
    expect(connectionSettings({ tls: true }).ssl).toEqual({ rejectUnauthorized: true });
    // SCRAM over plaintext (SASL_PLAINTEXT) is allowed: it never sends the password itself.
    expect(
      kafkaSecurityFromEnv(
        {
          CHRONOLOG_KAFKA_SASL_MECHANISM: "scram-sha-256",
          CHRONOLOG_KAFKA_USERNAME: "u",
          CHRONOLOG_KAFKA_PASSWORD: "p",
        },
        { tls: false },
      ).sasl?.mechanism,
    ).toBe("scram-sha-256");
  });

  it("refuses what it cannot use, naming the variable and never the password", () => {
    const sasl = { CHRONOLOG_KAFKA_SASL_MECHANISM: "plain", CHRONOLOG_KAFKA_USERNAME: "u" };
    const cases: Array<[Record<string, string>, boolean, string]> = [
      [
        { ...sasl, CHRONOLOG_KAFKA_PASSWORD_FILE: join(dir, "empty") },
        true,
        `CHRONOLOG_KAFKA_PASSWORD_FILE=${join(dir, "empty")}: the file is empty`,
      ],
      [
        { ...sasl, CHRONOLOG_KAFKA_PASSWORD: "hunter2-x" },
        false,
        "kafka SASL PLAIN sends the password as it is",
      ],
      [
        sasl,
        true,
        "CHRONOLOG_KAFKA_SASL_MECHANISM is set but neither CHRONOLOG_KAFKA_PASSWORD nor CHRONOLOG_KAFKA_PASSWORD_FILE is",
      ],
      [
        { ...sasl, CHRONOLOG_KAFKA_SASL_MECHANISM: "oauthbearer", CHRONOLOG_KAFKA_PASSWORD: "hunter2-x" },
        true,
        'CHRONOLOG_KAFKA_SASL_MECHANISM="oauthbearer": expected plain, scram-sha-256, scram-sha-512',
      ],
      [
        { CHRONOLOG_KAFKA_KEY_FILE: key },
        true,
        "CHRONOLOG_KAFKA_KEY_FILE is set without CHRONOLOG_KAFKA_CERT_FILE",
      ],
      [
        { CHRONOLOG_KAFKA_CERT_FILE: cert, CHRONOLOG_KAFKA_KEY_FILE: key },
        false,
        "CHRONOLOG_KAFKA_CERT_FILE and CHRONOLOG_KAFKA_KEY_FILE are set but the log URL is plaintext kafka://",
      ],
      [{ CHRONOLOG_KAFKA_CA_FILE: join(dir, "password") }, true, "no PEM certificate in it"],
    ];
    for (const [env, tls, message] of cases) {
      let error: unknown;
      try {
        kafkaSecurityFromEnv(env, { tls });
      } catch (e) {
        error = e;
      }
      expect(error, message).toBeInstanceOf(KafkaSecurityError);
      expect((error as Error).message).toContain(message);
      expect((error as Error).message).not.toContain("hunter2");
    }
    expect(() =>
      connectionSettings({
        sasl: { mechanism: "gssapi" as "plain", username: "u", password: "p" },
        tls: true,
      }),
    ).toThrow('kafka SASL mechanism "gssapi": expected plain, scram-sha-256, scram-sha-512');
    expect(() => connectionSettings({ tls: { cert: "x" } })).toThrow("a client certificate needs its key");
  });
});

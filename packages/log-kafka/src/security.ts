import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import net from "node:net";
import tls from "node:tls";
import { LogUnavailableError } from "@chronolog/log";
import type { SASLOptions } from "kafkajs";

/** The SASL mechanisms the client speaks. */
export const SASL_MECHANISMS = ["plain", "scram-sha-256", "scram-sha-512"] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

/** TLS to the brokers. The broker's certificate is always verified. */
export interface KafkaTlsOptions {
  /** PEM certificates of the CAs a broker's certificate must chain to. Default: Node's trusted CAs. */
  readonly ca?: string;
  /** PEM client certificate (mutual TLS), with `key`. */
  readonly cert?: string;
  /** PEM private key of `cert` (unencrypted). */
  readonly key?: string;
}

/** SASL authentication, once per connection. The password is never part of an error or a log line. */
export interface KafkaSaslOptions {
  readonly mechanism: SaslMechanism;
  readonly username: string;
  readonly password: string;
}

/** How the client reaches the brokers: plaintext by default, TLS, SASL, or both. */
export interface KafkaSecurityOptions {
  /** TLS to every broker: `true` for Node's trusted CAs, or the CA and a client certificate. */
  readonly tls?: boolean | KafkaTlsOptions;
  /** SASL authentication (PLAIN only over TLS: it sends the password as it is). */
  readonly sasl?: KafkaSaslOptions;
}

/** Security settings that cannot be used: a bad file, an unknown mechanism, a missing value. */
export class KafkaSecurityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KafkaSecurityError";
  }
}

/**
 * The `ssl` and `sasl` settings of a Kafka client, checked: an unknown mechanism, a missing
 * username or password, a client certificate without its key, or PLAIN without TLS is an error.
 */
export function connectionSettings(o: KafkaSecurityOptions): {
  ssl?: tls.ConnectionOptions;
  sasl?: SASLOptions;
} {
  const out: { ssl?: tls.ConnectionOptions; sasl?: SASLOptions } = {};
  if (o.tls) {
    const t = o.tls === true ? {} : o.tls;
    if ((t.cert === undefined) !== (t.key === undefined))
      throw new KafkaSecurityError(
        "kafka TLS: a client certificate needs its key, and a key its certificate",
      );
    out.ssl = {
      rejectUnauthorized: true,
      ...(t.ca !== undefined ? { ca: t.ca } : {}),
      ...(t.cert !== undefined ? { cert: t.cert, key: t.key } : {}),
    };
  }
  if (o.sasl) {
    const { mechanism, username, password } = o.sasl;
    if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism))
      throw new KafkaSecurityError(
        `kafka SASL mechanism "${String(mechanism)}": expected ${SASL_MECHANISMS.join(", ")}`,
      );
    if (!username) throw new KafkaSecurityError("kafka SASL: the username is empty");
    if (!password) throw new KafkaSecurityError("kafka SASL: the password is empty");
    if (mechanism === "plain" && !o.tls)
      throw new KafkaSecurityError(
        "kafka SASL PLAIN sends the password as it is: use it over TLS (kafka+ssl://), or use scram-sha-256 or scram-sha-512",
      );
    out.sasl = { mechanism, username, password } as SASLOptions;
  }
  return out;
}

/** The mechanism as the brokers name it, for messages. */
export function mechanismName(m: SaslMechanism): string {
  return m.toUpperCase();
}

type Env = Readonly<Record<string, string | undefined>>;

/** The variables kafkaSecurityFromEnv reads. */
export const SECURITY_ENV = {
  mechanism: "CHRONOLOG_KAFKA_SASL_MECHANISM",
  username: "CHRONOLOG_KAFKA_USERNAME",
  password: "CHRONOLOG_KAFKA_PASSWORD",
  passwordFile: "CHRONOLOG_KAFKA_PASSWORD_FILE",
  ca: "CHRONOLOG_KAFKA_CA_FILE",
  cert: "CHRONOLOG_KAFKA_CERT_FILE",
  key: "CHRONOLOG_KAFKA_KEY_FILE",
} as const;

function readFile(variable: string, path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT"
        ? "no such file"
        : code === "EACCES"
          ? "permission denied"
          : code === "EISDIR"
            ? "a directory, not a file"
            : (code ?? "cannot be read");
    throw new KafkaSecurityError(`${variable}=${path}: ${why} (${what})`);
  }
}

function pemCertificates(variable: string, path: string, text: string): string {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  if (!blocks)
    throw new KafkaSecurityError(
      `${variable}=${path}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)`,
    );
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      throw new KafkaSecurityError(`${variable}=${path}: a certificate in it cannot be read`);
    }
  }
  return text;
}

/**
 * TLS and SASL settings from the environment (`tls` says whether the log URL asked for TLS,
 * `kafka+ssl://`):
 *
 * - CHRONOLOG_KAFKA_CA_FILE: PEM CA certificates for the brokers' certificates (default: Node's)
 * - CHRONOLOG_KAFKA_CERT_FILE, CHRONOLOG_KAFKA_KEY_FILE: a client certificate and its key
 * - CHRONOLOG_KAFKA_SASL_MECHANISM: plain, scram-sha-256 or scram-sha-512
 * - CHRONOLOG_KAFKA_USERNAME, and CHRONOLOG_KAFKA_PASSWORD or CHRONOLOG_KAFKA_PASSWORD_FILE
 *   (a file holding the password; one trailing newline is not part of it)
 *
 * TLS files without `tls` are refused rather than ignored (the connection would be plaintext).
 * Errors name the variable and the file, never a password.
 */
export function kafkaSecurityFromEnv(env: Env, options: { tls: boolean }): KafkaSecurityOptions {
  const v = (name: string) => {
    const value = env[name];
    return value === undefined || value === "" ? undefined : value;
  };
  const E = SECURITY_ENV;
  const caFile = v(E.ca);
  const certFile = v(E.cert);
  const keyFile = v(E.key);
  if (!options.tls) {
    const set = [caFile && E.ca, certFile && E.cert, keyFile && E.key].filter(Boolean);
    if (set.length > 0)
      throw new KafkaSecurityError(
        `${set.join(" and ")} ${set.length > 1 ? "are" : "is"} set but the log URL is plaintext kafka://: use kafka+ssl:// for TLS`,
      );
  }
  let tlsOptions: KafkaSecurityOptions["tls"];
  if (options.tls) {
    if ((certFile === undefined) !== (keyFile === undefined))
      throw new KafkaSecurityError(
        `${certFile ? E.cert : E.key} is set without ${certFile ? E.key : E.cert}: mutual TLS needs both`,
      );
    const ca = caFile
      ? pemCertificates(E.ca, caFile, readFile(E.ca, caFile, "the CA certificates"))
      : undefined;
    let cert: string | undefined;
    let key: string | undefined;
    if (certFile && keyFile) {
      cert = pemCertificates(E.cert, certFile, readFile(E.cert, certFile, "the client certificate"));
      key = readFile(E.key, keyFile, "the client key");
      try {
        createPrivateKey(key);
      } catch {
        throw new KafkaSecurityError(
          `${E.key}=${keyFile}: not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)`,
        );
      }
    }
    tlsOptions = ca || cert ? { ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) } : true;
  }

  const mechanismText = v(E.mechanism);
  const username = v(E.username);
  const password = env[E.password];
  const passwordFile = v(E.passwordFile);
  let sasl: KafkaSaslOptions | undefined;
  if (mechanismText === undefined) {
    const stray = [username && E.username, password && E.password, passwordFile && E.passwordFile].filter(
      Boolean,
    );
    if (stray.length > 0)
      throw new KafkaSecurityError(
        `${stray.join(", ")} set without ${E.mechanism} (plain, scram-sha-256 or scram-sha-512)`,
      );
  } else {
    const mechanism = mechanismText.toLowerCase();
    if (!(SASL_MECHANISMS as readonly string[]).includes(mechanism))
      throw new KafkaSecurityError(
        `${E.mechanism}="${mechanismText}": expected ${SASL_MECHANISMS.join(", ")}`,
      );
    if (!username) throw new KafkaSecurityError(`${E.mechanism} is set but ${E.username} is not`);
    if (password !== undefined && passwordFile !== undefined)
      throw new KafkaSecurityError(`${E.password} and ${E.passwordFile} are both set: give one`);
    let secret: string;
    if (passwordFile !== undefined) {
      secret = readFile(E.passwordFile, passwordFile, "the password").replace(/\r?\n$/, "");
      if (secret === "") throw new KafkaSecurityError(`${E.passwordFile}=${passwordFile}: the file is empty`);
    } else if (password !== undefined && password !== "") {
      secret = password;
    } else {
      throw new KafkaSecurityError(
        `${E.mechanism} is set but neither ${E.password} nor ${E.passwordFile} is`,
      );
    }
    sasl = { mechanism: mechanism as SaslMechanism, username, password: secret };
  }
  const out: KafkaSecurityOptions = {
    ...(tlsOptions ? { tls: tlsOptions } : {}),
    ...(sasl ? { sasl } : {}),
  };
  connectionSettings(out); // the checks of combinations (PLAIN without TLS)
  return out;
}

/** Node's codes for a certificate that does not verify, or does not name the host. */
const CERTIFICATE_CODES = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** An ApiVersions request (version 0, correlation id 1, no client id): every broker answers it, before SASL too. */
const API_VERSIONS_V0 = Buffer.from([0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff]);

type Probe = { ok: true } | { ok: false; reason: string; reached: boolean };

/** How long a probe waits for a TCP connection before it leaves the broker to the client. */
const PROBE_CONNECT_MS = 3000;

/**
 * Before a client starts: a TLS handshake with each bootstrap broker at once, and one request
 * (ApiVersions, which a broker answers before authentication). Done when one broker answers. If
 * none does, a broker whose certificate does not verify, that does not speak TLS, or that
 * refuses the client's certificate is a LogUnavailableError that says why, at once rather than
 * after the client's retries of a connection that cannot succeed. Brokers that cannot be
 * reached at all are left to the client, which retries and reports them in its own way.
 */
export async function checkTls(brokers: readonly string[], ssl: tls.ConnectionOptions, timeoutMs: number) {
  const probes = brokers.map((broker) => probeTls(broker, ssl, timeoutMs));
  try {
    await Promise.any(probes.map((p) => p.then((o) => (o.ok ? o : Promise.reject(o)))));
    return;
  } catch {
    // No broker answered: say why the first one that was reached refused.
  }
  const outcomes = await Promise.all(probes);
  const i = outcomes.findIndex((o) => !o.ok && o.reached);
  const refused = outcomes[i];
  if (refused && !refused.ok) throw new LogUnavailableError(`kafka broker ${brokers[i]}: ${refused.reason}`);
}

function probeTls(broker: string, ssl: tls.ConnectionOptions, timeoutMs: number): Promise<Probe> {
  const { host, port } = hostPort(broker);
  const clientCert = ssl.cert !== undefined;
  return new Promise<Probe>((resolve) => {
    const socket = tls.connect({
      host,
      port,
      ...(net.isIP(host) ? {} : { servername: host }),
      ...ssl,
      rejectUnauthorized: true,
    });
    let reached = false;
    let secure = false;
    const done = (r: Probe) => {
      clearTimeout(timer);
      clearTimeout(connecting);
      socket.destroy();
      resolve(r);
    };
    // A broker that completed the handshake but is slow to answer is left to the client.
    const timer = setTimeout(
      () =>
        done(
          secure ? { ok: true } : { ok: false, reason: "no TLS handshake within the time allowed", reached },
        ),
      timeoutMs,
    );
    const connecting = setTimeout(
      () => {
        if (!reached) done({ ok: false, reached: false, reason: "no connection" });
      },
      Math.min(PROBE_CONNECT_MS, timeoutMs),
    );
    socket.once("connect", () => {
      reached = true;
    });
    socket.once("secureConnect", () => {
      secure = true;
      socket.write(API_VERSIONS_V0);
    });
    socket.once("data", () => done({ ok: true }));
    socket.once("close", () => {
      if (secure)
        done({
          ok: false,
          reached: true,
          reason: "the broker closed the connection after the TLS handshake",
        });
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      const code = error.code ?? "";
      const text = `${error.message} ${code}`;
      let reason: string;
      if (CERTIFICATE_CODES.has(code))
        reason = `the broker's certificate is not trusted (${error.message}, ${code}); give the CA that signed it in CHRONOLOG_KAFKA_CA_FILE`;
      else if (
        /alert (certificate unknown|unknown ca|bad certificate|certificate expired|certificate revoked)/i.test(
          text,
        )
      )
        reason = clientCert
          ? `the broker refused this client's certificate (${error.message}): CHRONOLOG_KAFKA_CERT_FILE must be signed by a CA the brokers trust`
          : `the broker refused the TLS handshake (${error.message})`;
      else if (/alert certificate required/i.test(text))
        reason = `the broker asks for a client certificate (${error.message}): set CHRONOLOG_KAFKA_CERT_FILE and CHRONOLOG_KAFKA_KEY_FILE`;
      else if (
        !secure &&
        /wrong version number|packet length too long|unexpected eof|ECONNRESET|socket disconnected/i.test(
          text,
        )
      )
        reason = `the broker did not complete a TLS handshake (${error.message}): does its listener take TLS? (kafka:// is plaintext)`;
      else reason = `TLS connection failed: ${error.message}`;
      done({ ok: false, reached: reached || secure, reason });
    });
  });
}

function hostPort(broker: string): { host: string; port: number } {
  const i = broker.lastIndexOf(":");
  return { host: broker.slice(0, i).replace(/^\[(.*)\]$/, "$1"), port: Number(broker.slice(i + 1)) };
}

/** Whether the broker completes a TLS handshake (its certificate unchecked: this only asks). */
function speaksTls(broker: string, timeoutMs: number): Promise<boolean> {
  const { host, port } = hostPort(broker);
  return new Promise((resolve) => {
    const socket = tls.connect({
      host,
      port,
      rejectUnauthorized: false,
      ...(net.isIP(host) ? {} : { servername: host }),
    });
    const done = (yes: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(yes);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once("secureConnect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * An error of the Kafka client made clear: refused credentials name the user and the
 * mechanism (never the password); a plaintext client that failed against a broker that speaks
 * TLS is told to use kafka+ssl://. Other errors are returned as they are.
 */
export async function clearKafkaError(
  error: unknown,
  security: KafkaSecurityOptions,
  brokers: readonly string[],
): Promise<unknown> {
  if (!(error instanceof Error)) return error;
  if (error instanceof LogUnavailableError || error instanceof KafkaSecurityError) return error;
  if (!security.tls && error.name.startsWith("KafkaJS")) {
    for (const broker of brokers)
      if (await speaksTls(broker, 3000))
        return new LogUnavailableError(
          `kafka broker ${broker} speaks TLS, and this client does not (${error.message}): use kafka+ssl:// (tls in the options)`,
        );
  }
  const sasl = security.sasl;
  const chain: Error[] = [];
  for (
    let e: unknown = error;
    e instanceof Error && chain.length < 5;
    e = (e as { originalError?: unknown }).originalError
  )
    chain.push(e);
  const auth = chain.find((e) => e.name === "KafkaJSSASLAuthenticationError");
  if (auth && sasl)
    return new LogUnavailableError(
      `kafka: the brokers refused user "${sasl.username}" (SASL ${mechanismName(sasl.mechanism)}): ${auth.message}`,
    );
  return error;
}

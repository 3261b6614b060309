import type { OperatorSpec } from "../spec.js";
import type { IssueCollector, Located } from "./issues.js";

/**
 * Warnings for a credential written into a declaration in clear, where `secrets` should give it:
 * an `Authorization`-like header with a literal value, or a URL with a password in it. The
 * declaration is still accepted (a value may be a public key or a test fixture), but the field
 * is named so the credential can be moved to a secret.
 */
const CREDENTIAL_HEADER =
  /^(authorization|proxy-authorization|cookie|x-api-key|api-key|x-auth-token|private-token)$/i;
/** `scheme://user:password@host`: a password in the URL's user info. */
const URL_PASSWORD = /[a-z][a-z0-9+.-]*:\/\/[^/\s:@]+:[^/\s@]+@/i;
const SECRET_ONLY = /^\s*([A-Za-z-]+\s+)?\{\{-?\s*secrets\.[A-Za-z_][A-Za-z0-9_]*\s*-?\}\}\s*$/;

export function checkLiteralCredentials(
  operator: OperatorSpec,
  at: Located,
  label: string | undefined,
  issues: IssueCollector,
): void {
  const field = (name: string): Located => ({ file: at.file, path: `${at.path}.${name}` });
  const warnUrl = (value: string | undefined, name: string) => {
    if (value !== undefined && URL_PASSWORD.test(value)) {
      issues.warning(
        "credential",
        field(name),
        `${name} carries a password in a URL: declare it under secrets and give it to the task by reference`,
        label,
      );
    }
  };
  switch (operator.type) {
    case "http":
      warnUrl(operator.url, "url");
      warnUrl(operator.body, "body");
      for (const [header, value] of Object.entries(operator.headers)) {
        if (CREDENTIAL_HEADER.test(header) && value.trim() !== "" && !SECRET_ONLY.test(value)) {
          issues.warning(
            "credential",
            field(`headers.${header}`),
            `headers.${header} carries a credential literally: declare it under secrets and write {{ secrets.NAME }}`,
            label,
          );
        }
      }
      break;
    case "shell":
      warnUrl(operator.command, "command");
      for (const [k, v] of Object.entries(operator.env)) warnUrl(v, `env.${k}`);
      break;
    case "node":
    case "python":
      warnUrl(JSON.stringify(operator.args), "args");
      break;
    case "noop":
      break;
  }
}

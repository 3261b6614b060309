import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";

/** Debian's Chromium, as `make test` installs it. */
export const CHROMIUM = "/usr/bin/chromium";

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** One Chromium with a fresh profile of its own, removed when it closes. */
export async function startBrowser(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "chronolog-web-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A new tab (its own sessionStorage) logged in to the UI at `url` with `token`. */
export async function loggedIn(b: Browser, url: string, token: string, hash = "#/grid"): Promise<Page> {
  const page = await b.context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // What the server's Content-Security-Policy refused (a script, a style, a connection).
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) errors.push(m.text());
  });
  await page.goto(`${url}/${hash}`);
  await page.fill("input[name=token]", token);
  await page.press("input[name=token]", "Enter");
  await page.getByTestId("who").waitFor();
  (page as Page & { errors?: string[] }).errors = errors;
  return page;
}

/** Goes to a page of the UI by its hash route and waits for `testId` to show. */
export async function open(page: Page, url: string, hash: string, testId: string): Promise<void> {
  await page.goto(`${url}/${hash}`);
  await page.getByTestId(testId).first().waitFor();
}

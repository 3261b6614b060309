import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { COMMAND_MODULES, modulesFor } from "../src/commands.js";

const names = (modules: ReturnType<typeof modulesFor>) => modules.flatMap((m) => m.names);

describe("the CLI's commands, loaded by the command they run", () => {
  it("lists for each module exactly the top-level commands it registers", async () => {
    for (const m of COMMAND_MODULES) {
      const program = new Command();
      (await m.load())(program, () => ({}));
      expect(program.commands.map((c) => c.name())).toEqual(m.names);
    }
  });

  it("names no command in two modules", () => {
    const all = names(COMMAND_MODULES);
    expect(new Set(all).size).toBe(all.length);
  });

  it("loads only the module of the command the line names", () => {
    expect(names(modulesFor(["why", "p/a/t"]))).toContain("why");
    expect(modulesFor(["why", "p/a/t"])).toHaveLength(1);
    expect(modulesFor(["up", "--workers", "2"])[0]?.names).toEqual(["up", "scheduler"]);
    expect(modulesFor(["token", "list"])[0]?.names).toEqual(["serve", "token"]);
  });

  it("skips the program's options and their values before the command", () => {
    const m = modulesFor(["--data-dir", "why", "--log", "tasks", "--file=x", "task", "t"]);
    expect(m).toHaveLength(1);
    expect(m[0]?.names).toContain("task");
    expect(modulesFor(["--data-dir=d", "-V", "serve"])[0]?.names).toContain("serve");
  });

  it("loads none for a bare --version, every one for the help, an unknown command or none", () => {
    expect(modulesFor(["--version"])).toEqual([]);
    expect(modulesFor(["--data-dir", "d", "-V"])).toEqual([]);
    expect(modulesFor([])).toBe(COMMAND_MODULES);
    expect(modulesFor(["--help"])).toBe(COMMAND_MODULES);
    expect(modulesFor(["-h", "why"])).toBe(COMMAND_MODULES);
    expect(modulesFor(["help", "why"])).toBe(COMMAND_MODULES);
    expect(modulesFor(["wyh", "t"])).toBe(COMMAND_MODULES);
    expect(modulesFor(["--", "why"])).toBe(COMMAND_MODULES);
  });
});

const CLI = fileURLToPath(new URL("../bin/chronolog.mjs", import.meta.url));

describe("the built CLI, each command with only its own modules loaded", () => {
  it.each(COMMAND_MODULES.flatMap((m) => m.names))("chronolog %s --help", (name) => {
    const r = spawnSync(process.execPath, [CLI, name, "--help"], {
      encoding: "utf8",
      env: { ...process.env, CHRONOLOG_CODE_CACHE: "off" },
    });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Usage: chronolog ${name} `));
  });

  it("lists every command in the program's help", () => {
    const r = spawnSync(process.execPath, [CLI, "--help"], { encoding: "utf8" });
    expect(r.status).toBe(0);
    for (const name of COMMAND_MODULES.flatMap((m) => m.names))
      expect(r.stdout).toMatch(new RegExp(`\\n  ${name} `));
  });
});

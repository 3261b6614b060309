/*
 * The CLI's commands, each loaded only when it runs: a command's module (and what it imports,
 * the scheduler, the HTTP server, the clients of the other logs) is imported when the command
 * line names one of its commands, so `chronolog why` does not load the code of `up` or `serve`.
 * The help, an unknown command and a command line naming none load them all.
 */
import type { Command } from "commander";
import type { DataDirOptions } from "./data-dir.js";

type Register = (program: Command, globals: () => DataDirOptions) => void;

interface CommandModule {
  /** The top-level commands the module registers. */
  readonly names: readonly string[];
  readonly load: () => Promise<Register>;
}

/** In the order the help lists them. */
export const COMMAND_MODULES: readonly CommandModule[] = [
  {
    names: ["log"],
    load: async () => (await import("./commands/log.js")).registerLogCommands,
  },
  {
    names: ["declare", "pause", "resume", "retire"],
    load: async () => (await import("./commands/tasks.js")).registerTaskCommands,
  },
  {
    // The reads of a few tasks, a module of their own: they load little of the writes' code.
    names: ["tasks", "task", "why"],
    load: async () => (await import("./commands/task-reads.js")).registerTaskReadCommands,
  },
  {
    names: ["history", "attempts", "backfill"],
    load: async () => (await import("./commands/tasks.js")).registerTaskHistoryCommands,
  },
  {
    names: ["up", "scheduler"],
    load: async () => (await import("./commands/up.js")).registerUpCommand,
  },
  {
    names: ["rebuild"],
    load: async () => (await import("./commands/rebuild.js")).registerRebuildCommand,
  },
  {
    names: ["attempt"],
    load: async () => (await import("./commands/attempt.js")).registerAttemptCommands,
  },
  {
    names: ["retry", "mark"],
    load: async () => (await import("./commands/halted.js")).registerHaltedCommands,
  },
  {
    names: ["report"],
    load: async () => (await import("./commands/report.js")).registerReportCommand,
  },
  {
    names: ["logs"],
    load: async () => (await import("./commands/logs.js")).registerLogsCommand,
  },
  {
    names: ["alerts"],
    load: async () => (await import("./commands/alerts.js")).registerAlertsCommand,
  },
  {
    names: ["runs", "run", "rerun", "trigger"],
    load: async () => (await import("./commands/runs.js")).registerRunCommands,
  },
  {
    names: ["diff"],
    load: async () => (await import("./commands/diff.js")).registerDiffCommand,
  },
  {
    names: ["serve", "token"],
    load: async () => (await import("./commands/serve.js")).registerServeCommands,
  },
  {
    names: ["worker"],
    load: async () => (await import("./commands/worker.js")).registerWorkerCommand,
  },
  {
    names: ["workers"],
    load: async () => (await import("./commands/workers.js")).registerWorkersCommand,
  },
];

/** The program's options that take a value: the word after one is its value, not a command. */
const VALUE_OPTIONS = new Set(["--data-dir", "--log", "--file"]);
const VERSION_FLAGS = new Set(["-V", "--version"]);
const HELP_FLAGS = new Set(["-h", "--help"]);

/**
 * How a command line (arguments after node and the script) reads: the command it names, if any,
 * and whether the program's help or version is asked before it.
 */
export function readCommandLine(args: readonly string[]): {
  readonly command: string | undefined;
  readonly help: boolean;
  readonly version: boolean;
} {
  let help = false;
  let version = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") break;
    if (VALUE_OPTIONS.has(arg)) {
      i += 1;
      continue;
    }
    if (arg.startsWith("-")) {
      if (HELP_FLAGS.has(arg)) help = true;
      if (VERSION_FLAGS.has(arg)) version = true;
      continue;
    }
    return { command: arg, help, version };
  }
  return { command: undefined, help, version };
}

/**
 * The modules a command line needs: the one registering the command it names; none for a bare
 * `--version`; every one for the help asked before any command (it lists every command), for a
 * command no module registers (commander then says so and suggests one) and for a line naming none.
 */
export function modulesFor(args: readonly string[]): readonly CommandModule[] {
  const line = readCommandLine(args);
  if (line.help) return COMMAND_MODULES;
  const { command } = line;
  if (command === undefined) return line.version ? [] : COMMAND_MODULES;
  const found = COMMAND_MODULES.find((m) => m.names.includes(command));
  return found ? [found] : COMMAND_MODULES;
}

/** Registers on the program the commands a command line needs, loading only their modules. */
export async function registerCommandsFor(
  program: Command,
  globals: () => DataDirOptions,
  args: readonly string[],
): Promise<void> {
  const registers = await Promise.all(modulesFor(args).map((m) => m.load()));
  for (const register of registers) register(program, globals);
}

import { randomInt } from "node:crypto";
import { constants } from "node:os";
import { seedIdMaps } from "@chronolog/core";
import { Command, CommanderError } from "commander";
import { readCommandLine, registerCommandsFor } from "./commands.js";
import { type DataDirOptions, restrictUmask } from "./data-dir.js";
import { EXIT_CODE_HELP, exitCodeOf, messageOf, printable, printableConsole } from "./edge.js";
import { cliVersion } from "./package-files.js";

// The projection's maps are keyed by ids that producers choose: a seed of this process's own,
// set before any map is made, keeps a set of ids chosen in advance from colliding in them (and
// slowing every look-up).
seedIdMaps(randomInt(0x7fff_ffff));

// Names, messages and others' output are printed without a terminal's control characters.
printableConsole();

// What this process creates (the log, checkpoints, output files) is its own user's alone.
restrictUmask();

const version = cliVersion();

const program = new Command();
program
  .name("chronolog")
  .description("Chronolog: an event-sourced task scheduler")
  .version(version, "-V, --version", "print the version")
  .addHelpText("after", EXIT_CODE_HELP)
  .option(
    "--data-dir <dir>",
    "where the embedded log and checkpoints live (default ./.chronolog, or $CHRONOLOG_DATA_DIR)",
  )
  .option(
    "--log <url>",
    "the log: sqlite (the embedded file, default), kafka://HOST:PORT[,HOST:PORT]/TOPIC (kafka+ssl:// for TLS) or esdb://HOST:PORT[/STREAM][?tls=false] (or $CHRONOLOG_LOG)",
  )
  .option("--file <export>", "read the log from an export (log export), read-only, instead of the live log")
  .showHelpAfterError()
  .configureOutput({ outputError: (text, write) => write(printable(text)) })
  // A usage error (an unknown flag, a missing argument) is invalid input: exit 2, as the table
  // says, not the parser's own 1 (its message and the command's help are already printed).
  .exitOverride();

const globals = (): DataDirOptions => program.opts<DataDirOptions>();
// Only the modules of the command the line names are loaded (see commands.ts).
const args = process.argv.slice(2);

// A reader of the output that goes away (`chronolog tasks | head`): a command ends there,
// quietly, with 141 (128 + SIGPIPE), as a tool the signal ends does (Node ignores the signal,
// and its write fails instead); a service (`up`, `scheduler`, `serve`, a remote `worker`) writes
// its lines into nothing and goes on.
const SERVICES = new Set(["up", "scheduler", "serve", "worker"]);
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  if (!SERVICES.has(readCommandLine(args).command ?? "")) process.exit(128 + constants.signals.SIGPIPE);
});
registerCommandsFor(program, globals, args)
  .then(() => program.parseAsync(process.argv))

  .catch((error: unknown) => {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    process.stderr.write(`chronolog: ${printable(messageOf(error))}\n`);
    process.exitCode = exitCodeOf(error);
  });

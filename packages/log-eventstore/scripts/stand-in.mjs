// Runs the stand-in EventStoreDB server in a process of its own (for suites whose test process
// blocks on child processes, and for trying the CLI by hand): prints its connection string on
// the first line of stdout, restarts on SIGUSR2 (down for 300 ms), and stops on SIGTERM,
// SIGINT or when stdin closes. Needs the package built (`npx tsc -b`).
//   node packages/log-eventstore/scripts/stand-in.mjs [PORT]
import { EventStoreStandIn } from "../dist/stand-in.js";

const port = Number(process.argv[2] ?? 0);
const server = await EventStoreStandIn.start({ port });
process.stdout.write(`${server.url}\n`);
const stop = async () => {
  await server.stop();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("SIGUSR2", () => {
  process.stderr.write("stand-in: restarting (down for 300 ms)\n");
  void server.restart(300).then(() => process.stderr.write("stand-in: up again\n"));
});
process.stdin.on("end", stop);
process.stdin.resume();

// Sums up a CPU profile written by `node --cpu-prof` (for instance by `chronolog up` under
// BENCH_SCALE_CPU_PROF=DIR in bench/scale): the time of each function on its own (self: the
// samples it was the innermost frame of) and with what it called (total: the samples it was
// anywhere on the stack of, counted once a sample), the most first.
//
//   node bench/cpuprofile.mjs FILE.cpuprofile [--top N] [--per COUNT] [--name WORD]
//
// --per divides each time by COUNT (say, the completions of the run: microseconds per
// completion); --name keeps the functions whose name or file holds WORD. Functions are named
// with their file and line (in the CLI's bundle, the bundle's).
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const file = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
if (!file)
  throw new Error("usage: node bench/cpuprofile.mjs FILE.cpuprofile [--top N] [--per COUNT] [--name WORD]");
const top = Number(option("--top", "40"));
const per = Number(option("--per", "0"));
const word = option("--name", "");
if (!Number.isInteger(top) || top < 1)
  throw new Error(`--top takes a whole number of 1 or more, not ${option("--top")}`);
if (!Number.isFinite(per) || per < 0) throw new Error(`--per takes a count, not ${option("--per")}`);

const profile = JSON.parse(readFileSync(file, "utf8"));
if (!Array.isArray(profile.nodes) || !Array.isArray(profile.samples))
  throw new Error(`${file} is not a CPU profile (no nodes and samples)`);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
// Microseconds per node, from the time between samples.
const time = new Map();
profile.samples.forEach((id, i) => {
  time.set(id, (time.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const all = [...time.values()].reduce((a, b) => a + b, 0);
const nameOf = (n) => {
  const f = n.callFrame;
  const where = f.url ? ` ${f.url.split("/").slice(-2).join("/")}:${f.lineNumber + 1}` : "";
  return `${f.functionName || "(anonymous)"}${where}`;
};
const self = new Map();
const total = new Map();
for (const [id, us] of time) {
  const leaf = nameOf(byId.get(id));
  self.set(leaf, (self.get(leaf) ?? 0) + us);
  const seen = new Set();
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const name = nameOf(byId.get(at));
    if (seen.has(name)) continue; // a recursion counts once
    seen.add(name);
    total.set(name, (total.get(name) ?? 0) + us);
  }
}
const line = ([name, us]) =>
  `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / all).toFixed(1).padStart(5)}%${per > 0 ? ` ${(us / per).toFixed(1).padStart(8)} us` : ""}  ${name}`;
const list = (m) =>
  [...m]
    .filter(([name]) => word === "" || name.includes(word))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(line)
    .join("\n");
console.log(
  `${file}: ${(all / 1e6).toFixed(2)} s in ${profile.samples.length} samples${per > 0 ? `; us per ${per}` : ""}`,
);
console.log(`\nself (the innermost frame)\n${list(self)}`);
console.log(`\ntotal (anywhere on the stack)\n${list(total)}`);

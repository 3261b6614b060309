// The catalogue bench/scale and bench/kafka run: N hourly no-op tasks over 20 projects, each
// after 0 to 2 tasks declared before it (of other projects), as one YAML file. Seeded: the same
// catalogue at every run.

export const PROJECTS = 20;

/** A small seeded generator (mulberry32): the same catalogue at every run. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The catalogue of N tasks as one YAML file, written as a person writes one: task i in a random
 * project of 20, after 0, 1 or 2 random tasks declared before it in other projects. Options:
 * `end`, an endDate for every task (no interval past it comes due while a benchmark runs); `gate`,
 * the key of a task declared beside them that every task without parents waits for (holding it
 * paused holds the whole catalogue).
 */
export function catalogue(n, start, { end, gate } = {}) {
  const rnd = random(20261203);
  const project = new Uint8Array(n);
  const key = (i) => `p${project[i]}/acme/t${i}`;
  const lines = ["tasks:"];
  for (let i = 0; i < n; i++) {
    project[i] = Math.floor(rnd() * PROJECTS);
    const count = Math.floor(rnd() * 3);
    const parents = new Set();
    for (let tries = 0; parents.size < count && i > 0 && tries < 10; tries++) {
      const j = Math.floor(rnd() * i);
      if (project[j] !== project[i]) parents.add(j);
    }
    lines.push(
      `  - project: p${project[i]}`,
      "    account: acme",
      `    name: t${i}`,
      '    cron: "0 * * * *"',
      `    startDate: ${start}`,
      ...(end ? [`    endDate: ${end}`] : []),
      "    idempotent: true",
      "    operator: { type: noop }",
    );
    if (parents.size > 0) lines.push(`    parents: [${[...parents].map(key).join(", ")}]`);
    else if (gate) lines.push(`    parents: [${gate}]`);
  }
  return { text: `${lines.join("\n")}\n`, last: key(n - 1), lastWithParents: lastWithParents() };
  function lastWithParents() {
    // The last task that has parents: `why` has something to say about each of them.
    const i = lines.findLastIndex((l) => l.startsWith("    parents:"));
    const name = lines.findLastIndex((l, k) => k < i && l.startsWith("    name: "));
    const project = lines.findLastIndex((l, k) => k < i && l.startsWith("  - project: "));
    return `${lines[project].slice("  - project: ".length)}/acme/${lines[name].slice("    name: ".length)}`;
  }
}

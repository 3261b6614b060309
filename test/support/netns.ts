import { spawnSync } from "node:child_process";

/** A network namespace joined to this one by a veth pair, and a switch to cut the link. */
export interface LinkedNamespace {
  readonly name: string;
  /** The address of this side of the pair (reachable from inside). */
  readonly hostAddress: string;
  /** The address of the namespace's side. */
  readonly innerAddress: string;
  /** A command prefix that runs a program inside the namespace. */
  readonly exec: readonly string[];
  /** Drops every packet either way, silently: the endpoints see timeouts, not errors. */
  cut(): void;
  /** Lets packets through again. */
  restore(): void;
  /** Removes the namespace and the pair (nothing left behind, whatever state they are in). */
  remove(): void;
}

function ip(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync("ip", args, { encoding: "utf8" });
  return {
    ok: r.status === 0,
    out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim(),
  };
}

function must(args: string[]): void {
  const r = ip(args);
  if (!r.ok) throw new Error(`ip ${args.join(" ")} failed: ${r.out}`);
}

function tc(args: string[], inNamespace?: string): { ok: boolean; out: string } {
  const r = inNamespace
    ? spawnSync("ip", ["netns", "exec", inNamespace, "tc", ...args], { encoding: "utf8" })
    : spawnSync("tc", args, { encoding: "utf8" });
  return {
    ok: r.status === 0,
    out: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? r.error.message : ""}`.trim(),
  };
}

/**
 * Why a namespace cannot be made here, or undefined when it can: it needs root, `ip netns`
 * (iproute2) and `tc`. Tried on a namespace of its own, made and removed at once.
 */
export function namespacesUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "network namespaces need root";
  const probe = `chronolog-probe-${process.pid}`;
  const add = ip(["netns", "add", probe]);
  if (!add.ok) return `ip netns is unavailable: ${add.out}`;
  try {
    const t = tc(["qdisc", "show"], probe);
    if (!t.ok) return `tc is unavailable: ${t.out}`;
  } finally {
    ip(["netns", "del", probe]);
  }
  return undefined;
}

/**
 * Makes a namespace named after `label` and this process, with a veth pair between it and this
 * namespace on a /30 of 10.213.0.0/16 picked by the pid (so that test processes side by side
 * do not collide). The link is cut with a zero-length packet queue on both ends: every packet
 * is dropped where it is sent, without an error the sender could see, which is all the kernel
 * needs (no netem, no packet filter).
 */
export function linkedNamespace(label: string): LinkedNamespace {
  const id = process.pid % 16_384;
  const name = `chronolog-${label}-${process.pid}`;
  const outer = `cl${process.pid}h`;
  const inner = `cl${process.pid}n`;
  const base = id * 4;
  const address = (n: number) => `10.213.${(base + n) >> 8}.${(base + n) & 255}`;
  const hostAddress = address(1);
  const innerAddress = address(2);
  const remove = () => {
    ip(["netns", "del", name]);
    // (Deleting the namespace deletes the pair; this is for a pair made before the namespace.)
    ip(["link", "del", outer]);
  };
  remove();
  try {
    must(["netns", "add", name]);
    must(["link", "add", outer, "type", "veth", "peer", "name", inner]);
    must(["link", "set", inner, "netns", name]);
    must(["addr", "add", `${hostAddress}/30`, "dev", outer]);
    must(["link", "set", outer, "up"]);
    must(["netns", "exec", name, "ip", "addr", "add", `${innerAddress}/30`, "dev", inner]);
    must(["netns", "exec", name, "ip", "link", "set", inner, "up"]);
    must(["netns", "exec", name, "ip", "link", "set", "lo", "up"]);
  } catch (error) {
    remove();
    throw error;
  }
  const queue = (action: "add" | "del", dev: string, inNamespace?: string) => {
    const args = ["qdisc", action, "dev", dev, "root", ...(action === "add" ? ["pfifo", "limit", "0"] : [])];
    const r = tc(args, inNamespace);
    if (!r.ok) throw new Error(`tc ${args.join(" ")} failed: ${r.out}`);
  };
  return {
    name,
    hostAddress,
    innerAddress,
    exec: ["ip", "netns", "exec", name],
    cut() {
      queue("add", inner, name);
      queue("add", outer);
    },
    restore() {
      queue("del", inner, name);
      queue("del", outer);
    },
    remove,
  };
}

// bench/api's clients, in a worker thread of their own so that they do not share the API's event
// loop: timed requests from a few concurrent clients, a steady poll, and live-event readers.
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { parentPort } from "node:worker_threads";

const now = () => performance.timeOrigin + performance.now();

function get(agent, url, token) {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let bytes = 0;
      res.on("data", (c) => {
        bytes += c.length;
      });
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`GET ${url}: ${res.statusCode}`));
        else resolve(bytes);
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** `concurrency` clients each make `perClient` requests, one after another; ms per request. */
async function timed({ base, token, paths, concurrency, perClient }) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const ms = [];
  let bytes = 0;
  let k = 0;
  // A few requests first, so that connections are open and the server's code is warm.
  for (let i = 0; i < 50; i++) await get(agent, base + paths[i % paths.length], token);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < perClient; i++) {
        const path = paths[k++ % paths.length];
        const t0 = performance.now();
        const n = await get(agent, base + path, token);
        ms.push(performance.now() - t0);
        bytes += n;
      }
    }),
  );
  agent.destroy();
  return { ms, bytes };
}

/**
 * A bounded load: `count` requests due at `rate` per second in all, spread evenly and dealt in
 * turn to `concurrency` keep-alive clients. A request its client could not send when due (still
 * waiting for its previous answer) is timed from when it was due, so a slow answer that holds up
 * the next request counts in both; one sent on time is timed from its send.
 */
async function paced({ base, token, paths, concurrency, rate, count }) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  for (let i = 0; i < 50; i++) await get(agent, base + paths[i % paths.length], token);
  const ms = [];
  const t0 = performance.now() + 10;
  let lateStarts = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      for (let j = client; j < count; j += concurrency) {
        const due = t0 + (j * 1000) / rate;
        let wait = due - performance.now();
        let from = due;
        if (wait > 0) {
          // A timer may fire a little early (its clock is in whole ms): never send before due.
          while (wait > 0) {
            await new Promise((r) => setTimeout(r, wait));
            wait = due - performance.now();
          }
          // Sent when due, or late only by this thread's timer: timed from the send.
          from = performance.now();
        } else lateStarts += 1;
        await get(agent, base + paths[j % paths.length], token);
        ms.push(performance.now() - from);
      }
    }),
  );
  agent.destroy();
  return { ms, lateStarts, secs: (performance.now() - t0) / 1000 };
}

/** Requests at `rate` per second, spread evenly, until told to stop. */
function poll({ base, token, paths, rate }) {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  let made = 0;
  let failed = 0;
  let stopped = false;
  const t0 = performance.now();
  const tick = () => {
    if (stopped) return;
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    while (made < due) {
      const path = paths[made++ % paths.length];
      get(agent, base + path, token).catch(() => {
        failed += 1;
      });
    }
    setTimeout(tick, 5);
  };
  tick();
  return () => {
    stopped = true;
    agent.destroy();
    return { made, failed, secs: (performance.now() - t0) / 1000 };
  };
}

/**
 * Reads the live events until `count` Note events arrived; when each arrived (epoch ms), once
 * `connected` has resolved (the response began).
 */
function follow({ base, token, from, count }) {
  let connected;
  const opened = new Promise((r) => {
    connected = r;
  });
  const done = new Promise((resolve, reject) => {
    const received = [];
    const req = request(
      `${base}/api/v1/events?from=${from}`,
      { headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`events: ${res.statusCode}`));
        connected();
        res.setEncoding("utf8");
        let buffer = "";
        res.on("data", (chunk) => {
          const at = now();
          buffer += chunk;
          let cut = buffer.indexOf("\n\n");
          while (cut >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            if (block.includes("event: Note")) {
              const id = /^id: (\d+)$/m.exec(block)?.[1];
              received.push([id, at]);
            }
            cut = buffer.indexOf("\n\n");
          }
          if (received.length >= count) {
            req.destroy();
            resolve(received);
          }
        });
      },
    );
    req.on("error", (e) => {
      if (received.length < count) reject(e);
    });
    req.end();
  });
  return { opened, done };
}

let stopPoll = null;
parentPort.on("message", async (m) => {
  try {
    if (m.kind === "timed") parentPort.postMessage(await timed(m));
    else if (m.kind === "paced") parentPort.postMessage(await paced(m));
    else if (m.kind === "poll") {
      stopPoll = poll(m);
      parentPort.postMessage({ started: true });
    } else if (m.kind === "stop") parentPort.postMessage(stopPoll?.() ?? null);
    else if (m.kind === "follow") {
      const readers = Array.from({ length: m.readers }, () => follow(m));
      await Promise.all(readers.map((r) => r.opened));
      parentPort.postMessage({ connected: true });
      parentPort.postMessage({ received: await Promise.all(readers.map((r) => r.done)) });
    }
  } catch (error) {
    parentPort.postMessage({ error: String(error?.stack ?? error) });
  }
});

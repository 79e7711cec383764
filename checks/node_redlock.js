// A lock library's workload for `locklab check --library node-redlock`:
// node-redlock (Redlock over ioredis), used unchanged.
//
// One client: loop acquire -> (with --fenced: ask the first node for the
// lab's fence) -> work -> one write to the lab's resource -> release, until
// the run's end. Every call becomes one line of core's history format (JSON
// lines, core/src/history/), appended to this client's own file as soon as
// it completes, in milliseconds on the runner's clock: CLOCK_MONOTONIC
// (process.hrtime) minus the runner's start, passed as t0_ns. The config is
// one JSON argument; see checks/python_locks.py for its fields, including
// how a round goes (write_first, read).
"use strict";
const fs = require("fs");
const net = require("net");
const Redis = require("ioredis");
const Redlock = require("redlock").default;

const cfg = JSON.parse(process.argv[2]);
const T0 = BigInt(cfg.t0_ns);
const out = fs.openSync(cfg.history, "a");
const FENCE = `if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('incr', KEYS[2])
end
return false`;

const now = () => Number((process.hrtime.bigint() - T0) / 1000000n);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function log(op, invoke, ok, fields) {
  const line = { client: cfg.client, op, key: cfg.key, invoke_ms: invoke };
  if (ok !== null) {
    line.complete_ms = now();
    line.ok = ok;
  }
  for (const [k, v] of Object.entries(fields)) if (v !== null && v !== undefined) line[k] = v;
  fs.writeSync(out, JSON.stringify(line) + "\n");
}

// The runner's fenced store: `W client key fence data` -> `OK seq` or `NO why`.
function resource(addr) {
  const [host, port] = [addr.slice(0, addr.lastIndexOf(":")), Number(addr.slice(addr.lastIndexOf(":") + 1))];
  const sock = net.connect(port, host);
  let buf = "";
  const waiting = [];
  sock.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const w = waiting.shift();
      if (w) w(l);
    }
  });
  sock.on("error", () => waiting.splice(0).forEach((w) => w("ERR")));
  return (fence, data) =>
    new Promise((resolve) => {
      waiting.push((l) => resolve(l.startsWith("OK ")));
      sock.write(`W ${cfg.client} ${cfg.key} ${fence === null ? "-" : fence} ${data}\n`);
    });
}

async function main() {
  const clients = cfg.urls.map((u) => new Redis(u, { maxRetriesPerRequest: 1 }));
  const redlock = new Redlock(clients, { retryCount: 10, retryDelay: 100, retryJitter: 50 });
  const write = resource(cfg.resource);
  let n = 0;
  while (now() < cfg.end_ms) {
    let t = now();
    let lock;
    try {
      lock = await redlock.acquire([cfg.key], cfg.ttl_ms);
    } catch (e) {
      // ExecutionError: no quorum after every retry; the attempts were undone.
      log("acquire", t, false, { token: "none" });
      continue;
    }
    log("acquire", t, true, { token: lock.value, ttl_ms: cfg.ttl_ms });
    let fence = null;
    if (cfg.fenced) {
      try {
        fence = await clients[0].eval(FENCE, 2, cfg.key, cfg.key + ":fence", lock.value);
      } catch (e) {
        fence = null;
      }
    }
    n += 1;
    const logged = async (data) => {
      const w = now();
      const ok = await write(fence, data);
      log("write", w, ok, { token: lock.value, fence, value: data });
    };
    if (cfg.write_first) await logged(`${cfg.client}-${n}-first`);
    await sleep(cfg.work_ms);
    let worked = true;
    if (cfg.read) {
      // The job's input from the lock's node, across the client's link; given
      // up after 5 s as the Python workloads' socket_timeout does.
      const got = clients[0].get(cfg.key + ":data").then(() => true, () => false);
      worked = await Promise.race([got, sleep(5000).then(() => false)]);
    }
    if (worked) await logged(`${cfg.client}-${n}`);
    t = now();
    let released = true;
    try {
      await lock.release();
    } catch (e) {
      released = false;
    }
    log("release", t, released, { token: lock.value });
  }
  clients.forEach((c) => c.disconnect());
  fs.closeSync(out);
  process.exit(0);
}

main();

"""A lock library's workload for `locklab check --library`: redis-py `Lock`,
pottery `Redlock`, python-redis-lock, each used unchanged.

One client: loop acquire -> (with --fenced: ask the lock's node for the
lab's fence) -> work -> one write to the lab's resource -> release, until the
run's end. Every call becomes one line of core's history format (JSON lines,
`core/src/history/`), appended to this client's own file as soon as it
completes, with times in milliseconds on the runner's clock: CLOCK_MONOTONIC
(time.monotonic_ns) minus the runner's start, passed as t0_ns.

The config is one JSON argument (written by the runner, backend/src/cli/check_run.rs):
library, client, urls (one per node), key, resource ("host:port"),
history (path), ttl_ms (null: no timeout), work_ms, end_ms, fenced, t0_ns,
and failover (a URL, or null): where the master's replica listens, for the
`failover` nemesis. Once a call to the master fails, the client goes on
against that URL, as a client that asks Sentinel for the new master does.

How a round goes (the runner picks it for the fault, so the fault can show
what it breaks):
- write_first: one write right after the grant as well as the one after the
  work (a job that marks itself started): with two holders at once, each
  writes while the other holds, so the resource witnesses both.
- read: the work reads from the lock's node (`GET key:data`) before the
  write, as a job that loads its input does. That read crosses the client's
  link, so a delayed or cut link stretches the work past the lease.
- renew: the lock is renewed (`reacquire()`) after the first write, as a
  long job's watchdog does; logged as an extension.

An acquire whose outcome is unknown (the call raised: it may or may not have
taken effect) is logged without `ok` and, unless the library already chose
its token, without `token`: the checker takes it as unknown.
"""
import json
import socket
import sys
import time

CFG = json.loads(sys.argv[1])
T0 = int(CFG["t0_ns"])
CLIENT = CFG["client"]
KEY = CFG["key"]
TTL_MS = CFG["ttl_ms"]
OUT = open(CFG["history"], "a", buffering=1)

# The lab's fence: an INCR that only the current holder gets, in the same
# script that checks it holds the lock, so fences follow the order of grants.
FENCE = """if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('incr', KEYS[2])
end
return false"""


def now():
    return (time.monotonic_ns() - T0) // 1_000_000


def log(op, invoke, ok, **fields):
    line = {"client": CLIENT, "op": op, "key": KEY, "invoke_ms": invoke}
    if ok is not None:
        line["complete_ms"] = now()
        line["ok"] = ok
    line.update({k: v for k, v in fields.items() if v is not None})
    OUT.write(json.dumps(line) + "\n")


class Resource:
    """The runner's fenced store: `W client key fence data` -> `OK seq` or `NO why`."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.file = self.sock.makefile("r")

    def write(self, fence, data):
        f = "-" if fence is None else str(fence)
        self.sock.sendall(f"W {CLIENT} {KEY} {f} {data}\n".encode())
        reply = self.file.readline()
        return reply.startswith("OK ")


def text(token):
    """A library's token as text; None (or empty) when it has none yet."""
    if not token:
        return None
    return token.decode() if isinstance(token, bytes) else str(token)


def make_lock(urls):
    import redis

    # Under `failover` the client goes to the promoted replica on the first
    # connection error, as a Sentinel-aware client does, instead of
    # retrying the dead master (redis-py's default: ten retries).
    retry = {}
    if CFG.get("failover"):
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        retry = {"retry": Retry(NoBackoff(), 0)}
    conns = [redis.Redis.from_url(u, socket_timeout=5, **retry) for u in urls]
    lib = CFG["library"]
    ttl_s = None if TTL_MS is None else TTL_MS / 1000
    if lib in ("redis-py", "redis-py-no-timeout"):
        lock = redis.lock.Lock(conns[0], KEY, timeout=ttl_s, blocking_timeout=2 * (ttl_s or 1))
        return conns[0], KEY, lambda: lock.acquire(), lock.release, lambda: text(lock.local.token), lock.reacquire
    if lib == "redis-py-timeout-0":
        # "hold until released" (SET NX without PX), renewed with
        # reacquire(): redis-py #4279, whose script sends PEXPIRE key 0.
        lock = redis.lock.Lock(conns[0], KEY, timeout=0, blocking_timeout=2)
        return conns[0], KEY, lambda: lock.acquire(), lock.release, lambda: text(lock.local.token), lock.reacquire
    if lib == "python-redis-lock":
        import redis_lock

        name = KEY[len("lock:"):]
        expire = max(1, round(ttl_s))  # whole seconds; a wait may not exceed it
        lock = redis_lock.Lock(conns[0], name, expire=expire)
        return conns[0], KEY, lambda: lock.acquire(timeout=expire), lock.release, lambda: lock.id, lock.extend
    if lib == "pottery":
        import pottery

        # The fence comes from the first master; pottery returns once a
        # majority granted, so now and then that master has not yet: that
        # round's write has no fence and a fenced resource refuses it.
        name = KEY[len("redlock:"):]
        lock = pottery.Redlock(key=name, masters=conns, auto_release_time=ttl_s)
        return (
            conns[0],
            KEY,
            lambda: lock.acquire(timeout=2 * ttl_s),
            lock.release,
            lambda: text(lock._uuid),
            lock.extend,
        )
    raise SystemExit(f"unknown library {lib}")


class Failover:
    """The URLs in use: the master's, then (once a call failed) the replica's."""

    def __init__(self):
        self.lock = make_lock(CFG["urls"])
        self.spare = CFG.get("failover")

    def failed(self, err):
        import redis

        gone = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
        if self.spare and isinstance(err, gone):
            self.lock = make_lock([self.spare])
            self.spare = None


def main():
    conn = Failover()
    node, key, acquire, release, token, renew = conn.lock
    resource = Resource(CFG["resource"])
    ttl = TTL_MS if TTL_MS is not None else 2**63
    n = 0
    while now() < CFG["end_ms"]:
        t = now()
        try:
            got = bool(acquire())
        except Exception as err:  # the outcome is unknown: the call may have taken effect
            log("acquire", t, None, token=token())
            conn.failed(err)
            node, key, acquire, release, token, renew = conn.lock
            time.sleep(0.05)
            continue
        log("acquire", t, got, token=token() or "none", ttl_ms=ttl if got else None)
        if not got:
            continue
        tok = token()
        fence = None
        if CFG["fenced"]:
            try:
                fence = node.eval(FENCE, 2, key, key + ":fence", tok)
            except Exception:
                fence = None
        n += 1
        if CFG.get("write_first"):
            write(resource, fence, tok, f"{CLIENT}-{n}-first")
        if CFG.get("renew"):
            t = now()
            try:
                ok = bool(renew())
            except Exception:  # LockNotOwnedError: not extended
                ok = False
            log("extend", t, ok, token=tok, ttl_ms=ttl if ok else None)
        time.sleep(CFG["work_ms"] / 1000)
        worked = True
        if CFG.get("read"):
            try:
                node.get(key + ":data")
            except Exception:  # the link stayed down past the client's retries: no input, no write
                worked = False
        if worked:
            write(resource, fence, tok, f"{CLIENT}-{n}")
        t = now()
        try:
            release()
            ok = True
        except Exception as err:  # LockNotOwnedError, NotAcquired, ReleaseUnlockedLock, or the node is gone
            ok = False
            conn.failed(err)
            node, key, acquire, release, token, renew = conn.lock
        log("release", t, ok, token=tok)


def write(resource, fence, tok, data):
    """One write to the lab's resource, logged; its outcome is the resource's record."""
    t = now()
    try:
        ok = resource.write(fence, data)
    except OSError:
        ok = None
    log("write", t, ok, token=tok, fence=fence, value=data)


main()

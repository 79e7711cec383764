"""python-redis-lock, unchanged, against the server at argv[1].

Prints one line per observation; the Rust test runs it against sim-server
and against a real redis-server and compares the transcripts.
"""
import sys
import threading
import time

import redis
import redis_lock

url = sys.argv[1]
conn = redis.Redis.from_url(url)
conn.flushall()
out = []

holder = redis_lock.Lock(conn, "res", expire=30, id="holder")
out.append(("holder acquires", holder.acquire(blocking=False)))
other = redis_lock.Lock(redis.Redis.from_url(url), "res", expire=30, id="other")
out.append(("non-blocking acquire while held", other.acquire(blocking=False)))

got = []


def waiter():
    c = redis.Redis.from_url(url)
    w = redis_lock.Lock(c, "res", expire=30, id="waiter")
    got.append(w.acquire(blocking=True, timeout=20))
    got.append(c.get("lock:res"))
    w.release()


t = threading.Thread(target=waiter)
t.start()
# Wait (without a time limit on speed) until the waiter sits in BLPOP.
deadline = time.monotonic() + 30
while conn.info("clients")["blocked_clients"] < 1:
    assert time.monotonic() < deadline, "the waiter never blocked"
    time.sleep(0.01)
out.append(("waiter acquired while held", bool(got)))
holder.release()  # the release script LPUSHes the signal: wakes the waiter
t.join(30)
out.append(("waiter woken by release, saw", got))
out.append(("lock key after the waiter released", conn.exists("lock:res")))

first = redis_lock.Lock(conn, "t", expire=30)
first.acquire()
second = redis_lock.Lock(redis.Redis.from_url(url), "t", expire=30)
out.append(("blocking acquire with timeout 1 on a held lock", second.acquire(timeout=1)))
first.release()
out.append(("after release, acquire", second.acquire(blocking=False)))
try:
    first.release()
except redis_lock.NotAcquired as e:
    out.append(("release of a lock not held", type(e).__name__))
second.release()

ext = redis_lock.Lock(conn, "x", expire=100)
ext.acquire()
ext.extend(200)
out.append(("ttl after extend(200)", conn.ttl("lock:x") > 100))
ext.release()
out.append(("keys left", sorted(k for k in conn.keys("lock:*"))))

for line in out:
    print(*line)

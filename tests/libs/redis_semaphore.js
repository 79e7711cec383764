// redis-semaphore's Semaphore, unchanged, with ioredis, against the server
// at argv[2]. Prints one line per observation; the Rust test compares the
// transcript from sim-server with the one from a real redis-server.
const Redis = require('ioredis')
const { Semaphore } = require('redis-semaphore')

const url = process.argv[2]

async function main() {
  const admin = new Redis(url)
  await admin.flushall()
  const out = []
  const opts = { lockTimeout: 30000, acquireTimeout: 20000, retryInterval: 5, refreshInterval: 0 }
  const clients = [new Redis(url), new Redis(url), new Redis(url)]
  const a = new Semaphore(clients[0], 'sem', 2, opts)
  const b = new Semaphore(clients[1], 'sem', 2, opts)
  const c = new Semaphore(clients[2], 'sem', 2, opts)
  await a.acquire()
  await b.acquire()
  out.push(['holders after two acquires', await admin.zcard('semaphore:sem')])
  out.push(['third tryAcquire while full', await c.tryAcquire()])
  let done = false
  const waiting = c.acquire().then(() => { done = true })
  await new Promise((r) => setTimeout(r, 50))
  out.push(['third acquired while full', done])
  await a.release()
  await waiting
  out.push(['third acquired after a release', done])
  out.push(['holders', await admin.zcard('semaphore:sem')])
  await b.release()
  await c.release()
  out.push(['semaphore key after all released', await admin.exists('semaphore:sem')])

  // A holder that stops refreshing expires: the next acquire's script
  // drops it (ZREMRANGEBYSCORE by its acquire time) and takes its place.
  const mk = (cl, lockTimeout) =>
    new Semaphore(cl, 'exp', 1, { lockTimeout, acquireTimeout: 5000, retryInterval: 5, refreshInterval: 0 })
  const short = mk(clients[0], 1500)
  out.push(['short-lived holder acquires', await short.tryAcquire()])
  out.push(['holders', await admin.zcard('semaphore:exp')])
  await new Promise((r) => setTimeout(r, 2000))
  const late = mk(clients[1], 30000)
  out.push(['tryAcquire after the holder expired', await late.tryAcquire()])
  out.push(['holders', await admin.zcard('semaphore:exp')])
  await late.release()

  for (const l of out) console.log(l.join(' '))
  for (const cl of clients) cl.disconnect()
  admin.disconnect()
}

main().catch((e) => { console.error(e); process.exit(1) })

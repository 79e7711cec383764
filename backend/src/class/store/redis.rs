//! [`RedisStore`]: class logs in Redis, for several `locklab serve`
//! instances serving one class (`--class-store redis://host:port/db`).
//!
//! # Keys (all under [`PREFIX`])
//!
//! * `locklab:class:CODE` — a hash: `secret_hash` (never the secret); it is how [`ClassStore::claim`] reserves a
//!   code (`HSETNX`) and [`ClassStore::exists`] finds a class.
//! * `locklab:class:CODE:log` — a stream: the class's entries (field `e`,
//!   an [`LogEntry`] as JSON), in the order every instance applies them.
//!   A follower's `since` is the hub's stream id, the same on every
//!   instance because each applies the same log.
//! * `locklab:class:instance:ID` — an instance's heartbeat, renewed every
//!   [`super::HEARTBEAT`] with a TTL of [`INSTANCE_TTL`]: an instance whose
//!   key expired was killed, and another appends the `Left` it could not.
//! * `locklab:class:instances` — a sorted set of the class URLs the live
//!   instances advertise (`--class-url`), scored by when each expires:
//!   what followers are told to reconnect to when their instance dies.
//!
//! Both keys get a TTL of the class's idle timeout plus a margin on every
//! append, so an idle class leaves nothing behind, and a short one when the
//! presenter ends the class (long enough for every instance to read the
//! end). The log is not trimmed: it *is* the class (a restarted instance
//! replays it), and its length is bounded by the hub's caps on what gets
//! logged (a repeated answer or a refused control is never appended).
//!
//! The `redis` crate is synchronous here, so the store runs two threads,
//! each with its own connection: a writer that pipelines whatever appends
//! are waiting into one round trip, and a reader that `XREAD`s the logs
//! this instance follows (`BLOCK` [`READ_BLOCK`]) and hands batches to the
//! async reader of the web pump.

use std::collections::HashMap;
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::Duration;

use locklab_core::class::{ClassCode, Control};
use redis::streams::StreamReadReply;
use tokio::sync::{mpsc, oneshot};

use super::{Beat, BoxFuture, ClassStore, StoreError, BATCH, INSTANCE_TTL};
use crate::class::hub::{LogEntry, What};

/// Every key of the class store starts with this.
pub const PREFIX: &str = "locklab:class:";
/// How long one `XREAD` waits for new entries before the reader looks at
/// the set of followed logs again (a class followed since).
const READ_BLOCK: Duration = Duration::from_millis(20);
/// An ended class's keys stay this long, for other instances to read the end.
const ENDED_TTL: Duration = Duration::from_secs(60);
/// Added to the idle timeout for the keys' TTL.
const TTL_MARGIN: Duration = Duration::from_secs(60);
/// A Redis round trip longer than this is an error (the store is down).
const IO_TIMEOUT: Duration = Duration::from_secs(5);

fn hash_key(code: &ClassCode) -> String {
    format!("{PREFIX}{code}")
}

fn log_key(code: &ClassCode) -> String {
    format!("{PREFIX}{code}:log")
}

/// An instance's heartbeat: a key that expires unless renewed; its value
/// is the class URL the instance advertises.
fn instance_key(instance: &str) -> String {
    format!("{PREFIX}instance:{instance}")
}

/// The live instances' class URLs ([`LIVE_URLS`]).
fn instances_key() -> String {
    format!("{PREFIX}instances")
}

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Redis(e.to_string())
}

struct Write {
    code: ClassCode,
    json: String,
    end: bool,
    done: oneshot::Sender<Result<(), StoreError>>,
}

/// The class logs in Redis (see the module doc).
pub struct RedisStore {
    writes: std_mpsc::SyncSender<Write>,
    /// For `claim` and `exists`.
    misc: Arc<Mutex<Link>>,
    /// The logs followed, with the last id read of each.
    cursors: Arc<Mutex<HashMap<ClassCode, String>>>,
    batches: tokio::sync::Mutex<mpsc::Receiver<Vec<(ClassCode, LogEntry)>>>,
}

/// A connection that is made again after an error.
struct Link {
    client: redis::Client,
    conn: Option<redis::Connection>,
}

impl Link {
    fn new(client: redis::Client) -> Link {
        Link { client, conn: None }
    }

    fn run<T>(&mut self, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>) -> Result<T, StoreError> {
        if self.conn.is_none() {
            let c = self.client.get_connection_with_timeout(IO_TIMEOUT).map_err(err)?;
            c.set_read_timeout(Some(IO_TIMEOUT)).map_err(err)?;
            c.set_write_timeout(Some(IO_TIMEOUT)).map_err(err)?;
            self.conn = Some(c);
        }
        let conn = self.conn.as_mut().ok_or(StoreError::Closed)?;
        let r = f(conn);
        if r.is_err() {
            // Made again on the next call.
            self.conn = None;
        }
        r.map_err(err)
    }
}

impl RedisStore {
    /// Connect to `url` (checked now: a wrong URL fails at startup);
    /// `idle` is the classes' idle timeout (the keys' TTL is a little
    /// longer).
    pub fn open(url: &str, idle: Duration) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(err)?;
        let mut misc = Link::new(client.clone());
        misc.run(|c| redis::cmd("PING").query::<String>(c))?;
        let ttl = (idle + TTL_MARGIN).as_secs().max(1);
        let (writes, queued) = std_mpsc::sync_channel::<Write>(4 * BATCH);
        let writer = Link::new(client.clone());
        std::thread::Builder::new()
            .name("class-store-writer".into())
            .spawn(move || write_loop(writer, queued, ttl))
            .map_err(err)?;
        let cursors = Arc::new(Mutex::new(HashMap::new()));
        let (batch_tx, batches) = mpsc::channel(4);
        let reader = Link::new(client);
        let followed = cursors.clone();
        std::thread::Builder::new()
            .name("class-store-reader".into())
            .spawn(move || read_loop(reader, followed, batch_tx))
            .map_err(err)?;
        Ok(RedisStore {
            writes,
            misc: Arc::new(Mutex::new(misc)),
            cursors,
            batches: tokio::sync::Mutex::new(batches),
        })
    }

    fn misc<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T> + Send + 'static,
    ) -> BoxFuture<'_, Result<T, StoreError>> {
        let misc = self.misc.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || misc.lock().unwrap_or_else(|p| p.into_inner()).run(f))
                .await
                .map_err(err)?
        })
    }
}

impl ClassStore for RedisStore {
    fn claim<'a>(&'a self, code: &'a ClassCode, secret_hash: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let (key, hash) = (hash_key(code), secret_hash.to_owned());
        self.misc(move |c| {
            let fresh: bool = redis::cmd("HSETNX").arg(&key).arg("secret_hash").arg(&hash).query(c)?;
            if fresh {
                // Until the first append renews it.
                redis::cmd("EXPIRE")
                    .arg(&key)
                    .arg(TTL_MARGIN.as_secs())
                    .query::<()>(c)?;
            }
            Ok(fresh)
        })
    }

    fn exists<'a>(&'a self, code: &'a ClassCode) -> BoxFuture<'a, Result<bool, StoreError>> {
        let key = hash_key(code);
        self.misc(move |c| redis::cmd("EXISTS").arg(&key).query::<bool>(c))
    }

    fn follow(&self, code: &ClassCode) {
        let mut cursors = self.cursors.lock().unwrap_or_else(|p| p.into_inner());
        cursors.entry(code.clone()).or_insert_with(|| "0-0".to_owned());
    }

    fn append<'a>(&'a self, code: &'a ClassCode, entry: &'a LogEntry) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let json = serde_json::to_string(entry).map_err(err)?;
            let end = matches!(
                entry.what,
                What::Control {
                    control: Control::End,
                    ..
                }
            );
            let (done, answer) = oneshot::channel();
            let write = Write {
                code: code.clone(),
                json,
                end,
                done,
            };
            let writes = self.writes.clone();
            // The queue is bounded: a full one waits off the runtime.
            tokio::task::spawn_blocking(move || writes.send(write))
                .await
                .map_err(err)?
                .map_err(|_| StoreError::Closed)?;
            answer.await.map_err(|_| StoreError::Closed)?
        })
    }

    fn next(&self) -> BoxFuture<'_, Option<Vec<(ClassCode, LogEntry)>>> {
        Box::pin(async move { self.batches.lock().await.recv().await })
    }

    fn heartbeat<'a>(
        &'a self,
        me: &'a str,
        url: &'a str,
        others: Vec<String>,
    ) -> BoxFuture<'a, Result<Beat, StoreError>> {
        let (mine, url) = (instance_key(me), url.to_owned());
        self.misc(move |c| {
            let mut pipe = redis::pipe();
            pipe.cmd("SET")
                .arg(&mine)
                .arg(&url)
                .arg("PX")
                .arg(INSTANCE_TTL.as_millis() as u64)
                .ignore();
            // The advertised URLs, each until its instance's last beat
            // plus the TTL, on the server's clock (instances' clocks may
            // differ).
            pipe.cmd("EVAL")
                .arg(LIVE_URLS)
                .arg(1)
                .arg(instances_key())
                .arg(&url)
                .arg(INSTANCE_TTL.as_millis() as u64);
            for other in &others {
                pipe.cmd("EXISTS").arg(instance_key(other));
            }
            let (live, alive): (Vec<String>, Vec<bool>) = {
                let v: Vec<redis::Value> = pipe.query(c)?;
                let mut v = v.into_iter();
                let live = redis::from_redis_value(v.next().unwrap_or(redis::Value::Nil))?;
                let alive = v.map(redis::from_redis_value).collect::<Result<_, _>>()?;
                (live, alive)
            };
            let dead = others
                .into_iter()
                .zip(alive)
                .filter(|(_, a)| !a)
                .map(|(o, _)| o)
                .collect();
            Ok(Beat { dead, live })
        })
    }
}

/// The live instances' class URLs: a sorted set scored by when each
/// stops being live (the server's `TIME` + the TTL); this instance's is
/// renewed, the expired dropped, the rest returned.
const LIVE_URLS: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return redis.call('ZRANGE', KEYS[1], 0, -1)
";

/// The writer thread: each round trip appends every write waiting (up to
/// [`BATCH`]) and renews the TTLs of the classes written.
fn write_loop(mut link: Link, queued: std_mpsc::Receiver<Write>, ttl: u64) {
    while let Ok(first) = queued.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match queued.try_recv() {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        let mut pipe = redis::pipe();
        let mut ttls: HashMap<&ClassCode, u64> = HashMap::new();
        for w in &batch {
            pipe.cmd("XADD")
                .arg(log_key(&w.code))
                .arg("*")
                .arg("e")
                .arg(&w.json)
                .ignore();
            let t = if w.end { ENDED_TTL.as_secs() } else { ttl };
            ttls.insert(&w.code, t);
        }
        for (code, t) in ttls {
            for key in [hash_key(code), log_key(code)] {
                pipe.cmd("EXPIRE").arg(key).arg(t).ignore();
            }
        }
        let done = link.run(|c| pipe.query::<()>(c));
        for w in batch {
            let _ = w
                .done
                .send(done.as_ref().map(|_| ()).map_err(|e| StoreError::Redis(e.to_string())));
        }
    }
}

/// The reader thread: `XREAD` the followed logs from their cursors, hand
/// each batch to the pump; ends when the pump is gone.
fn read_loop(
    mut link: Link,
    cursors: Arc<Mutex<HashMap<ClassCode, String>>>,
    batches: mpsc::Sender<Vec<(ClassCode, LogEntry)>>,
) {
    loop {
        if batches.is_closed() {
            return;
        }
        let followed: Vec<(ClassCode, String)> = {
            let c = cursors.lock().unwrap_or_else(|p| p.into_inner());
            c.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        if followed.is_empty() {
            std::thread::sleep(READ_BLOCK);
            continue;
        }
        let read = link.run(|c| {
            redis::cmd("XREAD")
                .arg("COUNT")
                .arg(BATCH)
                .arg("BLOCK")
                .arg(READ_BLOCK.as_millis() as u64)
                .arg("STREAMS")
                .arg(followed.iter().map(|(code, _)| log_key(code)).collect::<Vec<_>>())
                .arg(followed.iter().map(|(_, id)| id.as_str()).collect::<Vec<_>>())
                .query::<Option<StreamReadReply>>(c)
        });
        let reply = match read {
            Ok(Some(reply)) => reply,
            Ok(None) => continue,
            Err(_) => {
                // Down: try again shortly (appends fail meanwhile).
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        let mut batch = Vec::new();
        let mut advanced = Vec::new();
        for key in reply.keys {
            let Some((code, _)) = followed.iter().find(|(c, _)| log_key(c) == key.key) else {
                continue;
            };
            for id in &key.ids {
                let entry = id
                    .get::<String>("e")
                    .and_then(|json| serde_json::from_str::<LogEntry>(&json).ok());
                // An entry this version cannot read is skipped, not fatal.
                if let Some(entry) = entry {
                    batch.push((code.clone(), entry));
                }
            }
            if let Some(last) = key.ids.last() {
                advanced.push((code.clone(), last.id.clone()));
            }
        }
        {
            let mut c = cursors.lock().unwrap_or_else(|p| p.into_inner());
            for (code, id) in advanced {
                c.insert(code, id);
            }
        }
        if !batch.is_empty() && batches.blocking_send(batch).is_err() {
            return;
        }
    }
}

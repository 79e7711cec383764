//! Failover by Redis Sentinel itself: three `redis-sentinel` processes
//! (Debian's `redis-sentinel` package) watching a managed master and its
//! replica, on free loopback ports.
//!
//! This is the slow, real path; the manual promote (`REPLICAOF NO ONE`,
//! [`crate::real::topology::NodeFault::Promote`]) stays the fast one. With the master
//! crashed or paused, each sentinel marks it subjectively down
//! (`+sdown`) after [`DOWN_AFTER_MS`] without a valid reply, the sentinels
//! agree it is objectively down (`+odown`, [`QUORUM`] of them), elect a
//! leader, which promotes the replica (`+promoted-slave`,
//! `+failover-end`), and every sentinel announces the new address
//! (`+switch-master`). A client finds the master the way client libraries
//! do (redis-py's `Sentinel.discover_master`, Jedis's
//! `JedisSentinelPool`): it asks the sentinels in turn
//! `SENTINEL GET-MASTER-ADDR-BY-NAME`, and checks that the address it got
//! answers `ROLE` with `master`.
//!
//! Every sentinel's events are read from its own pub/sub (`PSUBSCRIBE *`,
//! the interface Sentinel documents for them) by one thread each, stamped
//! with the time since the sentinels started, for the timeline.
//!
//! The timings are short so a failover takes seconds, not the minutes of
//! the defaults (30 s down-after, 3 min failover-timeout); the hello
//! messages by which sentinels find each other still take ~2 s, so
//! [`Sentinels::start`] waits until every sentinel knows the replica and
//! the two others — a quorum cannot form before that.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use locklab_core::reply::Reply;
use locklab_core::trace::EventKind;
use serde::{Deserialize, Serialize};

use crate::real::conn::command;
use crate::real::process::{find_on_path, free_port};

/// The name the sentinels monitor the master under.
pub const MASTER_NAME: &str = "locklab";
/// How many sentinels must agree the master is down.
pub const QUORUM: u32 = 2;
/// How many sentinels run.
pub const SENTINELS: usize = 3;
/// `down-after-milliseconds`: silence before `+sdown`.
pub const DOWN_AFTER_MS: u64 = 1000;
/// `failover-timeout`: also how long before a failed attempt is retried
/// (twice this) and a sentinel votes again.
pub const FAILOVER_TIMEOUT_MS: u64 = 3000;

/// How long the sentinels may take to find each other and the replica.
const READY_DEADLINE: Duration = Duration::from_secs(20);
const POLL: Duration = Duration::from_millis(20);

/// The panic or error text when there is no `redis-sentinel`.
pub const SENTINEL_NOT_FOUND: &str = "redis-sentinel not found: install it with \
    `sudo apt-get install -y redis-sentinel` (scripts/setup.sh does)";

/// Locate `redis-sentinel` on `PATH` (or at `$REDIS_SENTINEL`).
pub fn redis_sentinel_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("REDIS_SENTINEL") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    find_on_path("redis-sentinel")
}

/// One event a sentinel published.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SentinelEvent {
    /// Which sentinel (0-based; named `s1`…).
    pub sentinel: u32,
    /// Milliseconds since the sentinels started.
    pub at_ms: u64,
    /// The wall-clock time it was read, in ms since the epoch (the
    /// backend's own clock, never shifted), to place it among a real
    /// session's events.
    pub unix_ms: u64,
    /// The channel: `+sdown`, `+odown`, `+switch-master`, …
    pub event: String,
    /// The message, as Sentinel wrote it
    /// (`master locklab 127.0.0.1 6379 #quorum 2/2`).
    pub detail: String,
}

impl SentinelEvent {
    /// One line for a trace: `s2 +odown master locklab 127.0.0.1 6379 #quorum 2/2`.
    pub fn text(&self) -> String {
        format!("s{} {} {}", self.sentinel + 1, self.event, self.detail)
    }

    /// As a trace event's payload (a note; the actor is the lead's choice).
    pub fn to_event_kind(&self) -> EventKind {
        EventKind::Note { text: self.text() }
    }
}

#[derive(Debug, Default)]
struct Log {
    events: Vec<SentinelEvent>,
    /// The master's port as the last `+switch-master` announced it.
    master: u16,
}

#[derive(Debug)]
struct SentinelProcess {
    port: u16,
    child: Option<Child>,
}

/// Three running sentinels and their event readers; killed on drop.
#[derive(Debug)]
pub struct Sentinels {
    procs: Vec<SentinelProcess>,
    log: Arc<Mutex<Log>>,
    stop: Arc<AtomicBool>,
    listeners: Vec<std::thread::JoinHandle<()>>,
}

impl Sentinels {
    /// Start [`SENTINELS`] sentinels under `root` monitoring the master on
    /// `master_port`, and wait until each knows `replicas` replicas and the
    /// other sentinels.
    pub fn start(root: &Path, master_port: u16, replicas: usize) -> Result<Sentinels, String> {
        let binary = redis_sentinel_binary().ok_or_else(|| SENTINEL_NOT_FOUND.to_owned())?;
        let log = Arc::new(Mutex::new(Log {
            events: Vec::new(),
            master: master_port,
        }));
        let mut s = Sentinels {
            procs: Vec::new(),
            log,
            stop: Arc::new(AtomicBool::new(false)),
            listeners: Vec::new(),
        };
        let epoch = Instant::now();
        for i in 0..SENTINELS {
            let p = spawn_sentinel(&binary, root, master_port)?;
            let port = p.port;
            s.procs.push(p);
            let (log, stop) = (s.log.clone(), s.stop.clone());
            let listener = std::thread::Builder::new()
                .name(format!("sentinel-events-{port}"))
                .spawn(move || listen(i as u32, port, epoch, log, stop))
                .map_err(|e| format!("sentinel event thread: {e}"))?;
            s.listeners.push(listener);
        }
        s.wait_ready(replicas)?;
        Ok(s)
    }

    /// Until every sentinel sees the master, its replicas and the others.
    fn wait_ready(&self, replicas: usize) -> Result<(), String> {
        let deadline = Instant::now() + READY_DEADLINE;
        for p in &self.procs {
            loop {
                let fields = command(p.port, &["SENTINEL", "MASTER", MASTER_NAME])
                    .map(|r| pairs(&r))
                    .unwrap_or_default();
                let num = |k: &str| {
                    fields
                        .iter()
                        .find(|(f, _)| f == k)
                        .and_then(|(_, v)| v.parse::<usize>().ok())
                };
                if num("num-slaves") >= Some(replicas) && num("num-other-sentinels") == Some(SENTINELS - 1) {
                    break;
                }
                if Instant::now() >= deadline {
                    return Err(format!(
                        "sentinel on port {} did not see the replica and the other sentinels in time: {fields:?}",
                        p.port
                    ));
                }
                std::thread::sleep(POLL);
            }
        }
        Ok(())
    }

    /// The sentinels' ports, in order (`s1`, `s2`, `s3`).
    pub fn ports(&self) -> Vec<u16> {
        self.procs.iter().map(|p| p.port).collect()
    }

    /// Their process ids (`None`: not running).
    pub fn pids(&self) -> Vec<Option<u32>> {
        self.procs.iter().map(|p| p.child.as_ref().map(Child::id)).collect()
    }

    /// Every event so far, in the order they were read.
    pub fn events(&self) -> Vec<SentinelEvent> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).events.clone()
    }

    /// The master's port as the sentinels last announced it (the one they
    /// were started with until a `+switch-master`).
    pub fn master_port(&self) -> u16 {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).master
    }

    /// Find the master as a client library does: ask each sentinel in turn
    /// `SENTINEL GET-MASTER-ADDR-BY-NAME`, and take the first address that
    /// answers `ROLE` as a master.
    pub fn discover_master(&self) -> Result<SocketAddr, String> {
        let mut why = Vec::new();
        for p in &self.procs {
            let addr = match command(p.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME]) {
                Ok(Reply::Array(a)) if a.len() == 2 => match (&a[0], &a[1]) {
                    (Reply::Bulk(ip), Reply::Bulk(port)) => {
                        format!("{}:{}", String::from_utf8_lossy(ip), String::from_utf8_lossy(port))
                    }
                    other => {
                        why.push(format!("sentinel {}: {other:?}", p.port));
                        continue;
                    }
                },
                Ok(other) => {
                    why.push(format!("sentinel {}: {other:?}", p.port));
                    continue;
                }
                Err(e) => {
                    why.push(format!("sentinel {}: {e}", p.port));
                    continue;
                }
            };
            let Ok(addr) = addr.parse::<SocketAddr>() else {
                why.push(format!("sentinel {}: bad address {addr}", p.port));
                continue;
            };
            match command(addr.port(), &["ROLE"]) {
                Ok(Reply::Array(role)) if role.first() == Some(&Reply::Bulk(b"master".to_vec())) => return Ok(addr),
                other => why.push(format!(
                    "{addr} named by sentinel {} is not a master: {other:?}",
                    p.port
                )),
            }
        }
        Err(format!("no sentinel named a reachable master: {}", why.join("; ")))
    }

    /// `SENTINEL FAILOVER`: ask one sentinel to fail over now, without
    /// waiting for the master to be down or for the others to agree.
    pub fn force_failover(&self) -> Result<(), String> {
        let p = self.procs.first().ok_or("no sentinel")?;
        match command(p.port, &["SENTINEL", "FAILOVER", MASTER_NAME])? {
            Reply::Error(e) => Err(format!("SENTINEL FAILOVER: {e}")),
            _ => Ok(()),
        }
    }

    /// Wait until some sentinel publishes `event` among the events from
    /// index `since` on; `None` if `within` passes first.
    pub fn wait_event(&self, event: &str, since: usize, within: Duration) -> Option<SentinelEvent> {
        let deadline = Instant::now() + within;
        loop {
            let found = {
                let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
                log.events.iter().skip(since).find(|e| e.event == event).cloned()
            };
            if found.is_some() || Instant::now() >= deadline {
                return found;
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for p in &mut self.procs {
            if let Some(mut child) = p.child.take() {
                let _ = child.kill();
                let _ = child.wait();
                crate::real::reaper::forget(child.id());
            }
        }
        for l in self.listeners.drain(..) {
            let _ = l.join();
        }
    }
}

/// A sentinel's configuration: Sentinel insists on a file it can rewrite
/// (it records what it learns there), so each gets its own directory.
fn spawn_sentinel(binary: &Path, root: &Path, master_port: u16) -> Result<SentinelProcess, String> {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port();
        let dir = root.join(format!("sentinel-{port}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let conf = dir.join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\ndaemonize no\nlogfile \"{log}\"\ndir \"{dir}\"\n\
             sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {QUORUM}\n\
             sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n\
             sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n\
             sentinel parallel-syncs {MASTER_NAME} 1\n",
            log = dir.join("sentinel.log").display(),
            dir = dir.display(),
        );
        std::fs::write(&conf, text).map_err(|e| format!("{}: {e}", conf.display()))?;
        let port_s = port.to_string();
        // `--port` on the command line too, so the reaper knows the
        // process by its arguments before it retitles itself.
        let child = Command::new(binary)
            .arg(&conf)
            .args(["--port", &port_s])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", binary.display()))?;
        crate::real::reaper::record(child.id(), port);
        let mut p = SentinelProcess {
            port,
            child: Some(child),
        };
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            if matches!(command(port, &["PING"]), Ok(Reply::Status(s)) if s == "PONG") {
                return Ok(p);
            }
            if let Some(Ok(Some(status))) = p.child.as_mut().map(Child::try_wait) {
                if let Some(c) = p.child.take() {
                    crate::real::reaper::forget(c.id());
                }
                last = format!("redis-sentinel on port {port} exited early: {status}");
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!("redis-sentinel on port {port} did not answer PING in time"));
            }
            std::thread::sleep(POLL);
        }
    }
    Err(last)
}

/// One sentinel's events, until `stop`: `PSUBSCRIBE *` on its pub/sub,
/// reconnecting if it goes away (a sentinel can be restarted).
fn listen(index: u32, port: u16, epoch: Instant, log: Arc<Mutex<Log>>, stop: Arc<AtomicBool>) {
    let url = format!("redis://127.0.0.1:{port}/");
    while !stop.load(Ordering::SeqCst) {
        let conn = redis::Client::open(url.as_str()).and_then(|c| c.get_connection());
        let Ok(mut conn) = conn else {
            std::thread::sleep(POLL);
            continue;
        };
        let mut pubsub = conn.as_pubsub();
        if pubsub.psubscribe("*").is_err() || pubsub.set_read_timeout(Some(Duration::from_millis(100))).is_err() {
            std::thread::sleep(POLL);
            continue;
        }
        while !stop.load(Ordering::SeqCst) {
            let msg = match pubsub.get_message() {
                Ok(m) => m,
                Err(e) if e.is_timeout() => continue,
                Err(_) => break,
            };
            let event = msg.get_channel_name().to_owned();
            let detail: String = msg.get_payload().unwrap_or_default();
            if !(event.starts_with('+') || event.starts_with('-')) {
                continue;
            }
            let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
            if event == "+switch-master" {
                // `<name> <old ip> <old port> <new ip> <new port>`
                if let Some(p) = detail.split(' ').nth(4).and_then(|p| p.parse().ok()) {
                    log.master = p;
                }
            }
            log.events.push(SentinelEvent {
                sentinel: index,
                at_ms: epoch.elapsed().as_millis() as u64,
                unix_ms: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                event,
                detail,
            });
        }
    }
}

/// A reply of field/value pairs (`SENTINEL MASTER`: a flat array in RESP2,
/// a map in RESP3) as strings.
fn pairs(reply: &Reply) -> Vec<(String, String)> {
    let text = |r: &Reply| match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Reply::Status(s) => s.clone(),
        Reply::Integer(i) => i.to_string(),
        other => format!("{other:?}"),
    };
    match reply {
        Reply::Array(a) => a
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (text(&c[0]), text(&c[1])))
            .collect(),
        Reply::Map(m) => m.iter().map(|(k, v)| (text(k), text(v))).collect(),
        _ => Vec::new(),
    }
}

/// `127.0.0.1:port`.
pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentinel_is_recorded_and_known_to_the_reaper_by_its_port() {
        let master = crate::real::process::RedisServer::start();
        let root = std::env::temp_dir().join(format!("locklab-sentinel-unit-{}", std::process::id()));
        let binary = redis_sentinel_binary().expect(SENTINEL_NOT_FOUND);
        let mut p = spawn_sentinel(&binary, &root, master.port()).unwrap();
        let pid = p.child.as_ref().unwrap().id();
        let port = p.port.to_string();
        // Known by its `--port` argument or, once retitled, by
        // `redis-sentinel 127.0.0.1:<port> [sentinel]`.
        assert!(crate::real::reaper::is_managed_redis(pid, &port));
        assert!(!crate::real::reaper::is_managed_redis(pid, "1"));
        let record = std::fs::read_to_string(crate::real::reaper::runtime_dir().join(format!("{pid}.pid"))).unwrap();
        assert!(record.starts_with(&format!("{port}\n")));
        // It watches the master it was given.
        let master_addr = command(p.port, &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME]).unwrap();
        assert_eq!(
            master_addr,
            Reply::Array(vec![
                Reply::Bulk(b"127.0.0.1".to_vec()),
                Reply::Bulk(master.port().to_string().into_bytes())
            ])
        );
        let mut child = p.child.take().unwrap();
        let _ = child.kill();
        let _ = child.wait();
        crate::real::reaper::forget(pid);
        let _ = std::fs::remove_dir_all(root);
    }
}

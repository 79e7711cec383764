//! Core's ZooKeeper vocabulary sent to a real ensemble through
//! zookeeper-client, with the simulator's replies.
//!
//! Each line a lesson types (`SESSION ms`, `CREATE path data [EPHEMERAL]
//! [SEQUENTIAL]`, `CHILDREN`, `EXISTS path [WATCH]`, `GET`, `SET`,
//! `DELETE`, `PING`, `CLOSE`) is the client call its simulator command is
//! modelled on (`core/src/service/zk.rs`), and its answer is the [`Reply`]
//! the simulator gives: a session id, `[path, czxid]` for a create, the
//! sorted children, a czxid or nil for `EXISTS`, errors as the Java
//! client's `KeeperException` prints them (`KeeperErrorCode = NoNode for
//! /x`). Numbers go through [`Numbers`]. A malformed line never reaches
//! the ensemble: it gets core's own argument error from a scratch
//! simulator, so the texts live once, in core.
//!
//! **A client is a session.** Each lesson client has at most one session
//! and one connection, to the server its last request named (a request to
//! another server reconnects the same session there, as the Java client
//! does when it moves). Connections are *detached*: dropping one does not
//! close the session. That is how a pause works — the client's connection
//! is dropped, so it sends nothing, heartbeats included, and the ensemble
//! expires the session after its timeout exactly as it would a stopped
//! JVM's; after the pause the client reconnects with its session id and
//! learns `Session expired`, as Curator reports `LOST`.
//!
//! The lab's own reads (who holds a lock) go through a separate observer
//! session, so they never touch a lesson client's session timer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use locklab_core::reply::Reply;
use locklab_core::service::{Answer, Request, Zk as SimZk};
use tokio::task::JoinHandle;
use zookeeper_client::{Acls, Client, CreateMode, Error as ZkError, EventType, SessionInfo};

use super::ensemble::Ensemble;
use super::zxid::Numbers;
use crate::real::service::{OwnRuntime, ServiceError};

/// How long the ensemble may take to serve after a start or an election.
const READY_WITHIN: Duration = Duration::from_secs(60);
/// A request or a (re)connection that takes longer gets `ConnectionLoss`
/// (a server that is SIGSTOPped accepts the TCP connection and answers
/// nothing).
const OP_TIMEOUT: Duration = Duration::from_millis(1500);
const POLL: Duration = Duration::from_millis(20);

/// One request, in real terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RealRequest {
    Session {
        asked_ms: u64,
        real_ms: u64,
    },
    Create {
        path: String,
        data: Vec<u8>,
        ephemeral: bool,
        sequential: bool,
    },
    Delete {
        path: String,
    },
    Exists {
        path: String,
        watch: bool,
    },
    Get {
        path: String,
    },
    Set {
        path: String,
        data: Vec<u8>,
    },
    Children {
        path: String,
    },
    Ping,
    Close,
}

impl RealRequest {
    /// The path the request names (for error texts), or "".
    pub fn path(&self) -> &str {
        match self {
            RealRequest::Create { path, .. }
            | RealRequest::Delete { path }
            | RealRequest::Exists { path, .. }
            | RealRequest::Get { path }
            | RealRequest::Set { path, .. }
            | RealRequest::Children { path } => path,
            RealRequest::Session { .. } | RealRequest::Ping | RealRequest::Close => "",
        }
    }
}

/// What the ensemble answered, before translation back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Raw {
    Session(i64),
    Created {
        path: String,
        czxid: i64,
    },
    Ok,
    Stat(Option<i64>),
    Data(Vec<u8>),
    Zxid(i64),
    Children(Vec<String>),
    /// A `KeeperErrorCode` name (`NoNode`, `Session expired`, …).
    Keeper(String),
}

/// The lesson's `argv` as a real request, or the reply it gets without
/// one (core's argument errors). `has_session`: the client has a session,
/// which core checks before the arguments.
pub fn parse(argv: &[Vec<u8>], factor: u64, has_session: bool) -> Result<RealRequest, Reply> {
    let a: Vec<String> = argv.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
    let word = |i: usize| a.get(i).map(|s| s.to_ascii_uppercase()).unwrap_or_default();
    let path = a.get(1).cloned().unwrap_or_default();
    let cmd = word(0);
    let pathy = path.starts_with('/');
    let op = match cmd.as_str() {
        "SESSION" if a.len() == 2 => path.parse::<u64>().ok().map(|ms| RealRequest::Session {
            asked_ms: ms,
            real_ms: ms.div_ceil(factor.max(1)),
        }),
        _ if !has_session => None,
        "PING" => Some(RealRequest::Ping),
        "CLOSE" => Some(RealRequest::Close),
        "CREATE" if pathy && a.len() >= 3 => {
            let flags: Vec<String> = (3..a.len()).map(word).collect();
            flags
                .iter()
                .all(|f| f == "EPHEMERAL" || f == "SEQUENTIAL")
                .then(|| RealRequest::Create {
                    path: path.clone(),
                    data: argv[2].clone(),
                    ephemeral: flags.iter().any(|f| f == "EPHEMERAL"),
                    sequential: flags.iter().any(|f| f == "SEQUENTIAL"),
                })
        }
        "DELETE" if pathy => Some(RealRequest::Delete { path }),
        "EXISTS" if pathy => Some(RealRequest::Exists {
            path,
            watch: word(2) == "WATCH",
        }),
        "GET" if pathy => Some(RealRequest::Get { path }),
        "SET" if pathy && a.len() == 3 => Some(RealRequest::Set {
            path,
            data: argv[2].clone(),
        }),
        "CHILDREN" if pathy => Some(RealRequest::Children { path }),
        _ => None,
    };
    op.ok_or_else(|| core_says(argv, has_session))
}

/// Core's answer to a line that never reaches the ensemble: a scratch
/// simulator's, with a session for the client when it has one (its
/// argument errors come after the session check).
fn core_says(argv: &[Vec<u8>], has_session: bool) -> Reply {
    let mut sim = SimZk::new(3);
    let clocks = [0, 0, 0];
    if has_session {
        let open = [b"SESSION".to_vec(), b"6000".to_vec()];
        let _ = sim.execute(&clocks, request(&open));
    }
    match sim.execute(&clocks, request(argv)) {
        Answer::Now(reply) => reply,
        Answer::Later => Reply::Error("malformed request".into()),
    }
}

fn request(argv: &[Vec<u8>]) -> Request<'_> {
    Request {
        member: 0,
        client: 0,
        req: 0,
        argv,
    }
}

/// `KeeperErrorCode = <code> for <path>`, as the Java client prints it.
pub fn keeper(code: &str, path: &str) -> Reply {
    Reply::Error(if path.is_empty() {
        format!("KeeperErrorCode = {code}")
    } else {
        format!("KeeperErrorCode = {code} for {path}")
    })
}

/// Translate a real answer back into the simulator's reply.
pub fn reply(op: &RealRequest, raw: Raw, n: &mut Numbers) -> Reply {
    match raw {
        Raw::Session(id) => Reply::Integer(n.opened(id)),
        Raw::Created { path, czxid } => Reply::Array(vec![
            Reply::Bulk(path.into_bytes()),
            Reply::Integer(n.zxid_shown(czxid)),
        ]),
        Raw::Ok => Reply::Status("OK".into()),
        Raw::Stat(czxid) => czxid.map_or(Reply::Nil, |z| Reply::Integer(n.zxid_shown(z))),
        Raw::Data(d) => Reply::Bulk(d),
        Raw::Zxid(z) => Reply::Integer(n.zxid_shown(z)),
        Raw::Children(mut c) => {
            // The server's order is a hash set's; the simulator's is sorted.
            c.sort();
            Reply::Array(c.into_iter().map(|s| Reply::Bulk(s.into_bytes())).collect())
        }
        Raw::Keeper(code) => keeper(&code, op.path()),
    }
}

/// The `KeeperErrorCode` name the Java client prints for an error.
/// zookeeper-client reports a connection that broke or went silent
/// ("no response from connection in 2400ms", an I/O error) as a custom
/// error where the Java client says `ConnectionLoss`.
fn code(e: &ZkError) -> String {
    match e {
        ZkError::NoNode => "NoNode".into(),
        ZkError::NodeExists => "NodeExists".into(),
        ZkError::NotEmpty => "Directory not empty".into(),
        ZkError::SessionExpired => "Session expired".into(),
        ZkError::NoChildrenForEphemerals => "NoChildrenForEphemerals".into(),
        ZkError::BadArguments(_) => "BadArguments".into(),
        ZkError::BadVersion => "BadVersion".into(),
        ZkError::SessionMoved => "Session moved".into(),
        ZkError::ConnectionLoss | ZkError::Timeout | ZkError::NoHosts | ZkError::ClientClosed | ZkError::Custom(_) => {
            "ConnectionLoss".into()
        }
        other => other.to_string(),
    }
}

/// A watch that fired, for the client's lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    pub client: String,
    pub text: String,
}

/// Run one request (not `SESSION`) on `c`; a watch it sets reports to
/// `fired` when it triggers.
async fn run_op(c: Client, op: RealRequest, client: String, fired: Arc<Mutex<Vec<Fired>>>) -> Raw {
    let r = match op {
        RealRequest::Create {
            path,
            data,
            ephemeral,
            sequential,
        } => {
            let mode = match (ephemeral, sequential) {
                (true, true) => CreateMode::EphemeralSequential,
                (true, false) => CreateMode::Ephemeral,
                (false, true) => CreateMode::PersistentSequential,
                (false, false) => CreateMode::Persistent,
            };
            let opts = mode.with_acls(Acls::anyone_all());
            c.create(&path, &data, &opts).await.map(|(stat, seq)| Raw::Created {
                path: if sequential { format!("{path}{seq}") } else { path },
                czxid: stat.czxid,
            })
        }
        RealRequest::Delete { path } => c.delete(&path, None).await.map(|_| Raw::Ok),
        RealRequest::Exists { path, watch: false } => c.check_stat(&path).await.map(|s| Raw::Stat(s.map(|s| s.czxid))),
        RealRequest::Exists { path, watch: true } => match c.check_and_watch_stat(&path).await {
            Ok((stat, watcher)) => {
                tokio::spawn(async move {
                    let ev = watcher.changed().await;
                    if let Some(kind) = event_name(ev.event_type) {
                        let text = format!("WatchedEvent state:SyncConnected type:{kind} path:{}", ev.path);
                        if let Ok(mut f) = fired.lock() {
                            f.push(Fired { client, text });
                        }
                    }
                });
                Ok(Raw::Stat(stat.map(|s| s.czxid)))
            }
            Err(e) => Err(e),
        },
        RealRequest::Get { path } => c.get_data(&path).await.map(|(d, _)| Raw::Data(d)),
        RealRequest::Set { path, data } => c.set_data(&path, &data, None).await.map(|s| Raw::Zxid(s.mzxid)),
        RealRequest::Children { path } => c.list_children(&path).await.map(Raw::Children),
        // A request of the session's own, as a ping resets its timer.
        RealRequest::Ping => c.check_stat("/").await.map(|_| Raw::Ok),
        RealRequest::Close | RealRequest::Session { .. } => Ok(Raw::Ok),
    };
    r.unwrap_or_else(|e| Raw::Keeper(code(&e)))
}

fn event_name(t: EventType) -> Option<&'static str> {
    Some(match t {
        EventType::NodeCreated => "NodeCreated",
        EventType::NodeDeleted => "NodeDeleted",
        EventType::NodeDataChanged => "NodeDataChanged",
        EventType::NodeChildrenChanged => "NodeChildrenChanged",
        EventType::Session => return None,
    })
}

/// A lesson client's session, and its connection if it has one.
struct ClientSession {
    info: SessionInfo,
    timeout: Duration,
    conn: Option<(u32, Client)>,
}

/// The lock's holder as the ensemble says: the child with the lowest
/// sequence under the lock znode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealHolder {
    pub path: String,
    pub czxid: i64,
    /// The real session owning it (ephemeral), or 0.
    pub session: i64,
}

/// A running ensemble and the connections to it.
pub struct ZkDriver {
    rt: OwnRuntime,
    ensemble: Ensemble,
    clients: BTreeMap<String, ClientSession>,
    /// The lab's own session, for reads; connected to one live server.
    observer: Option<(u32, Client)>,
    observer_info: Option<SessionInfo>,
    pub numbers: Numbers,
    fired: Arc<Mutex<Vec<Fired>>>,
    version: String,
}

impl ZkDriver {
    /// Start three servers with session timeouts bounded by `[min_ms,
    /// max_ms]` (real), wait until they serve, put the leader first (the
    /// lessons call it `zk1`), and open the observer's session; the run's
    /// zxids count from then on.
    pub fn start(min_ms: u64, max_ms: u64) -> Result<ZkDriver, ServiceError> {
        crate::real::service::on_free_ports(|| Self::start_once(min_ms, max_ms))
    }

    fn start_once(min_ms: u64, max_ms: u64) -> Result<ZkDriver, ServiceError> {
        let rt = OwnRuntime::start()?;
        let ensemble = Ensemble::spawn(crate::real::service::MEMBERS, min_ms, max_ms).map_err(ServiceError::Start)?;
        let mut d = ZkDriver {
            rt,
            ensemble,
            clients: BTreeMap::new(),
            observer: None,
            observer_info: None,
            numbers: Numbers::new(0),
            fired: Arc::new(Mutex::new(Vec::new())),
            version: String::new(),
        };
        let leader = d.await_leader(READY_WITHIN, None).map_err(ServiceError::Start)?;
        d.ensemble.lead_first(leader as usize);
        d.connect_observer(0, max_ms).map_err(ServiceError::Start)?;
        let start = d
            .leader_zxid()
            .ok_or_else(|| ServiceError::Start("the leader does not answer srvr".into()))?;
        d.numbers = Numbers::new(start);
        Ok(d)
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn members(&self) -> usize {
        self.ensemble.servers.len()
    }

    pub fn member_name(&self, i: u32) -> String {
        self.ensemble
            .servers
            .get(i as usize)
            .map_or_else(|| format!("server {i}"), |s| s.name.clone())
    }

    /// Running and not stopped.
    pub fn is_up(&self, i: u32) -> bool {
        self.ensemble.servers.get(i as usize).is_some_and(|s| s.is_up())
    }

    pub fn pid(&self, i: u32) -> Option<u32> {
        self.ensemble.servers.get(i as usize).and_then(|s| s.pid())
    }

    /// The server that leads now, by `srvr` (the first live one that says
    /// `Mode: leader`); the first answer also gives the server version.
    pub fn leader(&mut self) -> Option<u32> {
        (0..self.members()).find_map(|i| {
            let s = self.ensemble.srvr(i)?;
            if self.version.is_empty() {
                self.version = s.version.clone();
            }
            (s.mode == "leader").then_some(i as u32)
        })
    }

    /// The leader's last applied zxid.
    pub fn leader_zxid(&mut self) -> Option<i64> {
        let l = self.leader()?;
        self.ensemble.srvr(l as usize).map(|s| s.zxid)
    }

    /// Wait until a server other than `not` leads and every live server
    /// serves (`srvr` answers only on a server that is in a quorum).
    pub fn await_leader(&mut self, within: Duration, not: Option<u32>) -> Result<u32, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(why) = self.ensemble.exited() {
                return Err(why);
            }
            if let Some(l) = self.leader().filter(|&l| Some(l) != not) {
                let serving = (0..self.members())
                    .filter(|&i| self.is_up(i as u32))
                    .all(|i| self.ensemble.srvr(i).is_some());
                if serving {
                    return Ok(l);
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the ZooKeeper ensemble had no leader within {} s",
                    within.as_secs()
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    fn address(&self, i: u32) -> Result<String, String> {
        self.ensemble
            .servers
            .get(i as usize)
            .map(|s| s.address())
            .ok_or_else(|| format!("no server {i}"))
    }

    /// A detached connection to server `member`: a new session, or
    /// `session` reestablished there.
    fn connect(&self, member: u32, timeout: Duration, session: Option<SessionInfo>) -> Result<Client, ZkError> {
        let addr = self.address(member).map_err(|_| ZkError::NoHosts)?;
        let mut c = Client::connector()
            .with_session_timeout(timeout)
            .with_detached()
            .with_fail_eagerly();
        if let Some(s) = session {
            c = c.with_session(s);
        }
        self.rt.block_on(async {
            tokio::time::timeout(OP_TIMEOUT, c.connect(&addr))
                .await
                .unwrap_or(Err(ZkError::ConnectionLoss))
        })
    }

    /// The observer's session, on server `member` (reestablished there
    /// when it has one).
    fn connect_observer(&mut self, member: u32, max_ms: u64) -> Result<(), String> {
        let timeout = Duration::from_millis(max_ms.max(1));
        let c = self
            .connect(member, timeout, self.observer_info.clone())
            .map_err(|e| format!("the observer's session on {}: {e}", self.member_name(member)))?;
        self.observer_info = Some(c.session().clone());
        self.observer = Some((member, c));
        Ok(())
    }

    /// Move the observer to a live server if its own is not.
    pub fn observer_to_live(&mut self) {
        let on = self.observer.as_ref().map(|(m, _)| *m);
        if on.is_some_and(|m| self.is_up(m)) {
            return;
        }
        let timeout = self
            .observer
            .as_ref()
            .map_or(Duration::from_secs(4), |(_, c)| c.session_timeout());
        if let Some(m) = (0..self.members() as u32).find(|&m| self.is_up(m)) {
            self.observer = None;
            let _ = self.connect_observer(m, timeout.as_millis() as u64);
        }
    }

    /// Does `client` have a session (open or expired)?
    pub fn has_session(&self, client: &str) -> bool {
        self.clients.contains_key(client)
    }

    /// Open a session for `client` on `member`, replacing any it had; the
    /// zxid its creation took is hidden from the lesson.
    fn open_session(&mut self, client: &str, member: u32, real_ms: u64) -> Raw {
        let before = self.leader_zxid();
        let c = match self.connect(member, Duration::from_millis(real_ms.max(1)), None) {
            Ok(c) => c,
            Err(e) => return Raw::Keeper(code(&e)),
        };
        self.after_session(before);
        let id = c.session_id().0;
        self.clients.insert(
            client.to_owned(),
            ClientSession {
                info: c.session().clone(),
                timeout: c.session_timeout(),
                conn: Some((member, c)),
            },
        );
        Raw::Session(id)
    }

    /// Hide the zxids committed since `before` (a session's creation): the
    /// leader's last zxid is read until it moved on. A lesson's steps run
    /// one at a time, so the only other transaction that could commit in
    /// that window is a session expiring on its own; it would be hidden
    /// too, and the zxids after it shown one lower (lesson 44's expiry
    /// comes seconds after B's `SESSION`).
    fn after_session(&mut self, before: Option<i64>) {
        let Some(before) = before else { return };
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if let Some(after) = self.leader_zxid().filter(|&z| z > before) {
                self.numbers.hide(before, after);
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `client`'s connection to `member`, reestablishing its session there
    /// when it is connected elsewhere or not at all.
    fn conn_on(&mut self, client: &str, member: u32) -> Result<Client, ZkError> {
        let s = self.clients.get(client).ok_or(ZkError::ConnectionLoss)?;
        if let Some((m, c)) = &s.conn {
            if *m == member {
                return Ok(c.clone());
            }
        }
        let (info, timeout) = (s.info.clone(), s.timeout);
        if let Some(s) = self.clients.get_mut(client) {
            s.conn = None;
        }
        let c = self.connect(member, timeout, Some(info))?;
        if let Some(s) = self.clients.get_mut(client) {
            s.conn = Some((member, c.clone()));
        }
        Ok(c)
    }

    /// Send `op` as `client` to `member` and wait for the answer.
    pub fn send(&mut self, client: &str, member: u32, op: RealRequest) -> Raw {
        if let RealRequest::Session { real_ms, .. } = op {
            return self.open_session(client, member, real_ms);
        }
        let c = match self.conn_on(client, member) {
            Ok(c) => c,
            Err(e) => return Raw::Keeper(code(&e)),
        };
        if op == RealRequest::Close {
            return self.close(client, member);
        }
        let task = self.rt.spawn(run_op(c, op, client.to_owned(), self.fired.clone()));
        self.finish(task)
    }

    fn finish(&self, mut task: JoinHandle<Raw>) -> Raw {
        self.rt.block_on(async {
            match tokio::time::timeout(OP_TIMEOUT, &mut task).await {
                Ok(Ok(raw)) => raw,
                Ok(Err(e)) => Raw::Keeper(format!("the request's task failed: {e}")),
                Err(_) => {
                    task.abort();
                    Raw::Keeper("ConnectionLoss".into())
                }
            }
        })
    }

    /// `CLOSE`: a connection that is not detached, dropped, closes the
    /// session (zookeeper-client sends `closeSession` when the last handle
    /// goes).
    fn close(&mut self, client: &str, member: u32) -> Raw {
        let Some(s) = self.clients.get_mut(client) else {
            return Raw::Keeper("ConnectionLoss".into());
        };
        s.conn = None;
        let (info, timeout) = (s.info.clone(), s.timeout);
        let Ok(addr) = self.address(member) else {
            return Raw::Keeper("ConnectionLoss".into());
        };
        let c = Client::connector().with_session_timeout(timeout).with_session(info);
        let r = self.rt.block_on(async {
            let c = tokio::time::timeout(OP_TIMEOUT, c.connect(&addr)).await;
            match c {
                Ok(Ok(c)) => {
                    drop(c);
                    // Let the session task send closeSession and see it done.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Raw::Ok
                }
                Ok(Err(e)) => Raw::Keeper(code(&e)),
                Err(_) => Raw::Keeper("ConnectionLoss".into()),
            }
        });
        r
    }

    /// Stop `client`'s heartbeats: its connection is dropped, its session
    /// left to the ensemble (a paused process sends nothing).
    pub fn silence(&mut self, client: &str) {
        if let Some(s) = self.clients.get_mut(client) {
            s.conn = None;
        }
    }

    /// Is `client` connected (heartbeating)?
    pub fn connected(&self, client: &str) -> bool {
        self.clients.get(client).is_some_and(|s| s.conn.is_some())
    }

    /// The real session id of `client`.
    pub fn session_of(&self, client: &str) -> Option<i64> {
        self.clients.get(client).map(|s| s.info.id().0)
    }

    /// Watches that fired since the last call.
    pub fn take_fired(&self) -> Vec<Fired> {
        self.fired
            .lock()
            .map(|mut f| std::mem::take(&mut *f))
            .unwrap_or_default()
    }

    /// The child of `lock` with the lowest sequence, read by the observer.
    pub fn holder(&mut self, lock: &str) -> Result<Option<RealHolder>, String> {
        let (_, c) = self.observer.as_ref().ok_or("no observer session")?;
        let c = c.clone();
        let lock = lock.to_owned();
        let task = self.rt.spawn(async move {
            let mut kids = match c.list_children(&lock).await {
                Ok(k) => k,
                Err(ZkError::NoNode) => return Ok(None),
                Err(e) => return Err(e.to_string()),
            };
            kids.sort_by_key(|k| (sequence(k), k.clone()));
            let Some(first) = kids.first() else { return Ok(None) };
            let path = format!("{}/{first}", lock.trim_end_matches('/'));
            match c.check_stat(&path).await {
                Ok(Some(s)) => Ok(Some(RealHolder {
                    path,
                    czxid: s.czxid,
                    session: s.ephemeral_owner,
                })),
                Ok(None) => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        });
        self.rt.block_on(async {
            match tokio::time::timeout(Duration::from_millis(500), task).await {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("reading the lock timed out".into()),
            }
        })
    }

    /// SIGKILL server `i`; connections to it go with it.
    pub fn crash(&mut self, i: u32) -> Result<String, String> {
        self.forget_conns(i);
        self.ensemble.kill(i as usize)
    }

    /// SIGSTOP (or SIGCONT) server `i`.
    pub fn stop(&mut self, i: u32, stop: bool) -> Result<String, String> {
        self.ensemble.signal_stop(i as usize, stop)
    }

    fn forget_conns(&mut self, i: u32) {
        for s in self.clients.values_mut() {
            if s.conn.as_ref().is_some_and(|(m, _)| *m == i) {
                s.conn = None;
            }
        }
    }
}

/// A sequential node's number (its last ten digits), or the largest.
fn sequence(name: &str) -> u64 {
    name.get(name.len().saturating_sub(10)..)
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<Vec<u8>> {
        locklab_core::cli::parse(line).unwrap_or_default()
    }

    #[test]
    fn lesson_lines_become_requests() {
        assert_eq!(
            parse(&argv("SESSION 6000"), 10, false),
            Ok(RealRequest::Session {
                asked_ms: 6000,
                real_ms: 600
            })
        );
        assert_eq!(
            parse(&argv("CREATE /locks/x/lock- '' EPHEMERAL SEQUENTIAL"), 10, true),
            Ok(RealRequest::Create {
                path: "/locks/x/lock-".into(),
                data: Vec::new(),
                ephemeral: true,
                sequential: true
            })
        );
        assert_eq!(
            parse(&argv("EXISTS /a WATCH"), 10, true),
            Ok(RealRequest::Exists {
                path: "/a".into(),
                watch: true
            })
        );
    }

    #[test]
    fn malformed_lines_get_cores_texts() {
        assert_eq!(
            parse(&argv("GET /a"), 10, false),
            Err(Reply::Error("KeeperErrorCode = ConnectionLoss for /a".into()))
        );
        assert_eq!(
            parse(&argv("GET a"), 10, true),
            Err(Reply::Error("Path must start with / character".into()))
        );
        assert_eq!(
            parse(&argv("CREATE /a '' FOREVER"), 10, true),
            Err(Reply::Error("KeeperErrorCode = BadArguments".into()))
        );
    }

    #[test]
    fn replies_read_as_the_simulators() {
        let mut n = Numbers::new(1 << 32 | 1);
        let children = Raw::Children(vec!["lock-0000000001".into(), "lock-0000000000".into()]);
        assert_eq!(
            reply(&RealRequest::Children { path: "/x".into() }, children, &mut n),
            Reply::Array(vec![
                Reply::Bulk(b"lock-0000000000".to_vec()),
                Reply::Bulk(b"lock-0000000001".to_vec())
            ])
        );
        let get = RealRequest::Get { path: "/x".into() };
        assert_eq!(
            reply(&get, Raw::Keeper("Session expired".into()), &mut n),
            Reply::Error("KeeperErrorCode = Session expired for /x".into())
        );
        assert_eq!(sequence("lock-0000000007"), 7);
    }
}

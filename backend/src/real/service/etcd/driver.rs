//! Core's etcd vocabulary sent to a real cluster through etcd-client, with
//! the simulator's replies.
//!
//! Each line a lesson types (`LEASE GRANT 10`, `LOCK lock/order/1001
//! 7001`, `UNLOCK key`, `PUT`, `GET`, `DEL`, `LEASE KEEPALIVE|REVOKE|
//! TIMETOLIVE id`) is one call of etcd-client, the call its simulator
//! command is modelled on (`core/src/service/etcd.rs`), and its answer is
//! the [`Reply`] the simulator gives: an id or TTL as an integer, the lock
//! as `[key, create revision]`, errors as etcdctl prints them (a gRPC
//! status's message, `etcdserver: requested lease not found`). Numbers
//! go through [`Translate`]. A line whose arguments are malformed never
//! reaches the cluster: it gets core's own argument error, from a scratch
//! simulator that answers such lines before touching any state — the
//! texts live once, in core.
//!
//! Requests run as tasks on the driver's own tokio runtime, so a `LOCK`
//! that blocks (its key is not the oldest yet) is a task like any other:
//! the runner waits for it as long as a lease could still free the lock,
//! and other clients' requests go on meanwhile.
//!
//! Two calls differ slightly from the simulator's one command:
//! * `LEASE KEEPALIVE` is etcd-client's keep-alive stream opened, one
//!   keep-alive answered (its TTL), and closed, as etcdctl's
//!   `keep-alive --once`; etcd-client reads the stream's first answer
//!   itself, so the TTL shown is a second keep-alive's, sent within the
//!   same millisecond. A lease that is gone answers TTL 0, which Go's
//!   `KeepAliveOnce` turns into `requested lease not found`: so here too.
//! * `LOCK` is the v3lock `Lock` RPC, whose answer carries the key but
//!   not its create revision; the revision — the fencing token — is read
//!   with a `GET` of that key, as a client of `concurrency.Mutex` reads
//!   `Header().Revision`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, GetOptions, LockOptions, PutOptions, SortOrder, SortTarget};
use locklab_core::reply::Reply;
use locklab_core::service::etcd::LEASE_NOT_FOUND;
use locklab_core::service::{Answer, Etcd as SimEtcd, Request};
use tokio::task::JoinHandle;

use super::cluster::Cluster;
use super::translate::Translate;
use crate::real::service::{OwnRuntime, ServiceError};

/// How long the cluster may take to elect its first leader.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// A request other than `LOCK` that takes longer gets no reply.
const OP_TIMEOUT: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);

/// One request, in real terms (ids and keys already translated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RealRequest {
    Grant {
        real_ttl: i64,
        lesson_ttl: i64,
    },
    KeepAlive {
        shown: i64,
        real: i64,
    },
    Revoke {
        real: i64,
    },
    TimeToLive {
        shown: i64,
        real: i64,
    },
    Put {
        key: String,
        value: Vec<u8>,
        lease: Option<i64>,
    },
    Get {
        key: String,
    },
    Del {
        key: String,
    },
    Lock {
        name: String,
        lease: i64,
    },
    Unlock {
        key: String,
    },
}

/// What etcd answered, before translation back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Raw {
    Lease(i64),
    Ttl(i64),
    Ok,
    Value(Option<Vec<u8>>),
    Count(i64),
    Locked {
        key: String,
        create: i64,
    },
    Error(String),
    /// No answer: the member is down or unreachable.
    NoReply,
}

impl RealRequest {
    /// The lesson's `argv` as a real request, or the reply it gets without
    /// one (core's argument errors).
    pub fn parse(argv: &[Vec<u8>], tr: &Translate) -> Result<RealRequest, Reply> {
        let a: Vec<String> = argv.iter().map(|b| String::from_utf8_lossy(b).into_owned()).collect();
        let word = |i: usize| a.get(i).map(|s| s.to_ascii_uppercase()).unwrap_or_default();
        let int = |i: usize| a.get(i).and_then(|s| s.parse::<i64>().ok());
        let op = match (word(0).as_str(), word(1).as_str(), a.len()) {
            ("LEASE", "GRANT", 3) => int(2).map(|t| RealRequest::Grant {
                real_ttl: tr.ttl_to_real(t),
                lesson_ttl: t,
            }),
            ("LEASE", "KEEPALIVE", 3) => int(2).map(|id| RealRequest::KeepAlive {
                shown: id,
                real: tr.real_lease(id),
            }),
            ("LEASE", "REVOKE", 3) => int(2).map(|id| RealRequest::Revoke {
                real: tr.real_lease(id),
            }),
            ("LEASE", "TIMETOLIVE", 3) => int(2).map(|id| RealRequest::TimeToLive {
                shown: id,
                real: tr.real_lease(id),
            }),
            ("PUT", _, 3) if !a[1].is_empty() => Some(RealRequest::Put {
                key: tr.key_to_real(&a[1]),
                value: argv[2].clone(),
                lease: None,
            }),
            ("PUT", _, 5) if !a[1].is_empty() && word(3) == "LEASE" => int(4).map(|id| RealRequest::Put {
                key: tr.key_to_real(&a[1]),
                value: argv[2].clone(),
                lease: Some(tr.real_lease(id)),
            }),
            ("GET", _, 2) => Some(RealRequest::Get {
                key: tr.key_to_real(&a[1]),
            }),
            ("DEL", _, 2) => Some(RealRequest::Del {
                key: tr.key_to_real(&a[1]),
            }),
            ("LOCK", _, 3) => int(2).map(|id| RealRequest::Lock {
                name: a[1].clone(),
                lease: tr.real_lease(id),
            }),
            ("UNLOCK", _, 2) => Some(RealRequest::Unlock {
                key: tr.key_to_real(&a[1]),
            }),
            _ => None,
        };
        op.ok_or_else(|| core_says(argv))
    }

    /// The argv as it goes on the wire, when it differs from the lesson's
    /// (a compressed TTL): for the step's note.
    pub fn compressed(&self, argv: &[Vec<u8>]) -> Option<String> {
        match self {
            RealRequest::Grant { real_ttl, lesson_ttl } if real_ttl != lesson_ttl => {
                Some(format!("LEASE GRANT {real_ttl}"))
            }
            _ => {
                let _ = argv;
                None
            }
        }
    }
}

/// Core's answer to a line that never reaches the cluster: the scratch
/// simulator's argument error (it has no leases or keys, so a well-formed
/// line would not get here).
fn core_says(argv: &[Vec<u8>]) -> Reply {
    let mut sim = SimEtcd::new(3);
    let r = Request {
        member: 0,
        client: 0,
        req: 0,
        argv,
    };
    match sim.execute(&[0, 0, 0], r) {
        Answer::Now(reply) => reply,
        Answer::Later => Reply::Error("malformed request".into()),
    }
}

/// Translate a real answer back into the simulator's reply; `None` when no
/// reply came.
pub fn reply(op: &RealRequest, raw: Raw, tr: &mut Translate) -> Option<Reply> {
    Some(match (op, raw) {
        (_, Raw::NoReply) => return None,
        (_, Raw::Error(e)) => Reply::Error(e),
        (RealRequest::Grant { lesson_ttl, .. }, Raw::Lease(id)) => Reply::Integer(tr.granted(id, *lesson_ttl)),
        (RealRequest::KeepAlive { shown, .. }, Raw::Ttl(t)) if t > 0 => Reply::Integer(tr.keepalive_shown(*shown, t)),
        (RealRequest::KeepAlive { .. }, Raw::Ttl(_)) => Reply::Error(LEASE_NOT_FOUND.into()),
        (RealRequest::TimeToLive { shown, .. }, Raw::Ttl(t)) => Reply::Integer(tr.remaining_shown(*shown, t)),
        (_, Raw::Ok) => Reply::Status("OK".into()),
        (_, Raw::Value(v)) => v.map_or(Reply::Nil, Reply::Bulk),
        (_, Raw::Count(n)) => Reply::Integer(n),
        (_, Raw::Locked { key, create }) => Reply::Array(vec![
            Reply::Bulk(tr.key_shown(&key).into_bytes()),
            Reply::Integer(tr.rev_shown(create)),
        ]),
        (_, other) => Reply::Error(format!("unexpected answer from etcd: {other:?}")),
    })
}

/// An etcd-client error as the simulator's reply would read, or no reply
/// at all when the member could not be reached.
fn raw_error(e: etcd_client::Error) -> Raw {
    match e {
        etcd_client::Error::GRpcStatus(s) => {
            let msg = s.message().to_owned();
            let etcd_said = msg.starts_with("etcdserver:") || msg.starts_with("mutex:");
            match s.code() {
                _ if etcd_said => Raw::Error(msg),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled => Raw::NoReply,
                _ => Raw::Error(msg),
            }
        }
        etcd_client::Error::LeaseKeepAliveError(_) => Raw::Ttl(0),
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => Raw::NoReply,
        other => Raw::Error(other.to_string()),
    }
}

/// Run one request on `client`.
async fn run_op(mut c: Client, op: RealRequest) -> Raw {
    let result = match op {
        RealRequest::Grant { real_ttl, .. } => c.lease_grant(real_ttl, None).await.map(|r| Raw::Lease(r.id())),
        RealRequest::KeepAlive { real, .. } => match c.lease_keep_alive(real).await {
            Ok((mut keeper, mut stream)) => match keeper.keep_alive().await {
                Ok(()) => stream.message().await.map(|m| Raw::Ttl(m.map_or(0, |m| m.ttl()))),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        },
        RealRequest::Revoke { real } => c.lease_revoke(real).await.map(|_| Raw::Ok),
        RealRequest::TimeToLive { real, .. } => c.lease_time_to_live(real, None).await.map(|r| Raw::Ttl(r.ttl())),
        RealRequest::Put { key, value, lease } => {
            let opts = lease.map(|l| PutOptions::new().with_lease(l));
            c.put(key, value, opts).await.map(|_| Raw::Ok)
        }
        RealRequest::Get { key } => c
            .get(key, None)
            .await
            .map(|r| Raw::Value(r.kvs().first().map(|kv| kv.value().to_vec()))),
        RealRequest::Del { key } => c.delete(key, None).await.map(|r| Raw::Count(r.deleted())),
        RealRequest::Lock { name, lease } => lock(&mut c, name, lease).await,
        RealRequest::Unlock { key } => c.unlock(key).await.map(|_| Raw::Ok),
    };
    result.unwrap_or_else(raw_error)
}

/// v3lock's `Lock`, then the key's create revision.
async fn lock(c: &mut Client, name: String, lease: i64) -> Result<Raw, etcd_client::Error> {
    let r = c.lock(name, Some(LockOptions::new().with_lease(lease))).await?;
    let key = String::from_utf8_lossy(r.key()).into_owned();
    let got = c.get(key.clone(), None).await?;
    match got.kvs().first() {
        Some(kv) => Ok(Raw::Locked {
            key,
            create: kv.create_revision(),
        }),
        // Deleted between the grant and the read: its lease ran out.
        None => Ok(Raw::Error(locklab_core::service::etcd::SESSION_EXPIRED.into())),
    }
}

/// The lock's holder as the cluster says: the oldest key under `name/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealHolder {
    pub key: String,
    pub create: i64,
    pub lease: i64,
}

/// A running three-member cluster and the connections to it.
pub struct EtcdDriver {
    rt: OwnRuntime,
    cluster: Cluster,
    /// Member ids, by index.
    ids: Vec<u64>,
    conns: BTreeMap<(String, u32), Client>,
    version: String,
}

impl EtcdDriver {
    /// Start three members, wait for a leader, and make `etcd1` the leader
    /// (the lessons name it so; `MoveLeader` as `etcdctl move-leader`).
    pub fn start() -> Result<EtcdDriver, ServiceError> {
        crate::real::service::on_free_ports(Self::start_once)
    }

    fn start_once() -> Result<EtcdDriver, ServiceError> {
        let rt = OwnRuntime::start()?;
        let cluster = Cluster::spawn(crate::real::service::MEMBERS).map_err(ServiceError::Start)?;
        let mut d = EtcdDriver {
            rt,
            cluster,
            ids: Vec::new(),
            conns: BTreeMap::new(),
            version: String::new(),
        };
        d.await_ready()?;
        d.lead_with(0)?;
        // A request just after `MoveLeader` can meet "etcdserver: leader
        // changed" (seen on a loaded machine: the run's first read failed
        // the lesson), so the cluster is ready once its leader has served a
        // linearizable read, as after a crash.
        d.await_new_leader(READY_WITHIN).map_err(ServiceError::Start)?;
        Ok(d)
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn members(&self) -> usize {
        self.cluster.members.len()
    }

    pub fn member_name(&self, i: u32) -> String {
        self.cluster
            .members
            .get(i as usize)
            .map_or_else(|| format!("member {i}"), |m| m.name.clone())
    }

    pub fn is_up(&self, i: u32) -> bool {
        self.cluster.members.get(i as usize).is_some_and(|m| m.is_up())
    }

    pub fn pid(&self, i: u32) -> Option<u32> {
        self.cluster.members.get(i as usize).and_then(|m| m.pid())
    }

    /// A connection to member `i` alone (the lab routes, as the simulator
    /// does: a request goes to one member).
    fn connect(&self, i: u32) -> Result<Client, String> {
        let m = self
            .cluster
            .members
            .get(i as usize)
            .ok_or_else(|| format!("no member {i}"))?;
        let opts = ConnectOptions::new().with_connect_timeout(Duration::from_secs(2));
        let endpoint = m.endpoint();
        self.rt
            .block_on(Client::connect([endpoint.as_str()], Some(opts)))
            .map_err(|e| format!("connecting to {}: {e}", m.name))
    }

    /// Every member answers `Status` and names the same leader.
    fn await_ready(&mut self) -> Result<(), ServiceError> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(why) = self.cluster.exited() {
                return Err(ServiceError::Start(why));
            }
            if let Ok(statuses) = self.statuses() {
                let leaders: Vec<u64> = statuses.iter().map(|s| s.1).collect();
                if leaders.iter().all(|&l| l != 0 && l == leaders[0]) {
                    self.ids = statuses.iter().map(|s| s.0).collect();
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(ServiceError::Start(format!(
                    "the etcd cluster elected no leader within {} s",
                    READY_WITHIN.as_secs()
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// (member id, leader id) of every member, in order.
    fn statuses(&mut self) -> Result<Vec<(u64, u64)>, String> {
        let mut out = Vec::new();
        for i in 0..self.members() as u32 {
            let mut c = self.connect(i)?;
            let s = self.rt.block_on(async {
                tokio::time::timeout(OP_TIMEOUT, c.status())
                    .await
                    .map_err(|_| "status timed out".to_owned())?
                    .map_err(|e| e.to_string())
            })?;
            if self.version.is_empty() {
                self.version = s.version().to_owned();
            }
            out.push((s.header().map_or(0, |h| h.member_id()), s.leader()));
        }
        Ok(out)
    }

    /// The member that leads now, asking the live members.
    pub fn leader(&mut self) -> Option<u32> {
        for i in 0..self.members() as u32 {
            if !self.is_up(i) {
                continue;
            }
            let Ok(mut c) = self.connect(i) else { continue };
            let s = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(1), c.status()).await });
            if let Ok(Ok(s)) = s {
                let l = s.leader();
                if let Some(idx) = self.ids.iter().position(|&id| id == l && l != 0) {
                    return Some(idx as u32);
                }
            }
        }
        None
    }

    /// Hand leadership to member `target` and wait until it leads.
    fn lead_with(&mut self, target: u32) -> Result<(), ServiceError> {
        let deadline = Instant::now() + READY_WITHIN;
        let target_id = *self
            .ids
            .get(target as usize)
            .ok_or_else(|| ServiceError::Start(format!("no member {target}")))?;
        loop {
            match self.leader() {
                Some(l) if l == target => return Ok(()),
                Some(l) => {
                    if let Ok(mut c) = self.connect(l) {
                        let _ = self.rt.block_on(c.move_leader(target_id));
                    }
                }
                None => {}
            }
            if Instant::now() >= deadline {
                return Err(ServiceError::Start(format!(
                    "{} did not become the leader",
                    self.member_name(target)
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// After a crash: wait until a live member leads and a linearizable
    /// read goes through it — which needs an entry of its own term
    /// committed and applied, and applying that entry is when a new leader
    /// gives every lease its full TTL again (`lessor.Promote`).
    pub fn await_new_leader(&mut self, within: Duration) -> Result<u32, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(l) = self.leader() {
                if let Ok(mut c) = self.connect(l) {
                    let read = self
                        .rt
                        .block_on(async { tokio::time::timeout(Duration::from_secs(1), c.get("locklab", None)).await });
                    if matches!(read, Ok(Ok(_))) {
                        return Ok(l);
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("no new etcd leader within {} s", within.as_secs()));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The cluster's revision now (a read's response header).
    pub fn revision(&mut self) -> Result<i64, String> {
        let l = self.leader().ok_or("no etcd leader")?;
        let mut c = self.connect(l)?;
        let r = self.rt.block_on(c.get("locklab", None)).map_err(|e| e.to_string())?;
        Ok(r.header().map_or(1, |h| h.revision()))
    }

    /// Start `op` as `client` on member `member`: a task whose answer
    /// [`EtcdDriver::wait`] collects.
    pub fn spawn(&mut self, client: &str, member: u32, op: RealRequest) -> Result<JoinHandle<Raw>, String> {
        if !self.is_up(member) {
            // Connection refused, at once: no reply, as from a dead node.
            return Ok(self.rt.spawn(async { Raw::NoReply }));
        }
        let key = (client.to_owned(), member);
        let c = match self.conns.get(&key) {
            Some(c) => c.clone(),
            None => {
                let c = self.connect(member)?;
                self.conns.insert(key, c.clone());
                c
            }
        };
        let blocking = matches!(op, RealRequest::Lock { .. });
        Ok(self.rt.spawn(async move {
            if blocking {
                run_op(c, op).await
            } else {
                tokio::time::timeout(OP_TIMEOUT, run_op(c, op))
                    .await
                    .unwrap_or(Raw::NoReply)
            }
        }))
    }

    /// The task's answer if it comes before `until`; `None` leaves it
    /// running (a blocked `LOCK`).
    pub fn wait(&self, handle: &mut JoinHandle<Raw>, until: Instant) -> Option<Raw> {
        let left = until.saturating_duration_since(Instant::now());
        match self
            .rt
            .block_on(async { tokio::time::timeout(left, &mut *handle).await })
        {
            Ok(Ok(raw)) => Some(raw),
            Ok(Err(e)) => Some(Raw::Error(format!("the request's task failed: {e}"))),
            Err(_) => None,
        }
    }

    /// The oldest key under `lock/`, read on the leader.
    pub fn holder(&mut self, lock: &str) -> Result<Option<RealHolder>, String> {
        let l = self.leader().ok_or("no etcd leader")?;
        let mut c = self.connect(l)?;
        let opts = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1);
        let r = self
            .rt
            .block_on(async { tokio::time::timeout(OP_TIMEOUT, c.get(format!("{lock}/"), Some(opts))).await })
            .map_err(|_| "reading the lock timed out".to_owned())?
            .map_err(|e| e.to_string())?;
        Ok(r.kvs().first().map(|kv| RealHolder {
            key: String::from_utf8_lossy(kv.key()).into_owned(),
            create: kv.create_revision(),
            lease: kv.lease(),
        }))
    }

    /// SIGKILL member `i`; its connections go with it.
    pub fn crash(&mut self, i: u32) -> Result<String, String> {
        self.conns.retain(|(_, m), _| *m != i);
        self.cluster.kill(i as usize)
    }
}

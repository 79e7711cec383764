//! The real-Redis API: `/api/real/health` and the `/api/session` WebSocket.
//!
//! The browser's `RealDriver` is a WebSocket client. Each WebSocket is one
//! lab [`Session`] (its own key prefix and ACL user) on one [`Topology`]:
//! the user's server when `locklab serve --redis URL` was given, otherwise a
//! managed `single` started on the first command. A `topology` message
//! replaces it with a fresh managed topology (and a fresh session), and
//! everything the WebSocket started is killed when it closes — so a
//! forgotten browser tab cannot leave redis-server processes behind.
//!
//! # Messages
//!
//! In (JSON text frames):
//!
//! * `{"type":"command","client":"A","line":"SET k v NX PX 100","node":0}`
//!   (`node` defaults to 0)
//! * `{"type":"topology","kind":"single|replicated|redlock5|cluster3"}`
//! * `{"type":"fault","fault":"pause|resume|crash|restart|cut_replication|heal_replication|promote","node":1}`
//!
//! Out: `{"type":"hello",…}` (session id, prefix, topology, nodes, names)
//! when a session starts; `{"type":"event","event":{…}}` — core's
//! [`Event`], exactly as the simulator's traces serialise it; then
//! `{"type":"reply","client":"A","text":"OK"}` with redis-cli's rendering;
//! `{"type":"names",…}` when a new client appears; `{"type":"topology",…}`
//! after a start or a fault; `{"type":"error","message":…}` for anything
//! the lab refused that is not a command reply.
//!
//! Sessions call the synchronous `redis` crate, so each message is handled
//! on tokio's blocking pool (`spawn_blocking`), never on the async workers.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use locklab_core::reply::Reply;
use locklab_core::trace::{Event, Names};
use serde::{Deserialize, Serialize};

use crate::real::RealConnection;
use crate::session::{Limits, Session, SessionError, SessionPool};
use crate::topology::{Fault, NodeInfo, Topology, TopologyKind};

/// Most managed topologies alive at once across all WebSockets (each is up
/// to five processes).
const MAX_MANAGED: usize = 4;

/// Shared by every request: the user's server (if any), the session pool.
#[derive(Clone, Debug)]
pub struct ApiState {
    redis: Option<String>,
    pool: SessionPool,
    managed: Arc<AtomicUsize>,
}

impl ApiState {
    /// `redis`: the user's server (`--redis URL`), or `None` for managed
    /// servers only.
    pub fn new(redis: Option<String>) -> Self {
        ApiState::with_limits(redis, Limits::default())
    }

    pub fn with_limits(redis: Option<String>, limits: Limits) -> Self {
        ApiState { redis, pool: SessionPool::new(limits), managed: Arc::new(AtomicUsize::new(0)) }
    }
}

/// `/api/real/health` and `/api/session`. Merge it into the web app's router.
pub fn api_router(state: ApiState) -> Router {
    Router::new()
        .route("/api/real/health", get(health))
        .route("/api/session", get(session_ws))
        .with_state(state)
}

/// `GET /api/real/health`.
#[derive(Debug, Serialize, Deserialize)]
pub struct RealHealth {
    /// The user's server answers `PING`, or (no `--redis`) a `redis-server`
    /// binary is there to start managed ones.
    pub reachable: bool,
    /// `redis_version` of the user's server, or of the binary.
    pub version: Option<String>,
    /// `external` or `managed`.
    pub topology: String,
    /// Ids of the lessons that can run on one real server.
    pub lessons: Vec<String>,
    /// Why not reachable, when it is not.
    pub error: Option<String>,
}

async fn health(State(state): State<ApiState>) -> Json<RealHealth> {
    let redis = state.redis.clone();
    let h = tokio::task::spawn_blocking(move || real_health(redis.as_deref()))
        .await
        .unwrap_or_else(|e| RealHealth {
            reachable: false,
            version: None,
            topology: "unknown".into(),
            lessons: Vec::new(),
            error: Some(e.to_string()),
        });
    Json(h)
}

/// The health report, synchronously (also for the CLI).
pub fn real_health(redis: Option<&str>) -> RealHealth {
    let lessons = locklab_core::lesson::builtin()
        .map(|all| {
            all.iter()
                .filter(|l| crate::lesson_real::check_supported(l).is_ok())
                .map(|l| l.id.clone())
                .collect()
        })
        .unwrap_or_default();
    match redis {
        Some(url) => {
            let probe = RealConnection::open(url).and_then(|mut c| {
                c.set_read_timeout(Some(std::time::Duration::from_secs(2)))?;
                c.execute(&[b"INFO".to_vec(), b"server".to_vec()])
            });
            match probe {
                Ok(Reply::Bulk(text)) => RealHealth {
                    reachable: true,
                    version: String::from_utf8_lossy(&text)
                        .lines()
                        .find_map(|l| l.strip_prefix("redis_version:").map(|v| v.trim().to_owned())),
                    topology: "external".into(),
                    lessons,
                    error: None,
                },
                Ok(other) => RealHealth {
                    reachable: true,
                    version: None,
                    topology: "external".into(),
                    lessons,
                    error: Some(other.to_cli()),
                },
                Err(e) => RealHealth {
                    reachable: false,
                    version: None,
                    topology: "external".into(),
                    lessons,
                    error: Some(e.to_string()),
                },
            }
        }
        None => {
            let version = crate::redis_server::redis_server_binary().and_then(|b| {
                let out = std::process::Command::new(b).arg("--version").output().ok()?;
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.split_whitespace().find_map(|w| w.strip_prefix("v=").map(str::to_owned))
            });
            RealHealth {
                reachable: version.is_some(),
                error: version.is_none().then(|| crate::redis_server::NOT_FOUND.to_owned()),
                version,
                topology: "managed".into(),
                lessons,
            }
        }
    }
}

/// A message from the browser.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ClientMsg {
    Command {
        client: String,
        line: String,
        #[serde(default)]
        node: u32,
    },
    Topology {
        kind: String,
    },
    Fault {
        fault: String,
        #[serde(default)]
        node: u32,
    },
}

/// A message to the browser.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ServerMsg {
    Hello { session: String, prefix: String, topology: String, nodes: Vec<NodeInfo>, names: Names },
    Event { event: Event },
    Reply { client: String, text: String },
    Names { names: Names },
    Topology { kind: String, nodes: Vec<NodeInfo> },
    Error { message: String },
}

/// A managed-topology slot, given back on drop.
#[derive(Debug)]
struct ManagedSlot(Arc<AtomicUsize>);

impl Drop for ManagedSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One WebSocket's lab. Field order matters for drop: the session (ACL
/// user cleanup needs the servers) goes before the topology.
#[derive(Debug)]
struct Lab {
    session: Option<Session>,
    topology: Option<Topology>,
    _slot: Option<ManagedSlot>,
    state: ApiState,
}

impl Lab {
    fn new(state: ApiState) -> Self {
        Lab { session: None, topology: None, _slot: None, state }
    }

    fn handle(&mut self, msg: ClientMsg) -> Vec<ServerMsg> {
        let mut out = Vec::new();
        match msg {
            ClientMsg::Command { client, line, node } => {
                if let Err(e) = self.ensure_session(&mut out) {
                    out.push(ServerMsg::Reply { client, text: Reply::Error(e).to_cli() });
                    return out;
                }
                let Some(s) = self.session.as_mut() else { return out };
                let clients_before = s.names().clients.len();
                let reply = s.run_line(&client, node, &line).unwrap_or_else(|e| e.to_reply());
                if s.names().clients.len() != clients_before {
                    out.push(ServerMsg::Names { names: s.names().clone() });
                }
                out.extend(s.take_events().into_iter().map(|event| ServerMsg::Event { event }));
                out.push(ServerMsg::Reply { client, text: reply.to_cli() });
            }
            ClientMsg::Topology { kind } => {
                let Some(kind) = TopologyKind::parse(&kind) else {
                    out.push(ServerMsg::Error { message: format!("unknown topology {kind:?}: single, replicated, redlock5 or cluster3") });
                    return out;
                };
                if let Err(message) = self.start_managed(kind) {
                    out.push(ServerMsg::Error { message });
                    return out;
                }
                if let Err(message) = self.ensure_session(&mut out) {
                    out.push(ServerMsg::Error { message });
                }
            }
            ClientMsg::Fault { fault, node } => {
                let fault = match fault.as_str() {
                    "pause" => Fault::Pause { node },
                    "resume" => Fault::Resume { node },
                    "crash" => Fault::Crash { node },
                    "restart" => Fault::Restart { node },
                    "cut_replication" => Fault::CutReplication { node },
                    "heal_replication" => Fault::HealReplication { node },
                    "promote" => Fault::Promote { node },
                    other => {
                        out.push(ServerMsg::Error { message: format!("unknown fault {other:?}") });
                        return out;
                    }
                };
                let Some(topo) = self.topology.as_mut() else {
                    out.push(ServerMsg::Error { message: "no topology yet: send a command or a topology message first".into() });
                    return out;
                };
                match topo.fault(fault) {
                    Ok(text) => {
                        if let Some(s) = self.session.as_mut() {
                            s.note_world(text);
                            out.extend(s.take_events().into_iter().map(|event| ServerMsg::Event { event }));
                        }
                        out.push(ServerMsg::Topology { kind: topo.kind_name().into(), nodes: topo.nodes() });
                    }
                    Err(e) => out.push(ServerMsg::Error { message: e.to_string() }),
                }
            }
        }
        out
    }

    fn start_managed(&mut self, kind: TopologyKind) -> Result<(), String> {
        // Tear down the old one first: its processes and its slot.
        self.session = None;
        self.topology = None;
        self._slot = None;
        let managed = &self.state.managed;
        if managed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < MAX_MANAGED).then_some(n + 1))
            .is_err()
        {
            return Err(format!("too many managed topologies running ({MAX_MANAGED}); close another lab tab"));
        }
        let slot = ManagedSlot(managed.clone());
        let topo = Topology::start(kind).map_err(|e| e.to_string())?;
        self.topology = Some(topo);
        self._slot = Some(slot);
        Ok(())
    }

    /// A session on the current topology, starting the default one first.
    fn ensure_session(&mut self, out: &mut Vec<ServerMsg>) -> Result<(), String> {
        if self.session.is_some() {
            return Ok(());
        }
        if self.topology.is_none() {
            match self.state.redis.clone() {
                Some(url) => self.topology = Some(Topology::external(url)),
                None => self.start_managed(TopologyKind::Single)?,
            }
        }
        let Some(topo) = self.topology.as_ref() else { return Err("no topology".into()) };
        let s = self.state.pool.open(topo.targets()).map_err(|e: SessionError| e.to_string())?;
        out.push(ServerMsg::Hello {
            session: s.id().into(),
            prefix: s.prefix().into(),
            topology: topo.kind_name().into(),
            nodes: topo.nodes(),
            names: s.names().clone(),
        });
        self.session = Some(s);
        Ok(())
    }
}

async fn session_ws(State(state): State<ApiState>, ws: WebSocketUpgrade) -> impl IntoResponse {
    let max = state.pool.limits().max_line + 4096;
    ws.max_message_size(max).on_upgrade(move |socket| run_socket(socket, state))
}

async fn run_socket(socket: WebSocket, state: ApiState) {
    let (mut tx, mut rx) = socket.split();
    let mut lab = Some(Lab::new(state));
    while let Some(Ok(msg)) = rx.next().await {
        let text = match msg {
            Message::Text(t) => t.to_string(),
            Message::Close(_) => break,
            _ => continue,
        };
        let replies = match serde_json::from_str::<ClientMsg>(&text) {
            Err(e) => vec![ServerMsg::Error { message: format!("bad message: {e}") }],
            Ok(msg) => {
                let Some(mut l) = lab.take() else { break };
                match tokio::task::spawn_blocking(move || {
                    let out = l.handle(msg);
                    (l, out)
                })
                .await
                {
                    Ok((l, out)) => {
                        lab = Some(l);
                        out
                    }
                    Err(_) => break,
                }
            }
        };
        for r in replies {
            let Ok(json) = serde_json::to_string(&r) else { continue };
            if tx.send(Message::Text(json.into())).await.is_err() {
                return drop_lab(lab).await;
            }
        }
    }
    drop_lab(lab).await;
}

/// Dropping a lab deletes ACL users and kills processes: blocking work.
async fn drop_lab(lab: Option<Lab>) {
    if let Some(l) = lab {
        let _ = tokio::task::spawn_blocking(move || drop(l)).await;
    }
}

/// Serve [`api_router`] alone on an already bound listener (tests bind
/// port 0; the lead's `serve` merges the router into the web app instead).
pub async fn serve_listener(listener: tokio::net::TcpListener, state: ApiState) -> std::io::Result<()> {
    axum::serve(listener, api_router(state)).await
}

//! `/api/class/ws`: class mode's WebSocket, a thin pump around
//! [`crate::class::Hub`], which holds every rule, and the class store
//! ([`ClassStore`]), which holds the classes' logs.
//!
//! Each socket is a connection of the hub: its text frames go to
//! [`Hub::admit_text`] with the peer's address (a `start` is refused
//! unless the peer is loopback). What the hub answers at once is sent;
//! what changes a class is appended to the store, and the socket reads its
//! next frame once its entry came back and was applied (so one connection
//! has at most one entry in flight). A reader task applies every entry the
//! store reads ([`Hub::apply`]) — this instance's and other instances' —
//! and each [`Out`] is serialised once and queued to the sockets it names.
//! Every socket has its own bounded queue and a writer task draining it,
//! so one slow follower never holds the fan-out: when its queue is full it
//! is dropped (its socket closed, which is logged like any leaving), and
//! its page reconnects and resumes with `since`. A ticker calls
//! [`Hub::tick`] every [`FLUSH_EVERY`] for the presenter's coalesced
//! tallies and the idle timeout, and a heartbeat task keeps this instance
//! known alive in the store and says the connections of a dead one left.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use futures_util::{SinkExt, StreamExt};
use locklab_core::class::{ClassClientMsg, ClassCode, ClassError, ServerSays, PRESENTER_FRAME_MAX};
use tokio::sync::{mpsc, Notify};

use crate::class::hub::{Admit, Entropy, LogEntry, What, FLUSH_EVERY};
use crate::class::store::{Beat, ClassStore, MemoryStore, StoreError, HEARTBEAT};
use crate::class::{ClassConfig, Hub, Out, SocketId};
use crate::web::api::ApiState;
use crate::web::origin::OriginPolicy;

/// Messages queued to one socket before it counts as too slow and is
/// dropped: a burst of moves and live batches a follower on a slow link
/// may lag behind by.
pub const QUEUE: usize = 256;
/// The socket's read buffer (a follower's frames are a few hundred bytes).
const READ_BUFFER: usize = 4 * 1024;
/// How long a socket waits for its entry to come back from the store.
const APPLY_WAIT: Duration = Duration::from_secs(10);
/// Codes tried when a drawn one is taken in the store (by another instance).
const CLAIM_TRIES: usize = 8;

/// The hub and each connection's queue, under one lock (every operation
/// on it is short: no I/O is done while it is held, only `try_send`).
struct Registry {
    hub: Hub,
    queues: std::collections::HashMap<SocketId, mpsc::Sender<Message>>,
    /// Woken when a local connection's entry was applied.
    applied: std::collections::HashMap<SocketId, Arc<Notify>>,
}

/// The class routes' shared state (one per backend).
#[derive(Clone)]
pub struct Classes {
    inner: Arc<Mutex<Registry>>,
    store: Arc<dyn ClassStore>,
    ticking: Arc<std::sync::Once>,
}

impl std::fmt::Debug for Classes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classes").finish_non_exhaustive()
    }
}

/// 64 bits from the OS (`/dev/urandom`) for secrets, member ids and codes.
fn os_random() -> u64 {
    use std::io::Read;
    let mut b = [0u8; 8];
    match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)) {
        Ok(()) => u64::from_le_bytes(b),
        // Not on this platform: std's per-process random hash keys.
        Err(_) => {
            use std::hash::{BuildHasher, RandomState};
            RandomState::new().hash_one(Instant::now())
        }
    }
}

impl Classes {
    /// Classes in this process's memory ([`MemoryStore`]).
    pub fn new(cfg: ClassConfig) -> Classes {
        Classes::with_store(cfg, Arc::new(MemoryStore::default()))
    }

    /// Classes in `store`, which other instances may share.
    pub fn with_store(cfg: ClassConfig, store: Arc<dyn ClassStore>) -> Classes {
        let lessons = Arc::new(locklab_core::lesson::builtin().unwrap_or_default());
        let entropy: Entropy = Box::new(os_random);
        let mut hub = Hub::new(cfg, lessons, entropy);
        hub.set_instance(format!("{:016x}", os_random()));
        Classes {
            inner: Arc::new(Mutex::new(Registry {
                hub,
                queues: Default::default(),
                applied: Default::default(),
            })),
            store,
            ticking: Arc::new(std::sync::Once::new()),
        }
    }

    /// The limits these classes were made with.
    pub fn config(&self) -> ClassConfig {
        self.lock().hub.config().clone()
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while held cannot leave the hub half-updated in a way
        // that is worse than refusing every class from then on.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start the ticker and the store's reader once, on the runtime of the
    /// first socket; they end when the state is dropped.
    fn tick_in_background(&self) {
        let weak: Weak<Mutex<Registry>> = Arc::downgrade(&self.inner);
        self.ticking.call_once(|| {
            let (store, reading) = (self.store.clone(), weak.clone());
            tokio::spawn(async move {
                while let Some(batch) = store.next().await {
                    let Some(inner) = reading.upgrade() else { break };
                    let mut reg = inner.lock().unwrap_or_else(|p| p.into_inner());
                    let now = Instant::now();
                    for (code, entry) in batch {
                        let (out, local) = reg.hub.apply(&code, entry, now);
                        reg.deliver(out);
                        if let Some(waiter) = local.and_then(|c| reg.applied.get(&c)) {
                            waiter.notify_one();
                        }
                    }
                }
            });
            tokio::spawn(heartbeats(self.store.clone(), weak.clone()));
            tokio::spawn(async move {
                let mut every = tokio::time::interval(FLUSH_EVERY);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    let Some(inner) = weak.upgrade() else { break };
                    let mut reg = inner.lock().unwrap_or_else(|p| p.into_inner());
                    let out = reg.hub.tick(Instant::now());
                    reg.deliver(out);
                }
            });
        });
    }

    /// Classes running now.
    pub fn running(&self) -> usize {
        self.lock().hub.classes()
    }
}

/// Every [`HEARTBEAT`]: renew this instance's heartbeat, and for each other
/// instance whose connections are ghosts here and whose heartbeat expired
/// twice in a row (once could be an instance whose first beat is still on
/// its way), append the `Left` of each of its connections
/// ([`Hub::departures`]): a killed instance leaves no follower present.
async fn heartbeats(store: Arc<dyn ClassStore>, weak: Weak<Mutex<Registry>>) {
    let mut every = tokio::time::interval(HEARTBEAT);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut missed: std::collections::HashMap<String, u32> = Default::default();
    loop {
        every.tick().await;
        let Some(inner) = weak.upgrade() else { break };
        let (me, url, others) = {
            let reg = inner.lock().unwrap_or_else(|p| p.into_inner());
            let url = reg.hub.config().join_base.clone();
            (reg.hub.instance().to_owned(), url, reg.hub.ghost_instances())
        };
        let Ok(Beat { dead, live }) = store.heartbeat(&me, &url, others).await else {
            continue;
        };
        {
            // Followers and presenters learn where to reconnect to.
            let mut reg = inner.lock().unwrap_or_else(|p| p.into_inner());
            let out = reg.hub.set_instance_urls(live);
            reg.deliver(out);
        }
        missed.retain(|i, _| dead.contains(i));
        for instance in dead {
            let n = missed.entry(instance.clone()).or_default();
            *n += 1;
            if *n != 2 {
                continue;
            }
            let left = inner
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .hub
                .departures(&instance);
            for (code, entry) in left {
                let _ = store.append(&code, &entry).await;
            }
        }
    }
}

impl Registry {
    /// Queue each message to its sockets (a connection of another instance
    /// has none here: nothing is sent). A socket whose queue is full loses
    /// its queue: its writer ends, the socket closes, and its leaving goes
    /// through the store like any other.
    fn deliver(&mut self, out: Vec<Out>) {
        for o in out {
            match o {
                Out::To(conn, msg) => {
                    if let Some(text) = text_of(&msg) {
                        self.push(conn, Message::Text(text));
                    }
                }
                Out::Many(conns, msg) => {
                    if let Some(text) = text_of(&msg) {
                        for conn in conns {
                            self.push(conn, Message::Text(text.clone()));
                        }
                    }
                }
                Out::Close(conn) => {
                    if let Some(q) = self.queues.remove(&conn) {
                        let _ = q.try_send(Message::Close(None));
                    }
                }
            }
        }
    }

    fn push(&mut self, conn: SocketId, msg: Message) {
        if let Some(q) = self.queues.get(&conn) {
            if q.try_send(msg).is_err() {
                self.queues.remove(&conn);
            }
        }
    }
}

impl Classes {
    /// What `conn`'s frame does: answered now, or logged and, once the
    /// store hands it back, applied (the socket waits for that).
    async fn settle(&self, conn: SocketId, admitted: Admit, applied: &Notify) {
        let Admit::Log { code, entry, known } = admitted else {
            if let Admit::Done(out) = admitted {
                self.lock().deliver(out);
            }
            return;
        };
        let failed = match self.log(conn, code, entry, known).await {
            Ok(false) => return,
            Ok(true) => match tokio::time::timeout(APPLY_WAIT, applied.notified()).await {
                Ok(()) => return,
                Err(_) => "the store did not hand the message back in time".to_owned(),
            },
            Err(e) => e.to_string(),
        };
        let message = ClassError::Unavailable(failed).to_string();
        self.lock().deliver(vec![Out::To(conn, ServerSays::Error { message })]);
    }

    /// Append an admitted entry: `false` when it was answered instead (no
    /// class has that code; a `start` whose codes were all taken).
    async fn log(
        &self,
        conn: SocketId,
        mut code: ClassCode,
        mut entry: LogEntry,
        known: bool,
    ) -> Result<bool, StoreError> {
        if !known && !self.store.exists(&code).await? {
            let mut reg = self.lock();
            let out = reg.hub.no_such_class(conn, &code, Instant::now());
            reg.deliver(out);
            return Ok(false);
        }
        for _ in 0..CLAIM_TRIES {
            let What::Start { secret_hash } = &entry.what else {
                break;
            };
            if self.store.claim(&code, secret_hash).await? {
                break;
            }
            // Taken by another instance's class: draw again.
            let mut reg = self.lock();
            match reg.hub.admit(conn, ClassClientMsg::Start, Instant::now()) {
                Admit::Log { code: c, entry: e, .. } => (code, entry) = (c, e),
                Admit::Done(out) => {
                    reg.deliver(out);
                    return Ok(false);
                }
            }
        }
        self.store.follow(&code);
        self.store.append(&code, &entry).await?;
        Ok(true)
    }

    /// `conn` closed: logged when other instances know it, so every
    /// instance's roster sees it leave.
    async fn leave(&self, conn: SocketId) {
        let left = {
            let mut reg = self.lock();
            reg.queues.remove(&conn);
            reg.applied.remove(&conn);
            match reg.hub.leave(conn, Instant::now()) {
                Ok(left) => Some(left),
                Err(out) => {
                    reg.deliver(out);
                    None
                }
            }
        };
        let Some((code, entry)) = left else { return };
        if self.store.append(&code, &entry).await.is_err() {
            // The store is down: at least this instance forgets it.
            let mut reg = self.lock();
            let out = reg.hub.disconnect(conn, Instant::now());
            reg.deliver(out);
        }
    }
}

fn text_of(msg: &locklab_core::class::ServerSays) -> Option<Utf8Bytes> {
    serde_json::to_string(msg).ok().map(Utf8Bytes::from)
}

/// `/api/class/ws`.
pub(crate) fn router(state: ApiState) -> Router {
    Router::new().route("/api/class/ws", get(class_ws)).with_state(state)
}

/// The peer's address, or the unspecified address when the server was
/// started without connection info (a peer that is not known to be
/// loopback is treated as remote).
fn peer_of(info: Option<Extension<ConnectInfo<SocketAddr>>>) -> IpAddr {
    info.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |Extension(ConnectInfo(a))| a.ip())
}

async fn class_ws(
    State(state): State<ApiState>,
    info: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let (origin, host) = (header(header::ORIGIN), header(header::HOST));
    let classes = state.classes().clone();
    // A page of another live instance of the class (its instance died and
    // it reconnects here) is as much the lab's page as this one's.
    let checked = state.origins().check(origin, host).or_else(|why| {
        let live = classes
            .lock()
            .hub
            .instance_urls()
            .iter()
            .filter_map(|u| url_origin(u))
            .collect::<Vec<_>>();
        OriginPolicy::new(live).check(origin, host).map_err(|_| why)
    });
    if let Err(why) = checked {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    let peer = peer_of(info);
    // The hub checks a frame against the sender's role; the socket bounds
    // the largest anyone may send before its payload is read.
    ws.max_message_size(PRESENTER_FRAME_MAX)
        .max_frame_size(PRESENTER_FRAME_MAX)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .on_upgrade(move |socket| run_socket(socket, classes, peer))
        .into_response()
}

/// `scheme://host:port` of a class URL (`http://10.0.0.2:8080/?x` →
/// `http://10.0.0.2:8080`).
fn url_origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    Some(format!("{scheme}://{authority}"))
}

async fn run_socket(socket: WebSocket, classes: Classes, peer: IpAddr) {
    classes.tick_in_background();
    let (mut tx, mut rx) = socket.split();
    let (queue, mut queued) = mpsc::channel::<Message>(QUEUE);
    let applied = Arc::new(Notify::new());
    let conn = {
        let mut reg = classes.lock();
        let conn = reg.hub.connect(peer);
        reg.queues.insert(conn, queue);
        reg.applied.insert(conn, applied.clone());
        conn
    };
    let mut writer = tokio::spawn(async move {
        while let Some(msg) = queued.recv().await {
            let close = matches!(msg, Message::Close(_));
            if tx.send(msg).await.is_err() || close {
                break;
            }
        }
        let _ = tx.close().await;
    });
    loop {
        let frame = tokio::select! {
            f = rx.next() => f,
            _ = &mut writer => break,
        };
        let text = match frame {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(Message::Close(_))) | None => break,
            Some(Ok(_)) => continue,
            Some(Err(e)) => {
                too_big(&classes, conn, e);
                break;
            }
        };
        let admitted = classes.lock().hub.admit_text(conn, text.as_str(), Instant::now());
        classes.settle(conn, admitted, &applied).await;
    }
    classes.leave(conn).await;
}

/// A frame over [`PRESENTER_FRAME_MAX`] ends the socket with close code
/// 1009 and the bound, instead of a silent drop.
fn too_big(classes: &Classes, conn: SocketId, error: axum::Error) {
    use tokio_tungstenite::tungstenite::Error;
    if matches!(error.into_inner().downcast_ref::<Error>(), Some(Error::Capacity(_))) {
        let close = Message::Close(Some(CloseFrame {
            code: axum::extract::ws::close_code::SIZE,
            reason: format!("message too big: a class message holds at most {PRESENTER_FRAME_MAX} bytes").into(),
        }));
        if let Some(q) = classes.lock().queues.get(&conn) {
            let _ = q.try_send(close);
        }
    }
}

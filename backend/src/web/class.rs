//! `/api/class/ws`: class mode's WebSocket, a thin pump around
//! [`crate::class::Hub`], which holds every rule.
//!
//! Each socket is a connection of the hub: its text frames go to
//! [`Hub::handle_text`] with the peer's address (a `start` is refused
//! unless the peer is loopback), and each [`Out`] the hub answers is
//! serialised once and queued to the sockets it names. Every socket has
//! its own bounded queue and a writer task draining it, so one slow
//! follower never holds the fan-out: when its queue is full it is dropped
//! (its socket closed), and its page reconnects and resumes with `since`.
//! A ticker calls [`Hub::tick`] every [`FLUSH_EVERY`] for the presenter's
//! coalesced tallies and the idle timeout.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use futures_util::{SinkExt, StreamExt};
use locklab_core::class::PRESENTER_FRAME_MAX;
use tokio::sync::mpsc;

use crate::class::hub::{Entropy, FLUSH_EVERY};
use crate::class::{ClassConfig, ConnId, Hub, Out};
use crate::web::api::ApiState;

/// Messages queued to one socket before it counts as too slow and is
/// dropped: a burst of moves and live batches a follower on a slow link
/// may lag behind by.
pub const QUEUE: usize = 256;
/// The socket's read buffer (a follower's frames are a few hundred bytes).
const READ_BUFFER: usize = 4 * 1024;

/// The hub and each connection's queue, under one lock (every operation
/// on it is short: no I/O is done while it is held, only `try_send`).
struct Registry {
    hub: Hub,
    queues: std::collections::HashMap<ConnId, mpsc::Sender<Message>>,
}

/// The class routes' shared state (one per backend).
#[derive(Clone)]
pub struct Classes {
    inner: Arc<Mutex<Registry>>,
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
    pub fn new(cfg: ClassConfig) -> Classes {
        let lessons = Arc::new(locklab_core::lesson::builtin().unwrap_or_default());
        let entropy: Entropy = Box::new(os_random);
        Classes {
            inner: Arc::new(Mutex::new(Registry {
                hub: Hub::new(cfg, lessons, entropy),
                queues: Default::default(),
            })),
            ticking: Arc::new(std::sync::Once::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        // A panic while held cannot leave the hub half-updated in a way
        // that is worse than refusing every class from then on.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start the ticker once, on the runtime of the first socket; it ends
    /// when the state is dropped.
    fn tick_in_background(&self) {
        let weak: Weak<Mutex<Registry>> = Arc::downgrade(&self.inner);
        self.ticking.call_once(|| {
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

impl Registry {
    /// Queue each message to its sockets; a socket whose queue is full is
    /// dropped, and what the hub says about that is delivered too.
    fn deliver(&mut self, mut out: Vec<Out>) {
        while !out.is_empty() {
            let mut dropped = Vec::new();
            for o in out.drain(..) {
                match o {
                    Out::To(conn, msg) => {
                        if let Some(text) = text_of(&msg) {
                            self.push(conn, Message::Text(text), &mut dropped);
                        }
                    }
                    Out::Many(conns, msg) => {
                        if let Some(text) = text_of(&msg) {
                            for conn in conns {
                                self.push(conn, Message::Text(text.clone()), &mut dropped);
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
            let now = Instant::now();
            for conn in dropped {
                self.queues.remove(&conn);
                out.extend(self.hub.disconnect(conn, now));
            }
        }
    }

    fn push(&mut self, conn: ConnId, msg: Message, dropped: &mut Vec<ConnId>) {
        if let Some(q) = self.queues.get(&conn) {
            if q.try_send(msg).is_err() {
                dropped.push(conn);
            }
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
    if let Err(why) = state.origins().check(header(header::ORIGIN), header(header::HOST)) {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    let peer = peer_of(info);
    let classes = state.classes().clone();
    // The hub checks a frame against the sender's role; the socket bounds
    // the largest anyone may send before its payload is read.
    ws.max_message_size(PRESENTER_FRAME_MAX)
        .max_frame_size(PRESENTER_FRAME_MAX)
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .on_upgrade(move |socket| run_socket(socket, classes, peer))
        .into_response()
}

async fn run_socket(socket: WebSocket, classes: Classes, peer: IpAddr) {
    classes.tick_in_background();
    let (mut tx, mut rx) = socket.split();
    let (queue, mut queued) = mpsc::channel::<Message>(QUEUE);
    let conn = {
        let mut reg = classes.lock();
        let conn = reg.hub.connect(peer);
        reg.queues.insert(conn, queue);
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
        let mut reg = classes.lock();
        let out = reg.hub.handle_text(conn, text.as_str(), Instant::now());
        reg.deliver(out);
    }
    let mut reg = classes.lock();
    reg.queues.remove(&conn);
    let out = reg.hub.disconnect(conn, Instant::now());
    reg.deliver(out);
}

/// A frame over [`PRESENTER_FRAME_MAX`] ends the socket with close code
/// 1009 and the bound, instead of a silent drop.
fn too_big(classes: &Classes, conn: ConnId, error: axum::Error) {
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

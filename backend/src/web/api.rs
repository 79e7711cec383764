//! The real-Redis API: `/api/health` (and its older name
//! `/api/real/health`) and the `/api/session` WebSocket.
//!
//! Each WebSocket is one [`RealLab`]: this file checks its origin and host,
//! bounds how many sockets are open and how large a message is, and pumps
//! the socket — each JSON text frame parsed into a
//! [`ClientMsg`](locklab_core::protocol::ClientMsg), handed to
//! the lab, and its answer sent back; a timer wakes the lab when its
//! lesson's programs or watched locks are due, and ends it when the socket
//! has been idle too long or the backend stops. The messages themselves,
//! and what the lab does with them, are [`crate::real::lab`]'s.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::{SinkExt, StreamExt};
use locklab_core::lesson::Lang;
use locklab_core::protocol::{Backing, Health, ServerMsg};
use locklab_core::reply::Reply;

use crate::class::ClassConfig;
use crate::real::conn::RealConnection;
use crate::real::lab::{encode_all, Labs, RealLab, Slot};
use crate::real::play;
use crate::real::session::SessionLimits;
use crate::real::topology::Servers;
use crate::web::class::Classes;
use crate::web::origin::OriginPolicy;

/// Most WebSockets open at once by default (issue 35, B14: 3,000 were
/// accepted). Each costs a task, buffers and, once it sends a command, a
/// session: 128 is a room of people with a tab or two each.
pub const DEFAULT_MAX_SOCKETS: usize = 128;

/// Shared by every request: what every lab shares (the user's server, if
/// any, and the session pool), the sockets' bound and the origin policy.
#[derive(Clone, Debug)]
pub struct ApiState {
    labs: Labs,
    /// WebSockets open now, of at most `max_sockets`.
    sockets: Arc<AtomicUsize>,
    max_sockets: usize,
    origins: Arc<OriginPolicy>,
    /// Set once when the backend stops: every socket ends its lab (its
    /// session cleaned up, its managed servers stopped) and closes.
    stop: Arc<tokio::sync::watch::Sender<bool>>,
    /// Class mode's classes (`/api/class/ws`).
    classes: Classes,
}

impl ApiState {
    /// `redis`: the user's server (`--redis URL`), or `None` for managed
    /// servers only.
    pub fn new(redis: Option<String>) -> Self {
        ApiState::with_limits(redis, SessionLimits::default())
    }

    pub fn with_limits(redis: Option<String>, limits: SessionLimits) -> Self {
        ApiState {
            labs: Labs::new(redis, limits),
            sockets: Arc::new(AtomicUsize::new(0)),
            max_sockets: DEFAULT_MAX_SOCKETS,
            origins: Arc::new(OriginPolicy::default()),
            stop: Arc::new(tokio::sync::watch::channel(false).0),
            classes: Classes::new(ClassConfig::default()),
        }
    }

    /// Serve classes with these limits and join URL (`locklab serve
    /// --class …`).
    pub fn class_config(mut self, cfg: ClassConfig) -> Self {
        self.classes = Classes::new(cfg);
        self
    }

    /// Keep classes in `store` (`--class-store`), with the limits set so far.
    pub fn class_store(mut self, store: std::sync::Arc<dyn crate::class::store::ClassStore>) -> Self {
        self.classes = Classes::with_store(self.classes.config(), store);
        self
    }

    /// The class routes' state.
    pub fn classes(&self) -> &Classes {
        &self.classes
    }

    /// Also accept WebSockets from these origins (`--allow-origin`), besides
    /// the lab's own.
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = String>) -> Self {
        self.origins = Arc::new(OriginPolicy::new(origins));
        self
    }

    /// The origins and hosts accepted ([`crate::web::site`] checks every
    /// request's `Host` with it).
    pub fn origins(&self) -> Arc<OriginPolicy> {
        self.origins.clone()
    }

    /// Accept at most `n` WebSockets at once (`locklab serve
    /// --max-sockets`); more are refused with a 503 before the upgrade.
    pub fn max_sockets(mut self, n: usize) -> Self {
        self.max_sockets = n;
        self
    }

    /// Lab sessions open right now, over all WebSockets: a socket's
    /// session is dropped (and its ACL user deleted) a little after the
    /// socket closes, which a caller that stops the server can wait for.
    pub fn live_sessions(&self) -> usize {
        self.labs.live_sessions()
    }

    /// Processes of managed topologies and lock services running now,
    /// over all WebSockets.
    pub fn live_topologies(&self) -> usize {
        self.labs.live_processes()
    }

    /// Ended sessions whose cleanup waits for a busy or unreachable server.
    pub fn pending_cleanups(&self) -> usize {
        self.labs.pending_cleanups()
    }

    /// End every lab: each socket tells its client, cleans up its session
    /// and stops its managed servers, then closes. For a backend that is
    /// stopping (SIGTERM, Ctrl-C); wait for [`live_topologies`] and
    /// [`live_sessions`] to reach 0 afterwards.
    ///
    /// [`live_topologies`]: ApiState::live_topologies
    /// [`live_sessions`]: ApiState::live_sessions
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }
}

/// `/api/health` (and its older name `/api/real/health`), `/api/session`
/// and `/api/notes`, for loopback peers only ([`crate::web::peer`]), and the
/// class routes for anyone; without the `Host` check: [`crate::web::site`]
/// serves it behind one.
pub(crate) fn api_router(state: ApiState) -> Router {
    Router::new()
        .route("/api/health", get(health))
        .route("/api/real/health", get(health))
        .route("/api/session", get(session_ws))
        .route("/api/notes", get(notes))
        .route_layer(axum::middleware::from_fn(crate::web::peer::peer_guard))
        .with_state(state.clone())
        .merge(crate::web::class::router(state))
}

/// The trainer's notes of every lesson that has any, for presenter mode's
/// notes window: loopback only, as the page a class serves to the LAN
/// carries none (`locklab_core::lesson::notes`).
async fn notes() -> Json<Vec<locklab_core::lesson::notes::LessonNotes>> {
    let all = locklab_core::lesson::builtin().unwrap_or_default();
    Json(all.iter().filter_map(|l| l.notes()).collect())
}

async fn health(State(state): State<ApiState>) -> Json<Health> {
    let redis = state.labs.redis().map(str::to_owned);
    let h = tokio::task::spawn_blocking(move || real_health(redis.as_deref()))
        .await
        .unwrap_or_else(|e| Health {
            reachable: false,
            version: None,
            topology: Backing::Unknown,
            lessons: Vec::new(),
            unsupported: Default::default(),
            error: Some(e.to_string()),
        });
    Json(h)
}

/// The health report, synchronously (also for the CLI).
pub fn real_health(redis: Option<&str>) -> Health {
    let target = match redis {
        Some(url) => Servers::external(url),
        None => Servers::External(String::new()),
    };
    let mut lessons = Vec::new();
    let mut unsupported = std::collections::BTreeMap::new();
    for l in locklab_core::lesson::builtin().unwrap_or_default() {
        let verdict = match redis {
            Some(_) => play::check_target(&l, &target, Lang::En),
            None => play::check_supported_lang(&l, Lang::En),
        };
        match verdict {
            Ok(()) => lessons.push(l.id.clone()),
            Err(why) => {
                unsupported.insert(l.id.clone(), why);
            }
        }
    }
    match redis {
        Some(url) => {
            let probe = RealConnection::open(url).and_then(|mut c| {
                c.set_read_timeout(Some(std::time::Duration::from_secs(2)))?;
                c.execute(&[b"INFO".to_vec(), b"server".to_vec()])
            });
            match probe {
                Ok(Reply::Bulk(text)) => Health {
                    reachable: true,
                    version: String::from_utf8_lossy(&text)
                        .lines()
                        .find_map(|l| l.strip_prefix("redis_version:").map(|v| v.trim().to_owned())),
                    topology: Backing::External,
                    lessons,
                    unsupported,
                    error: None,
                },
                Ok(other) => Health {
                    reachable: true,
                    version: None,
                    topology: Backing::External,
                    lessons,
                    unsupported,
                    error: Some(other.to_cli()),
                },
                Err(e) => Health {
                    reachable: false,
                    version: None,
                    topology: Backing::External,
                    lessons,
                    unsupported,
                    error: Some(e.to_string()),
                },
            }
        }
        None => {
            let version = crate::real::process::redis_server_binary().and_then(|b| {
                let out = std::process::Command::new(b).arg("--version").output().ok()?;
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.split_whitespace()
                    .find_map(|w| w.strip_prefix("v=").map(str::to_owned))
            });
            Health {
                reachable: version.is_some(),
                error: version.is_none().then(|| crate::real::process::NOT_FOUND.to_owned()),
                version,
                topology: Backing::Managed,
                lessons,
                unsupported,
            }
        }
    }
}

async fn session_ws(State(state): State<ApiState>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(why) = state.origins.check(header(header::ORIGIN), header(header::HOST)) {
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    let Ok(slot) = Slot::claim(&state.sockets, 1, state.max_sockets) else {
        let message = format!(
            "locklab: too many lab sessions open ({} WebSockets, the most this lab accepts: see locklab serve \
             --max-sockets); close another lab tab and reload\n",
            state.max_sockets
        );
        return (StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    };
    let max = max_message(&state);
    // A frame is checked against its header's length before its payload is
    // read, so a frame claiming 15 MiB costs nothing (the default, 16 MiB,
    // buffered it whole: B14). The page sends each message as one frame.
    ws.max_message_size(max)
        .max_frame_size(max)
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(move |socket| run_socket(socket, state, slot))
        .into_response()
}

/// The largest message a socket takes: the longest line a session accepts
/// (`max_line`, 64 KiB: a script typed or pasted at the console) and 4 KiB
/// for the JSON around it. A counterexample lesson sent whole
/// (`ClientMsg::Lesson`) is bounded by `Lesson::validate_sent`'s counts
/// and fits with room to spare.
fn max_message(state: &ApiState) -> usize {
    state.labs.limits().max_line + 4096
}

/// The close frame for a message or frame over [`max_message`]: code 1009
/// ("message too big") and the bound, instead of a silent drop.
fn too_big(error: axum::Error, max: usize) -> Option<Message> {
    use tokio_tungstenite::tungstenite::Error;
    let inner = error.into_inner();
    let capacity = matches!(inner.downcast_ref::<Error>(), Some(Error::Capacity(_)));
    capacity.then(|| {
        Message::Close(Some(axum::extract::ws::CloseFrame {
            code: axum::extract::ws::close_code::SIZE,
            reason: format!("message too big: a lab message holds at most {max} bytes").into(),
        }))
    })
}

/// The WebSocket's read buffer. tungstenite zero-fills up to this much
/// before *every* read of the socket, and its default (128 KiB) made that
/// memset a visible share of a command's cost; a command message is a few
/// hundred bytes. A larger message (a script up to `max_line`) still
/// arrives whole, only in more reads.
const READ_BUFFER: usize = 8 * 1024;

// long: the socket's one select loop, an arm per kind of wake (a message, a refused one, the timer, the stop)
async fn run_socket(socket: WebSocket, state: ApiState, _slot: Slot) {
    let max = max_message(&state);
    let (mut tx, mut rx) = socket.split();
    let idle = state.labs.limits().idle_timeout;
    let mut stop = state.stop.subscribe();
    let mut lab = RealLab::new(state.labs.clone());
    let mut last = std::time::Instant::now();
    // One timer for the socket's life, armed for `wake` below. A timer that
    // would fire later than `wake` is moved earlier; one that fires earlier
    // (the socket was busy since it was armed) is moved on then, without
    // anything being done. So a busy socket does not re-arm a timer for
    // every message, while nothing is served before its time.
    let timer = tokio::time::sleep_until(tokio::time::Instant::from_std(last + idle));
    tokio::pin!(timer);
    loop {
        // The lab's own deadline (a lesson's background program, a watched
        // lock due to expire), or the idle bound.
        let idle_at = last + idle;
        let wake = lab.deadline().map_or(idle_at, |d| d.min(idle_at));
        let wake_at = tokio::time::Instant::from_std(wake);
        if timer.is_elapsed() || timer.deadline() > wake_at {
            timer.as_mut().reset(wake_at);
        }
        if *stop.borrow() {
            let _ = send_all(
                &mut tx,
                encode_all(&[ServerMsg::Error {
                    message: STOPPING.into(),
                }]),
            )
            .await;
            break;
        }
        let incoming = tokio::select! {
            m = rx.next() => Some(m),
            () = &mut timer => None,
            _ = stop.changed() => continue,
        };
        let replies = match incoming {
            // Armed before the socket was last busy: not yet time.
            None if std::time::Instant::now() < wake => continue,
            None if std::time::Instant::now() >= idle_at => {
                let message = format!(
                    "this lab session was idle for {} s and has ended (its keys are deleted); send a message to \
                     start a new one",
                    idle.as_secs()
                );
                let _ = send_all(&mut tx, encode_all(&[ServerMsg::Error { message }])).await;
                break;
            }
            None => lab.wake().await,
            Some(None) => break,
            Some(Some(Err(e))) => {
                if let Some(close) = too_big(e, max) {
                    let _ = tx.send(close).await;
                }
                break;
            }
            Some(Some(Ok(msg))) => {
                last = std::time::Instant::now();
                let text = match msg {
                    Message::Text(t) => t,
                    Message::Close(_) => break,
                    _ => continue,
                };
                match lab.read(text.as_str()) {
                    Err(message) => vec![ServerMsg::Error { message }],
                    Ok(msg) => lab.handle(msg).await,
                }
            }
        };
        if lab.is_over() {
            // Its work panicked: the lab went with it.
            break;
        }
        let frames = lab.encode(&replies);
        if send_all(&mut tx, frames).await.is_err() {
            break;
        }
    }
    lab.close().await;
}

/// What a socket says when the backend stops.
const STOPPING: &str = "the lab backend is stopping: this session has ended (its keys are deleted)";

/// Send one message's answer: every message its own text frame, as the
/// clients expect, but queued first and flushed once, so a command's
/// events and reply leave in one write (one syscall, one wake-up of the
/// peer) rather than one per frame.
async fn send_all(
    tx: &mut futures_util::stream::SplitSink<WebSocket, Message>,
    frames: Vec<String>,
) -> Result<(), axum::Error> {
    if frames.is_empty() {
        return Ok(());
    }
    for json in frames {
        tx.feed(Message::Text(json.into())).await?;
    }
    tx.flush().await
}

/// Serve the API alone ([`crate::web::site`] without `dist`) on an already bound listener (tests bind
/// port 0; the lead's `serve` merges the router into the web app instead).
pub async fn serve_listener(listener: tokio::net::TcpListener, state: ApiState) -> std::io::Result<()> {
    let app = crate::web::site(None, state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(no_delay(listener), app).await
}

/// `listener`, with Nagle's algorithm off on every connection it accepts.
///
/// A command's answer is several small WebSocket frames (its events, then
/// its reply). With Nagle on, a frame written while the one before is not
/// yet acknowledged waits for that ACK, and the peer delays its ACK (40 ms
/// on Linux) while it waits for more data it could piggyback on: every
/// command then took some 40 ms over loopback, ~11 lock cycles/s instead of
/// thousands. The lab is interactive and latency is what the timeline
/// shows, so every write goes out at once.
pub fn no_delay(listener: tokio::net::TcpListener) -> NoDelay {
    use axum::serve::ListenerExt;
    listener.tap_io(set_no_delay)
}

/// [`no_delay`]'s listener: a named type, so a server on it can be asked
/// each connection's peer address (`ConnectInfo`).
pub type NoDelay = axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)>;

fn set_no_delay(tcp: &mut tokio::net::TcpStream) {
    // Best effort: a socket that refuses is still correct, only slower.
    let _ = tcp.set_nodelay(true);
}

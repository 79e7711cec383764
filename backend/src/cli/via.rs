//! `locklab cli --via URL`: the terminal as one more client of a running
//! `locklab serve`, on the same `/api/session` WebSocket the browser uses.
//!
//! # Why a WebSocket and not a Redis connection
//!
//! `--real` talks to Redis directly, as anyone's redis-cli would. `--via`
//! goes through the lab backend instead, so the terminal gets exactly what
//! the browser's real driver gets: the session's sandbox (key prefix, ACL
//! user, refused commands, limits), its managed topologies and their real
//! faults. The backend already renders each reply as redis-cli does (the
//! `reply` message's `text`), so this module prints that text and never
//! re-renders: what the terminal shows is what the browser console shows.
//!
//! # The protocol as seen from here
//!
//! The messages are core's [`locklab_core::protocol`], the one definition
//! the backend and the browser also compile; a message type this build
//! does not know arrives as [`ServerMsg::Unknown`] and is skipped, so a
//! newer backend can say more. The backend answers one message at a
//! time and sends everything a message caused before reading the next, and
//! each kind of request ends with a known message (`reply` for a command,
//! `hello` or `error` for a topology, `topology` or `error` for a fault),
//! so "read until that message" is a complete and correct pairing.
//!
//! # Never hang, never panic
//!
//! The REPL is synchronous (it reads stdin line by line), so the WebSocket
//! lives on a private current-thread tokio runtime and every wait is a
//! `block_on` under a deadline: connecting, and each reply. A backend that
//! goes away or stops answering becomes [`ViaError::Lost`] or
//! [`ViaError::Timeout`], which end the REPL with a message naming the URL.

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use thiserror::Error;
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::real::session::{SessionError, SessionLimits};
use locklab_core::protocol::{ClientMsg, FaultKind, NodeInfo, Served, ServerMsg, TopologyKind};
use locklab_core::reply::repr;

/// The path `locklab serve` mounts the session WebSocket on.
pub const DEFAULT_PATH: &str = "/api/session";

/// Starting a managed topology (a `:topology` command, or the first
/// command when the backend has no `--redis`) starts redis-server
/// processes, each allowed 20 s to come up, so it gets this many times the
/// per-reply timeout.
const TOPOLOGY_FACTOR: u32 = 4;

/// How long a goodbye (the WebSocket close) may take when the REPL ends.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);

/// Why `--via` could not connect, or stopped.
#[derive(Debug, Error)]
pub enum ViaError {
    /// The URL is not one this client can use.
    #[error("bad --via URL {url:?}: {why} (use http://HOST:PORT or ws://HOST:PORT[/path])")]
    BadUrl { url: String, why: String },
    /// Nothing answered the WebSocket handshake.
    #[error("cannot reach the lab backend at {url}: {why} (is `locklab serve` running there?)")]
    Connect { url: String, why: String },
    /// The backend closed the WebSocket or the connection broke mid-session.
    #[error("lost the lab backend at {url}: {why}; restart `locklab serve` and run `locklab cli --via` again")]
    Lost { url: String, why: String },
    /// The backend accepted but did not answer in time.
    #[error("the lab backend at {url} did not answer {what} within {secs} s; giving up")]
    Timeout { url: String, what: &'static str, secs: f64 },
    /// The local runtime could not be built (no threads, no fds).
    #[error("cannot start the WebSocket client: {0}")]
    Runtime(std::io::Error),
}

/// The lab session the backend opened for this WebSocket (its `hello`).
#[derive(Debug, Clone)]
struct SessionInfo {
    id: String,
    prefix: String,
    topology: Served,
}

/// Which message ends a request.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    Reply,
    HelloOrError,
    TopologyOrError,
}

/// How the last request ended.
enum Outcome {
    Reply(String),
    Hello,
    Topology,
    Error(String),
}

/// One connection to a lab backend, acting as one client of its session.
pub struct BackendClient {
    rt: Runtime,
    ws: Option<WebSocketStream<MaybeTlsStream<TcpStream>>>,
    /// The normalised `ws://` URL, for messages.
    url: String,
    /// `host:port` of the backend, for the prompt before there is a session.
    backend: String,
    timeout: Duration,
    /// The acting client (`:client`).
    client: String,
    /// The node commands go to (`:node`).
    node: u32,
    session: Option<SessionInfo>,
    nodes: Vec<NodeInfo>,
    /// (client, node) pairs inside `MULTI`: the session keeps one
    /// connection per client and node, so that is where MULTI state lives.
    in_multi: BTreeSet<(String, u32)>,
    /// Where lab notices go (the hello, topology changes): stderr in the
    /// binary, so stdout carries only replies, as in redis-cli's piped mode.
    notices: Box<dyn Write>,
}

impl std::fmt::Debug for BackendClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendClient")
            .field("url", &self.url)
            .field("client", &self.client)
            .field("node", &self.node)
            .finish()
    }
}

/// `http://h:p[/path]` or `ws://h:p[/path]` → `(ws://h:p/path, h:p)`; the
/// path defaults to [`DEFAULT_PATH`]. TLS is refused rather than silently
/// downgraded: `locklab serve` only speaks plain HTTP.
pub fn normalize_url(url: &str) -> Result<(String, String), ViaError> {
    let bad = |why: &str| ViaError::BadUrl {
        url: url.to_owned(),
        why: why.to_owned(),
    };
    let rest = if let Some(r) = url.strip_prefix("http://").or_else(|| url.strip_prefix("ws://")) {
        r
    } else if url.starts_with("https://") || url.starts_with("wss://") {
        return Err(bad("TLS is not supported; `locklab serve` speaks plain HTTP"));
    } else {
        return Err(bad("the scheme must be http:// or ws://"));
    };
    let (authority, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.is_empty() {
        return Err(bad("no host"));
    }
    if authority.contains('@') {
        return Err(bad("the lab backend takes no user or password"));
    }
    let path = if path.is_empty() || path == "/" {
        DEFAULT_PATH
    } else {
        path
    };
    let ws = format!("ws://{authority}{path}");
    ws.parse::<tungstenite::http::Uri>().map_err(|e| bad(&e.to_string()))?;
    Ok((ws, authority.to_owned()))
}

/// `host:port` of a node URL (`redis://[user:pass@]host:port[/db]`), never
/// its credentials: they would end up on screen.
fn host_port(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split(['/', '?']).next().unwrap_or(rest).to_owned()
}

/// An argv as a line the session parses back to the same argv: each
/// argument as redis-cli quotes it (`sdscatrepr`), whose escapes core's
/// line parser (`sdssplitargs`) reads back to the same bytes. The result is
/// ASCII, so any argv survives JSON's UTF-8 strings.
pub fn quote_argv(argv: &[Vec<u8>]) -> String {
    argv.iter().map(|a| repr(a)).collect::<Vec<_>>().join(" ")
}

impl BackendClient {
    /// Connect to `url` and open the lab session. `timeout` bounds the
    /// handshake and each reply; `notices` receives the session's hello.
    ///
    /// The backend opens a session lazily, on the first command, so a
    /// `PING` is sent at once: it changes nothing, and the user sees the
    /// key prefix (and learns whether the backend can reach Redis) before
    /// typing anything.
    pub fn connect(url: &str, timeout: Duration, notices: Box<dyn Write>) -> Result<BackendClient, ViaError> {
        let (ws_url, backend) = normalize_url(url)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(ViaError::Runtime)?;
        // Timers need the runtime: build them inside `block_on`.
        let connect = rt
            .block_on(async { tokio::time::timeout(timeout, tokio_tungstenite::connect_async(ws_url.as_str())).await });
        let ws = match connect {
            Ok(Ok((ws, _response))) => ws,
            Ok(Err(e)) => {
                return Err(ViaError::Connect {
                    url: ws_url,
                    why: handshake_error(&e),
                })
            }
            Err(_) => {
                return Err(ViaError::Timeout {
                    url: ws_url,
                    what: "the WebSocket handshake",
                    secs: timeout.as_secs_f64(),
                })
            }
        };
        let mut via = BackendClient {
            rt,
            ws: Some(ws),
            url: ws_url,
            backend,
            timeout,
            client: "A".into(),
            node: 0,
            session: None,
            nodes: Vec::new(),
            in_multi: BTreeSet::new(),
            notices,
        };
        let ping = via.command_json("PING");
        match via.request(ping, Until::Reply, timeout * TOPOLOGY_FACTOR, "the first command")? {
            Outcome::Reply(text) if via.session.is_some() && text == "PONG" => {}
            Outcome::Reply(text) | Outcome::Error(text) => {
                via.notice(&format!(
                    "locklab: the backend opened no session yet: {text}\nlocklab: each command will try again"
                ));
            }
            Outcome::Hello | Outcome::Topology => {}
        }
        Ok(via)
    }

    /// redis-cli's prompt for the acting client: `A@127.0.0.1:6379> `, with
    /// `(TX)` inside MULTI. Before the backend reported a node, the
    /// backend's own address, marked as such.
    pub fn prompt(&self) -> String {
        let server = match self.nodes.get(self.node as usize) {
            Some(n) => host_port(&n.url),
            None => format!("{} (lab backend)", self.backend),
        };
        let tx = if self.in_multi.contains(&(self.client.clone(), self.node)) {
            "(TX)"
        } else {
            ""
        };
        format!("{}@{server}{tx}> ", self.client)
    }

    /// One redis-cli command: its text (rendered by the backend) plus the
    /// newline redis-cli ends each reply with. `argv` is the line already
    /// parsed (by the REPL, which also took off a repeat count); `line` is
    /// the original text when it can go as it is.
    pub fn command(&mut self, argv: &[Vec<u8>], line: Option<&str>) -> Result<String, ViaError> {
        let text = match line {
            Some(l) => l.to_owned(),
            None => quote_argv(argv),
        };
        // Refuse here what the backend would refuse by closing the socket:
        // its WebSocket takes messages up to `max_line` plus 4 KiB. The
        // session's own limit text, so it reads the same either way.
        let limit = SessionLimits::default().max_line;
        if text.len() > limit {
            let e = SessionError::TooLarge {
                what: "the line",
                got: text.len(),
                limit,
            };
            return Ok(format!("{}\n", e.to_reply().to_cli()));
        }
        let msg = self.command_json(&text);
        if msg.len() > limit + 4096 {
            let e = SessionError::TooLarge {
                what: "the message",
                got: msg.len(),
                limit: limit + 4096,
            };
            return Ok(format!("{}\n", e.to_reply().to_cli()));
        }
        // The first command may start a managed topology.
        let wait = if self.session.is_none() {
            self.timeout * TOPOLOGY_FACTOR
        } else {
            self.timeout
        };
        let text = match self.request(msg, Until::Reply, wait, "a command")? {
            Outcome::Reply(t) => t,
            Outcome::Error(m) => lab_error(&m),
            Outcome::Hello | Outcome::Topology => String::new(),
        };
        self.track_multi(argv, &text);
        Ok(format!("{text}\n"))
    }

    /// A lab command (the line after its `:`), clearly not Redis: what it
    /// prints on stdout, newline included.
    pub fn lab_command(&mut self, line: &[u8]) -> Result<String, ViaError> {
        let words: Vec<String> = String::from_utf8_lossy(line)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["help"] | ["?"] => Ok(LAB_HELP.to_owned()),
            ["session"] => Ok(self.session_text()),
            ["client"] => Ok(format!("\"{}\"\n", self.client)),
            ["client", name] => {
                if name.chars().count() > 32 {
                    return Ok(format!("{}\n", SessionError::BadClient.to_reply().to_cli()));
                }
                self.client = (*name).to_owned();
                Ok(String::new())
            }
            ["node"] => Ok(format!("(integer) {}\n", self.node)),
            ["node", n] => match n.parse::<u32>() {
                Ok(n) if (n as usize) < self.nodes.len().max(1) => {
                    self.node = n;
                    Ok(String::new())
                }
                Ok(n) => Ok(format!("{}\n", SessionError::NoNode(n).to_reply().to_cli())),
                Err(_) => Ok(lab_error_line(&format!("':node' takes a node number, not {n:?}"))),
            },
            ["topology", kind] => {
                let Some(kind) = TopologyKind::parse(kind) else {
                    return Ok(lab_error_line(&format!(
                        "unknown topology {kind:?}: {}",
                        TopologyKind::choices()
                    )));
                };
                let msg = to_json(&ClientMsg::Topology { kind });
                match self.request(msg, Until::HelloOrError, self.timeout * TOPOLOGY_FACTOR, "the topology")? {
                    Outcome::Hello => Ok("OK\n".into()),
                    Outcome::Error(m) => Ok(lab_error_line(&m)),
                    Outcome::Reply(t) => Ok(format!("{t}\n")),
                    Outcome::Topology => Ok("OK\n".into()),
                }
            }
            ["fault", fault] | ["fault", fault, _] => {
                let node = match words.get(2) {
                    None => self.node,
                    Some(n) => match n.parse::<u32>() {
                        Ok(n) => n,
                        Err(_) => return Ok(lab_error_line(&format!("':fault' takes a node number, not {n:?}"))),
                    },
                };
                let Some(fault) = FaultKind::parse(fault) else {
                    return Ok(lab_error_line(&format!(
                        "unknown fault {fault:?}: {}",
                        FaultKind::choices()
                    )));
                };
                let msg = to_json(&ClientMsg::Fault { fault, node });
                match self.request(msg, Until::TopologyOrError, self.timeout * TOPOLOGY_FACTOR, "the fault")? {
                    Outcome::Topology => Ok("OK\n".into()),
                    Outcome::Error(m) => Ok(lab_error_line(&m)),
                    Outcome::Reply(t) => Ok(format!("{t}\n")),
                    Outcome::Hello => Ok("OK\n".into()),
                }
            }
            _ => Ok(lab_error_line(&format!(
                "unknown lab command ':{}' (lab commands are not Redis; try :help)",
                words.join(" ")
            ))),
        }
    }

    fn command_json(&self, line: &str) -> String {
        to_json(&ClientMsg::Command {
            client: self.client.clone(),
            line: line.to_owned(),
            node: self.node,
        })
    }

    /// The session's `hello`, for `:session` and for the notice.
    fn session_text(&self) -> String {
        let Some(s) = &self.session else {
            return format!("no lab session yet on {}\n", self.url);
        };
        let mut out = format!("lab session {} on {}\ntopology {}\n", s.id, self.url, s.topology);
        out.push_str(&self.nodes_text());
        out.push_str(&format!(
            "keys are stored as {p}KEY and shown without {p}\n",
            p = s.prefix
        ));
        out
    }

    fn nodes_text(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| format!("node {i}: {} {} ({}, {})\n", n.name, host_port(&n.url), n.role, n.state))
            .collect()
    }

    fn notice(&mut self, text: &str) {
        // A closed stderr must not end the lab: the notices are a courtesy.
        let _ = writeln!(self.notices, "{}", text.trim_end());
        let _ = self.notices.flush();
    }

    /// `MULTI` answered `OK` opens a transaction on this client's
    /// connection to this node; `EXEC` and `DISCARD` end it whatever they
    /// answer (redis-cli's prompt does the same).
    fn track_multi(&mut self, argv: &[Vec<u8>], text: &str) {
        let key = (self.client.clone(), self.node);
        let name = argv.first().map(|n| n.to_ascii_lowercase()).unwrap_or_default();
        match name.as_slice() {
            b"multi" if text == "OK" => {
                self.in_multi.insert(key);
            }
            b"exec" | b"discard" => {
                self.in_multi.remove(&key);
            }
            _ => {}
        }
    }

    /// Send `msg` and read until the message that ends it, within `wait`.
    /// `hello` and `topology` update what the prompt and `:session` show
    /// wherever they come.
    fn request(&mut self, msg: String, until: Until, wait: Duration, what: &'static str) -> Result<Outcome, ViaError> {
        let Some(mut ws) = self.ws.take() else {
            return Err(ViaError::Lost {
                url: self.url.clone(),
                why: "the connection is closed".into(),
            });
        };
        let deadline = Instant::now() + wait;
        let url = self.url.clone();
        let timeout = || ViaError::Timeout {
            url: url.clone(),
            what,
            secs: wait.as_secs_f64(),
        };
        let sent = self
            .rt
            .block_on(async { tokio::time::timeout_at(deadline, ws.send(Message::Text(msg.into()))).await });
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.lost(&e)),
            Err(_) => return Err(timeout()),
        }
        loop {
            let Some(text) = self
                .next_text(&mut ws, deadline)
                .map_err(|e| e.unwrap_or_else(timeout))?
            else {
                continue;
            };
            // A message this client cannot read is not worth ending the
            // session for: the reply it waits for may still come.
            let Ok(incoming) = serde_json::from_str::<ServerMsg>(&text) else {
                continue;
            };
            if let Some(outcome) = self.take(incoming, until) {
                self.ws = Some(ws);
                return Ok(outcome);
            }
        }
    }

    /// The socket failed.
    fn lost(&self, e: &tungstenite::Error) -> ViaError {
        ViaError::Lost {
            url: self.url.clone(),
            why: socket_error(e),
        }
    }

    /// The next frame's text by `deadline` (`None`: a frame that is not
    /// text). `Err(None)` is the deadline passing; `Err(Some(_))` the
    /// connection lost or closed by the backend, with its reason.
    fn next_text(
        &self,
        ws: &mut WebSocketStream<MaybeTlsStream<TcpStream>>,
        deadline: Instant,
    ) -> Result<Option<String>, Option<ViaError>> {
        let next = self
            .rt
            .block_on(async { tokio::time::timeout_at(deadline, ws.next()).await });
        match next {
            Err(_) => Err(None),
            Ok(None) => Err(Some(ViaError::Lost {
                url: self.url.clone(),
                why: "the connection closed".into(),
            })),
            Ok(Some(Err(e))) => Err(Some(self.lost(&e))),
            Ok(Some(Ok(Message::Close(frame)))) => {
                let why = match frame {
                    Some(f) if !f.reason.is_empty() => format!("it closed the session ({})", f.reason),
                    _ => "it closed the session".into(),
                };
                Err(Some(ViaError::Lost {
                    url: self.url.clone(),
                    why,
                }))
            }
            Ok(Some(Ok(Message::Text(t)))) => Ok(Some(t.to_string())),
            Ok(Some(Ok(_))) => Ok(None),
        }
    }

    /// Take in one message from the backend; `Some` when it ends the
    /// request waiting for `until`.
    fn take(&mut self, incoming: ServerMsg, until: Until) -> Option<Outcome> {
        match incoming {
            ServerMsg::Hello {
                session,
                prefix,
                topology,
                nodes,
                ..
            } => {
                self.session = Some(SessionInfo {
                    id: session,
                    prefix,
                    topology,
                });
                self.nodes = nodes;
                self.node = 0;
                self.in_multi.clear();
                let text = self.session_text();
                let text: String = text.lines().map(|l| format!("locklab: {l}\n")).collect();
                self.notice(&format!(
                    "{text}locklab: lab commands (not Redis) start with ':' — try :help"
                ));
                (until == Until::HelloOrError).then_some(Outcome::Hello)
            }
            ServerMsg::Topology { kind, nodes } => {
                self.nodes = nodes;
                if let Some(s) = self.session.as_mut() {
                    s.topology = kind;
                }
                let text: String = self.nodes_text().lines().map(|l| format!("locklab: {l}\n")).collect();
                self.notice(&format!("locklab: topology {kind}\n{text}"));
                (until == Until::TopologyOrError).then_some(Outcome::Topology)
            }
            ServerMsg::Reply { text, .. } if until == Until::Reply => Some(Outcome::Reply(text)),
            // Nothing follows an `error`: it ends any request.
            ServerMsg::Error { message } => Some(Outcome::Error(message)),
            _ => None,
        }
    }
}

impl Drop for BackendClient {
    /// Say goodbye, briefly: the backend kills a managed topology when the
    /// WebSocket closes, and a clean close lets it do so at once.
    fn drop(&mut self) {
        if let Some(mut ws) = self.ws.take() {
            let _ = self
                .rt
                .block_on(async { tokio::time::timeout(CLOSE_TIMEOUT, ws.close(None)).await });
        }
    }
}

/// A message as its JSON text frame.
fn to_json(msg: &ClientMsg) -> String {
    // A `ClientMsg` is strings, numbers and enums: it always serialises.
    serde_json::to_string(msg).unwrap_or_default()
}

/// The backend's `error` message in redis-cli's error shape (no newline).
fn lab_error(message: &str) -> String {
    format!("(error) ERR locklab: {message}")
}

fn lab_error_line(message: &str) -> String {
    format!("{}\n", lab_error(message))
}

/// The handshake's failure in words: a wrong path or a server that is not
/// locklab answers plain HTTP, which is worth saying.
fn handshake_error(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::Http(resp) => format!(
            "it answered HTTP {} instead of a WebSocket (not a locklab backend's {DEFAULT_PATH}?)",
            resp.status()
        ),
        tungstenite::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

fn socket_error(e: &tungstenite::Error) -> String {
    match e {
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => "the connection closed".into(),
        tungstenite::Error::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

/// `:help`.
const LAB_HELP: &str = "\
Lab commands (not Redis; they act on the lab session, not on a server):
  :client NAME          act as client NAME (A, B, ...): its own connections, its own MULTI
  :node N               send commands to node N of the topology (default 0)
  :topology KIND        a fresh managed topology and session: single, replicated, redlock5, cluster3, sentinel
  :fault FAULT [N]      pause, resume, crash, restart, cut_replication, heal_replication, promote
                        on node N (default: the current node)
  :session              the session id, key prefix, topology and nodes
  :help                 this text
Everything else is sent as a redis-cli line; quit or exit leaves.
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let ok = |u: &str| normalize_url(u).unwrap().0;
        assert_eq!(ok("http://127.0.0.1:8080"), "ws://127.0.0.1:8080/api/session");
        assert_eq!(ok("http://127.0.0.1:8080/"), "ws://127.0.0.1:8080/api/session");
        assert_eq!(ok("ws://localhost:9/lab/ws"), "ws://localhost:9/lab/ws");
        for bad in [
            "127.0.0.1:8080",
            "https://h:1",
            "wss://h:1",
            "http://",
            "http://u:p@h:1",
            "ftp://h",
        ] {
            assert!(matches!(normalize_url(bad), Err(ViaError::BadUrl { .. })), "{bad}");
        }
    }

    #[test]
    fn quoting_round_trips_through_the_parser() {
        let argv: Vec<Vec<u8>> = vec![
            b"SET".to_vec(),
            b"k \"q\" \\".to_vec(),
            vec![0xff, b'\n', 0x01, b'x'],
            vec![0x07, 0x08, b'\t', b'\r', 0, b'"'],
            Vec::new(),
        ];
        let line = quote_argv(&argv);
        assert!(line.is_ascii());
        assert_eq!(locklab_core::cli::parse(&line).unwrap(), argv);
    }

    #[test]
    fn node_urls_lose_their_credentials() {
        assert_eq!(host_port("redis://user:secret@10.0.0.1:6380/0"), "10.0.0.1:6380");
        assert_eq!(host_port("redis://127.0.0.1:6379"), "127.0.0.1:6379");
    }

    #[test]
    fn unknown_messages_are_skipped() {
        let m: ServerMsg = serde_json::from_str(r#"{"type":"lesson_step","step":3,"x":{"y":1}}"#).unwrap();
        assert!(matches!(m, ServerMsg::Unknown));
        let m: ServerMsg = serde_json::from_str(r#"{"type":"reply","client":"A","text":"OK"}"#).unwrap();
        assert!(matches!(m, ServerMsg::Reply { text, .. } if text == "OK"));
    }
}

//! The baseline of the bench's WebSocket figures: a bare relay.
//!
//! It carries the console's `command` messages to a redis-server and each
//! reply back as a `reply` message, the way `/api/session` does, with
//! nothing of the lab in between: no session, no key prefix, no ACL user,
//! no checks or pre-flight, no trace events, no lock watch. Its link to
//! Redis is the lab's own [`Link`] and its WebSocket is the same axum
//! server on the same kind of runtime, so what the relay reaches is what
//! *any* backend carrying a console over a WebSocket to Redis reaches on
//! this machine. The lab's WebSocket figures are read against it: on a
//! machine with few cores, the relay's own ratio to direct is the ceiling,
//! whatever the lab does.
//!
//! It serves only the bench, on a loopback port the bench binds, for as
//! long as the bench runs.

use std::time::Duration;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::routing::get;
use axum::Router;
use locklab_core::cli;
use locklab_core::console::{self, Typed};
use locklab_core::protocol::{ClientMsg, ServerMsg};

use crate::real::session::link::Link;

/// Where the relay listens on its server.
pub(super) const PATH: &str = "/relay";

/// How long the relay waits for Redis to connect or answer.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The relay's router: every WebSocket on [`PATH`] gets a connection of
/// its own to the server at `url`.
pub(super) fn router(url: String) -> Router {
    Router::new().route(
        PATH,
        get(move |ws: WebSocketUpgrade| {
            let url = url.clone();
            async move { ws.on_upgrade(move |socket| relay(socket, url)) }
        }),
    )
}

/// Relay one socket's commands until it closes (or Redis goes away).
async fn relay(mut socket: WebSocket, url: String) {
    let mut link = match Link::open(&url, TIMEOUT).await {
        Ok(link) => Some(link),
        Err(e) => {
            let message = format!("the relay could not reach Redis: {e}");
            let _ = send(&mut socket, &ServerMsg::Error { message }).await;
            None
        }
    };
    while let (Some(redis), Some(Ok(msg))) = (link.as_mut(), socket.recv().await) {
        let text = match msg {
            Message::Text(text) => text,
            Message::Close(_) => break,
            _ => continue,
        };
        let answer = match ClientMsg::from_json(text.as_str()) {
            Ok(ClientMsg::Command { client, line, .. }) => {
                let text = command(redis, &line).await;
                if !redis.usable() {
                    link = None;
                }
                ServerMsg::Reply { client, text }
            }
            Ok(_) => ServerMsg::Error {
                message: "the bench's relay carries only command messages".into(),
            },
            Err(message) => ServerMsg::Error { message },
        };
        if send(&mut socket, &answer).await.is_err() {
            break;
        }
    }
}

/// One console line on `redis`, printed as redis-cli prints it (core's
/// [`console::read`] and [`cli::render`], as the lab's console does).
async fn command(redis: &mut Link, line: &str) -> String {
    let (argv, repeat) = match console::read(line.as_bytes(), console::Limits::BROWSER) {
        Typed::Run { argv, repeat } => (argv, repeat),
        Typed::Refused(why) => return why.to_string(),
        Typed::Empty => return String::new(),
    };
    let mut out = String::new();
    for _ in 0..repeat {
        match redis.execute(&argv).await {
            Ok(reply) => out.push_str(&cli::render(&argv, &reply)),
            Err(e) => {
                out.push_str(&format!("(error) {e}\n"));
                break;
            }
        }
    }
    out.trim_end_matches(['\r', '\n']).to_owned()
}

async fn send(socket: &mut WebSocket, msg: &ServerMsg) -> Result<(), axum::Error> {
    match serde_json::to_string(msg) {
        Ok(json) => socket.send(Message::Text(json.into())).await,
        Err(_) => Ok(()),
    }
}

//! A client of the backend's `/api/session` WebSocket and `/api/health`,
//! for the API and security suites.
//!
//! The suites write their messages as raw JSON on purpose — it is the wire
//! format an already-loaded page speaks, and must keep working — but every
//! message the backend sends is also read as core's typed
//! [`ServerMsg`](locklab_core::protocol::ServerMsg), so a message the
//! protocol type cannot read (or does not know) fails the suite, not a
//! page in the field.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use locklab_backend::web::api::{serve_listener, ApiState};
use locklab_core::protocol::{ClientMsg, ServerMsg};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// A client's WebSocket to `/api/session`.
pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Serve the API on a free loopback port; its address.
pub async fn serve(state: ApiState) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { serve_listener(listener, state).await.unwrap() });
    addr
}

/// Open `/api/session` as a non-browser client (no `Origin`).
pub async fn connect(addr: std::net::SocketAddr) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/api/session"))
        .await
        .unwrap()
        .0
}

pub async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Send a typed message, as the page and `cli --via` do.
pub async fn send_msg(ws: &mut Ws, msg: &ClientMsg) {
    ws.send(Message::Text(serde_json::to_string(msg).unwrap().into()))
        .await
        .unwrap();
}

/// Messages until (and including) the first whose type is `until`.
pub async fn until(ws: &mut Ws, until: &str) -> Vec<Value> {
    let mut got = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("message in time")
            .expect("socket open")
            .unwrap();
        let Message::Text(t) = msg else { continue };
        let v: Value = serde_json::from_str(&t).unwrap();
        let typed: ServerMsg =
            serde_json::from_str(&t).unwrap_or_else(|e| panic!("the protocol type cannot read {t}: {e}"));
        assert_ne!(
            typed,
            ServerMsg::Unknown,
            "a message type the protocol does not declare: {t}"
        );
        let done = v["type"] == until;
        got.push(v);
        if done {
            return got;
        }
    }
}

/// `GET path` on the API, parsed.
pub async fn get_json(addr: std::net::SocketAddr, path: &'static str) -> Value {
    let body = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
    .await
    .unwrap();
    serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap()).unwrap()
}

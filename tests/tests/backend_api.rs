//! `/api/session` and `/api/real/health`, driven over a real WebSocket
//! (tokio-tungstenite) against the backend's router on a loopback port.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use locklab_backend::api::{serve_listener, ApiState, RealHealth};
use locklab_tests::RedisServer;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn serve(state: ApiState) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { serve_listener(listener, state).await.unwrap() });
    addr
}

async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Messages until (and including) the first whose type is `until`.
async fn until(ws: &mut Ws, until: &str) -> Vec<Value> {
    let mut got = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("message in time")
            .expect("socket open")
            .unwrap();
        let Message::Text(t) = msg else { continue };
        let v: Value = serde_json::from_str(&t).unwrap();
        let done = v["type"] == until;
        got.push(v);
        if done {
            return got;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_session_streams_events_and_replies() {
    let server = RedisServer::start();
    let addr = serve(ApiState::new(Some(server.url()))).await;

    let health: RealHealth = {
        let url = format!("http://{addr}/api/real/health");
        let body = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(url.trim_start_matches("http://").split('/').next().unwrap()).unwrap();
            write!(s, "GET /api/real/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        })
        .await
        .unwrap();
        serde_json::from_str(body.split("\r\n\r\n").nth(1).unwrap()).unwrap()
    };
    assert!(health.reachable);
    assert_eq!(health.version.as_deref(), Some("7.0.15"));
    assert_eq!(health.topology, "external");
    assert!(!health.lessons.is_empty());

    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session")).await.unwrap();
    send(&mut ws, json!({"type":"command","client":"A","line":"SET k v NX PX 100000"})).await;
    let got = until(&mut ws, "reply").await;
    assert!(got.iter().any(|m| m["type"] == "hello" && m["topology"] == "external"), "{got:?}");
    let kinds: Vec<&str> = got
        .iter()
        .filter(|m| m["type"] == "event")
        .map(|m| m["event"]["kind"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["sent", "executed", "received"], "{got:?}");
    assert_eq!(got.last().unwrap(), &json!({"type":"reply","client":"A","text":"OK"}));

    send(&mut ws, json!({"type":"command","client":"B","line":"SET k w NX"})).await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "(nil)");
    send(&mut ws, json!({"type":"command","client":"B","line":"FLUSHALL"})).await;
    let text = until(&mut ws, "reply").await.last().unwrap()["text"].as_str().unwrap().to_owned();
    assert!(text.starts_with("(error) ERR locklab: 'FLUSHALL' is not allowed"), "{text}");

    // The user's own server: faults refused.
    send(&mut ws, json!({"type":"fault","fault":"crash","node":0})).await;
    let m = until(&mut ws, "error").await;
    assert!(m.last().unwrap()["message"].as_str().unwrap().contains("never kills"));
    send(&mut ws, json!({"type":"nonsense"})).await;
    until(&mut ws, "error").await;
    ws.close(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_managed_topology_and_faults() {
    let addr = serve(ApiState::new(None)).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/session")).await.unwrap();
    send(&mut ws, json!({"type":"topology","kind":"replicated"})).await;
    let hello = until(&mut ws, "hello").await.pop().unwrap();
    assert_eq!(hello["topology"], "replicated");
    assert_eq!(hello["nodes"].as_array().unwrap().len(), 2);
    send(&mut ws, json!({"type":"command","client":"A","line":"SET lock A","node":0})).await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "OK");
    send(&mut ws, json!({"type":"fault","fault":"promote","node":1})).await;
    let got = until(&mut ws, "topology").await;
    assert!(got.iter().any(|m| m["type"] == "event" && m["event"]["actor"] == "world"), "{got:?}");
    assert_eq!(got.last().unwrap()["nodes"][1]["role"], "master");
    send(&mut ws, json!({"type":"command","client":"B","line":"SET lock B","node":1})).await;
    assert_eq!(until(&mut ws, "reply").await.last().unwrap()["text"], "OK");
    ws.close(None).await.unwrap();
}

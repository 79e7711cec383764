//! `locklab serve` as a process: SIGTERM stops the redis-servers it started,
//! and a backend killed with SIGKILL has its redis-servers reaped by the
//! next one. (In the backend crate for `CARGO_BIN_EXE_locklab`, see
//! `cli_via.rs`.) Every wait polls against a generous deadline.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const DEADLINE: Duration = Duration::from_secs(60);

/// A scratch directory: `dist/index.html` for `serve`, and the runtime
/// directory its pid files go to.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locklab-signals-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::write(dir.join("dist/index.html"), "<!doctype html><title>lab</title>").unwrap();
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn serve(dir: &Path, port: u16) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["serve", "--port", &port.to_string(), "--dist"])
        .arg(dir.join("dist"))
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the locklab binary");
    let until = Instant::now() + DEADLINE;
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "locklab serve did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn listening(port: u16) -> bool {
    TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(1)).is_ok()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !done() {
        assert!(Instant::now() < until, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start `kind` through the backend's WebSocket; the managed nodes' ports.
fn start_topology(port: u16, kind: &str) -> Vec<u16> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/api/session")).await.unwrap();
        ws.send(Message::Text(json!({"type":"topology","kind":kind}).to_string().into())).await.unwrap();
        loop {
            let msg = tokio::time::timeout(DEADLINE, ws.next()).await.unwrap().unwrap().unwrap();
            let Message::Text(t) = msg else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            if v["type"] == "hello" {
                let ports: Vec<u16> = v["nodes"].as_array().unwrap().iter().map(|n| n["port"].as_u64().unwrap() as u16).collect();
                // Keep the socket open: the topology lives as long as it.
                std::mem::forget(ws);
                return ports;
            }
        }
    })
}

fn signal(child: &Child, sig: &str) {
    Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap();
}

#[test]
fn sigterm_stops_every_managed_redis_server() {
    let dir = scratch("term");
    let port = free_port();
    let mut lab = serve(&dir, port);
    let nodes = start_topology(port, "redlock5");
    assert_eq!(nodes.len(), 5);
    assert!(nodes.iter().all(|&p| listening(p)));
    signal(&lab, "-TERM");
    wait_until("locklab serve exits on SIGTERM", || lab.try_wait().unwrap().is_some());
    for p in nodes {
        assert!(!listening(p), "redis-server on {p} outlived the backend");
    }
    let left = std::fs::read_dir(dir.join("run/locklab/managed")).map_or(0, |d| d.count());
    assert_eq!(left, 0, "pid files left");
}

#[test]
fn a_restarted_backend_reaps_what_a_killed_one_left() {
    let dir = scratch("kill");
    let port = free_port();
    let mut lab = serve(&dir, port);
    let nodes = start_topology(port, "replicated");
    signal(&lab, "-KILL");
    let _ = lab.wait();
    // SIGKILL runs no destructor: the servers are orphans now.
    assert!(nodes.iter().all(|&p| listening(p)), "the orphans are still there");
    let port = free_port();
    let mut again = serve(&dir, port);
    wait_until("the next backend reaps the orphans", || nodes.iter().all(|&p| !listening(p)));
    signal(&again, "-TERM");
    let _ = again.wait();
}

//! `locklab cli --via`: the built `locklab` binary, driven by a piped script,
//! against the backend's real `/api/session` router on a loopback port and a
//! real redis-server.
//!
//! These live in the backend crate rather than `tests/` because only a
//! package's own integration tests get `CARGO_BIN_EXE_locklab`, which also
//! makes cargo build the binary first; `cargo test --workspace` (what
//! `./scripts/test` runs) includes them.
//!
//! The backend runs on a runtime of its own, so a test can "kill" it by
//! shutting that runtime down: every connection task is dropped and its
//! socket closed, exactly what the client sees when `locklab serve` dies.
//! Every wait polls against a generous deadline; nothing depends on speed.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use locklab_backend::real::process::RedisServer;
use locklab_backend::web::api::{serve_listener, ApiState};

const DEADLINE: Duration = Duration::from_secs(60);

/// The lab backend's router on 127.0.0.1:0, on its own runtime.
struct Backend {
    rt: Option<tokio::runtime::Runtime>,
    addr: SocketAddr,
}

impl Backend {
    fn start(state: ApiState) -> Backend {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move { serve_listener(listener, state).await.unwrap() });
        Backend { rt: Some(rt), addr }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// As if the process died: no close frames, sockets just go.
    fn kill(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

fn locklab(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the locklab binary")
}

/// Read a pipe to its end on a thread, so the child never blocks on it.
fn drain(mut r: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Everything received so far, waiting (up to the deadline) until it
/// contains `want`.
fn collect_until(rx: &mpsc::Receiver<Vec<u8>>, got: &mut Vec<u8>, want: &str) {
    let deadline = Instant::now() + DEADLINE;
    while !String::from_utf8_lossy(got).contains(want) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(chunk) => got.extend_from_slice(&chunk),
            Err(_) => panic!("no {want:?} in time; got {:?}", String::from_utf8_lossy(got)),
        }
    }
}

/// Wait for the child to exit (killing it at the deadline, which fails the
/// test: a hang is the bug these tests exist to catch), with whatever it
/// wrote on the pipes not already taken.
fn finish(mut child: Child) -> (ExitStatus, String, String) {
    let out = child.stdout.take().map(drain);
    let err = child.stderr.take().map(drain);
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("locklab cli --via did not exit in time");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let all = |rx: Option<mpsc::Receiver<Vec<u8>>>| {
        let bytes: Vec<u8> = rx.into_iter().flat_map(|rx| rx.into_iter().flatten()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (status, all(out), all(err))
}

fn run_script(args: &[&str], script: &[u8]) -> (ExitStatus, String, String) {
    let mut child = locklab(args);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(script).unwrap();
    drop(stdin);
    finish(child)
}

#[test]
fn piped_script_through_the_backend_session() {
    let server = RedisServer::start();
    let backend = Backend::start(ApiState::new(Some(server.url())));
    let mut script = b"SET lock:1 tok NX PX 30000
SET lock:1 tok NX PX 30000
GET lock:1
FLUSHALL
:client B
SET lock:1 other NX PX 30000
3 INCR n
SET k \"open
MULTI
SET t 1
EXEC
:node 5
:fault crash 0
:nonsense
"
    .to_vec();
    script.extend_from_slice(b"SET raw\xff v\nGET raw\xff\n");
    script.extend_from_slice(format!("ECHO {}\n", "x".repeat(70_000)).as_bytes());
    script.extend_from_slice(b"PING\nquit\nPING\n");
    let (status, out, err) = run_script(&["cli", "--via", &backend.url()], &script);
    assert!(status.success(), "{status}\n{err}");

    let lines: Vec<&str> = out.lines().collect();
    let want: &[(&str, bool)] = &[
        ("OK", true),
        ("(nil)", true),
        ("\"tok\"", true),
        ("(error) ERR locklab: 'FLUSHALL' is not allowed in a lab session", false),
        // B shares A's session, so it sees A's lock.
        ("(nil)", true),
        ("(integer) 1", true),
        ("(integer) 2", true),
        ("(integer) 3", true),
        ("Invalid argument(s)", true),
        ("OK", true),
        ("QUEUED", true),
        ("1) OK", true),
        ("(error) ERR locklab: no node 5 in this session", true),
        ("(error) ERR locklab: ", false),
        ("(error) ERR locklab: unknown lab command ':nonsense'", false),
        ("OK", true),
        ("\"v\"", true),
        (
            "(error) ERR locklab: the line is 70005 bytes or items, the limit is 65536",
            true,
        ),
        ("PONG", true),
    ];
    assert_eq!(lines.len(), want.len(), "{out}");
    for (got, (w, exact)) in lines.iter().zip(want) {
        if *exact {
            assert_eq!(got, w, "{out}");
        } else {
            assert!(got.starts_with(w), "{got:?} should start with {w:?}\n{out}");
        }
    }
    assert!(lines[13].contains("never kills"), "{out}");

    // The hello went to stderr, away from the replies.
    assert!(err.contains("locklab: lab session ") && err.contains(":help"), "{err}");
    assert!(err.contains("locklab: keys are stored as lab:"), "{err}");
}

#[test]
fn managed_topology_and_faults_from_the_terminal() {
    let backend = Backend::start(ApiState::new(None));
    let script = b":topology replicated
SET lock A
:fault promote 1
:node 1
SET lock B
GET lock
:fault nonsense
";
    let (status, out, err) = run_script(&["cli", "--via", &backend.url()], script);
    assert!(status.success(), "{status}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(&lines[..5], ["OK", "OK", "OK", "OK", "\"B\""], "{out}\n{err}");
    assert!(lines[5].starts_with("(error) ERR locklab: unknown fault"), "{out}");
    assert!(err.contains("topology replicated"), "{err}");
    assert!(err.contains("node 1: ") && err.contains("(master, up)"), "{err}");
}

#[test]
fn backend_killed_mid_session_is_a_clear_error_not_a_hang() {
    let server = RedisServer::start();
    let mut backend = Backend::start(ApiState::new(Some(server.url())));
    let mut child = locklab(&["cli", "--via", &backend.url()]);
    let mut stdin = child.stdin.take().unwrap();
    let out = drain(child.stdout.take().unwrap());
    let err = drain(child.stderr.take().unwrap());
    stdin.write_all(b"SET a 1\n").unwrap();
    collect_until(&out, &mut Vec::new(), "OK\n");

    // The key is stored under the prefix the hello announced (the session
    // deletes its keys when it ends, so look while it is alive).
    let mut err_text = Vec::new();
    collect_until(&err, &mut err_text, "KEY and shown");
    let err_text = String::from_utf8_lossy(&err_text).into_owned();
    let prefix = err_text
        .lines()
        .find_map(|l| l.strip_prefix("locklab: keys are stored as ")?.split("KEY").next())
        .unwrap_or_else(|| panic!("no prefix in {err_text}"))
        .to_owned();
    assert!(prefix.starts_with("lab:") && prefix.ends_with(':'), "{err_text}");
    let mut conn = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*a").query(&mut conn).unwrap();
    assert_eq!(keys, [format!("{prefix}a")]);

    backend.kill();
    // The next line finds the backend gone; stdin stays open, so only the
    // client's own error handling can end the process.
    stdin.write_all(b"GET a\n").unwrap();
    let (status, _, _) = finish(child);
    drop(stdin);
    let err: String = String::from_utf8_lossy(&err.iter().flatten().collect::<Vec<u8>>()).into_owned();
    assert!(!status.success(), "{err}");
    assert!(err.contains("lost the lab backend at ws://"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn silent_backends_time_out() {
    // Accepts TCP and never speaks HTTP: the handshake times out.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", mute.local_addr().unwrap());
    let (status, _, err) = run_script(&["cli", "--via", &url, "--timeout", "0.5"], b"PING\n");
    assert!(!status.success());
    assert!(
        err.contains("did not answer the WebSocket handshake within 0.5 s"),
        "{err}"
    );

    // Completes the WebSocket handshake, then never answers a message.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("ws://{}/api/session", listener.local_addr().unwrap());
    rt.spawn(async move {
        use futures_util::StreamExt;
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await {
                    while ws.next().await.is_some() {}
                }
            });
        }
    });
    let (status, _, err) = run_script(&["cli", "--via", &url, "--timeout", "0.5"], b"PING\n");
    assert!(!status.success());
    assert!(err.contains("did not answer the first command within 2 s"), "{err}");
    drop(mute);
}

#[test]
fn bad_urls_and_flags_are_refused_at_once() {
    let (status, _, err) = run_script(&["cli", "--via", "ftp://127.0.0.1:1"], b"");
    assert!(!status.success());
    assert!(err.contains("bad --via URL \"ftp://127.0.0.1:1\""), "{err}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (status, _, err) = run_script(&["cli", "--via", &format!("http://{closed}")], b"");
    assert!(!status.success());
    assert!(
        err.contains(&format!("cannot reach the lab backend at ws://{closed}/api/session")),
        "{err}"
    );

    let (status, _, err) = run_script(
        &["cli", "--via", "http://127.0.0.1:1", "--real", "redis://127.0.0.1:1"],
        b"",
    );
    assert!(!status.success());
    assert!(err.contains("cannot be used with"), "{err}");
}

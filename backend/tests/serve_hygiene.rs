//! `locklab serve` and the files the CLI reads, attacked from the same
//! machine (issue 35, design item 4 and attacks B14, B15, B17, B18; issue
//! 42 row 13): the built binary as a process, real redis-servers, real
//! sockets. Every wait polls against a generous deadline; memory is read
//! from the backend's own `/proc/<pid>/status`.
//!
//! Here rather than in `tests/` because only the backend package's own
//! integration tests get `CARGO_BIN_EXE_locklab`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use locklab_backend::real::process::RedisServer;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const DEADLINE: Duration = Duration::from_secs(60);
const PASSWORD: &str = "owner-pw-7f3c9a";

/// A scratch directory: `dist/index.html` for `serve`, `run/` for its pid
/// files, and whatever the test puts there.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locklab-hygiene-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("dist")).unwrap();
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::set_permissions(dir.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dir.join("dist/index.html"), "<!doctype html><title>lab</title>").unwrap();
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `locklab serve` with `args` and `env`, its stdout and stderr going to
/// files in `dir`; returns once it listens.
struct Lab {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Lab {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Lab {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_locklab"))
            .args(["serve", "--port", &port.to_string(), "--dist"])
            .arg(dir.join("dist"))
            .args(args)
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env_remove("LOCKLAB_REDIS_URL")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
            .spawn()
            .expect("run the locklab binary");
        let mut lab = Lab {
            child,
            port,
            dir: dir.to_owned(),
        };
        let until = Instant::now() + DEADLINE;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                lab.child.try_wait().unwrap().is_none(),
                "serve exited: {}",
                lab.output()
            );
            assert!(Instant::now() < until, "locklab serve did not listen on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        lab
    }

    /// What it printed so far, stdout and stderr.
    fn output(&self) -> String {
        let read = |f| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        format!("{}{}", read("stdout"), read("stderr"))
    }

    /// `GET path` with this `Host`: the status and the body.
    fn get(&self, path: &str, host: &str) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        (status, out.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned())
    }

    /// A field of the backend's `/proc/<pid>/status`, in kB.
    fn status_kb(&self, field: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|r| r.trim_start_matches(':').split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in {text}"))
    }

    fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/api/session", self.port)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn answers_ping(server: &RedisServer, password: Option<&str>) -> bool {
    let url = match password {
        Some(pw) => format!("redis://default:{pw}@127.0.0.1:{}/", server.port()),
        None => server.url(),
    };
    locklab_backend::real::conn::RealConnection::open(&url)
        .and_then(|mut c| c.execute(&[b"PING".to_vec()]))
        .is_ok_and(|r| r == locklab_core::reply::Reply::Status("PONG".into()))
}

/// B18: a DNS-rebinding page (`Host: evil.example:PORT`) reads nothing —
/// not the health report, not a file; the lab's own names are served.
#[test]
fn every_route_answers_only_the_labs_own_names() {
    let dir = scratch("host");
    let lab = Lab::start(&dir, &[], &[]);
    let port = lab.port;
    for path in ["/api/health", "/api/real/health", "/index.html", "/", "/no-such-file"] {
        let (status, body) = lab.get(path, &format!("evil.example:{port}"));
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.contains("answers only when reached by an IP address or localhost"),
            "{path}: {body}"
        );
        assert!(!body.contains("version"), "{body}");
    }
    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        assert_eq!(lab.get("/api/health", &host).0, 200, "{host}");
        let (status, body) = lab.get("/index.html", &host);
        assert_eq!(status, 200, "{host}");
        assert!(body.contains("<title>lab</title>"), "{body}");
    }
}

/// B14: the 129th WebSocket is refused with a reason before the upgrade,
/// and a closed one makes room again.
#[test]
fn websockets_are_capped() {
    let dir = scratch("cap");
    let lab = Lab::start(&dir, &[], &[]);
    let url = lab.ws_url();
    runtime().block_on(async {
        let mut open = Vec::new();
        for _ in 0..128 {
            open.push(
                tokio_tungstenite::connect_async(&url)
                    .await
                    .expect("one of the first 128")
                    .0,
            );
        }
        let refused = match tokio_tungstenite::connect_async(&url).await {
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => resp,
            other => panic!("the 129th socket was not refused: {:?}", other.map(|(_, r)| r.status())),
        };
        assert_eq!(refused.status().as_u16(), 503);
        let body = String::from_utf8_lossy(refused.body().as_deref().unwrap_or_default()).into_owned();
        assert!(body.contains("too many lab sessions open (128 WebSockets"), "{body}");
        let mut first = open.remove(0);
        first.close(None).await.unwrap();
        drop(first);
        let until = Instant::now() + DEADLINE;
        while tokio_tungstenite::connect_async(&url).await.is_err() {
            assert!(Instant::now() < until, "a closed socket's place was not given back");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

/// B14: 8 sockets each sending a 15 MiB frame. The frame's header names
/// its length, so it is refused before its payload is read: the backend's
/// peak RSS (VmHWM) grows by far less than one such frame (it grew by all
/// of them when a frame of up to 16 MiB was buffered whole). A message over
/// the bound gets a close frame with code 1009 and the bound.
#[test]
fn huge_frames_are_refused_unread() {
    let dir = scratch("frames");
    let lab = Lab::start(&dir, &[], &[]);
    let url = lab.ws_url();
    runtime().block_on(async {
        // A socket that works, first: the peak below includes a live one.
        let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        ws.send(Message::Text(json!({"type":"lesson_step"}).to_string().into()))
            .await
            .unwrap();
        let _ = tokio::time::timeout(DEADLINE, ws.next()).await.expect("an answer");
        let before = lab.status_kb("VmHWM");
        let payload = vec![b'x'; 15 << 20];
        let sends = (0..8).map(|_| {
            let (url, payload) = (url.clone(), payload.clone());
            tokio::spawn(async move {
                let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
                // The backend stops reading after the header: the write
                // may fail, which is the point.
                let _ = ws.send(Message::Binary(payload.into())).await;
            })
        });
        for s in sends.collect::<Vec<_>>() {
            s.await.unwrap();
        }
        // A message just over the bound (64 KiB of line and 4 KiB of JSON).
        let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
        let line = "x".repeat(80 * 1024);
        ws.send(Message::Text(
            json!({"type":"command","client":"A","line":line}).to_string().into(),
        ))
        .await
        .unwrap();
        let close = loop {
            match tokio::time::timeout(DEADLINE, ws.next()).await.expect("closed in time") {
                Some(Ok(Message::Close(frame))) => break frame.expect("a close frame with a reason"),
                Some(Ok(_)) => continue,
                other => panic!("no close frame: {other:?}"),
            }
        };
        assert_eq!(u16::from(close.code), 1009);
        assert_eq!(
            close.reason.as_str(),
            "message too big: a lab message holds at most 69632 bytes"
        );
        let after = lab.status_kb("VmHWM");
        let grew = after.saturating_sub(before);
        println!("backend VmHWM {before} kB -> {after} kB (+{grew} kB) for 8 x 15 MiB frames");
        assert!(grew < 8 * 1024, "the backend's peak grew by {grew} kB");
        // It still serves.
        assert_eq!(lab.get("/api/health", &format!("127.0.0.1:{}", lab.port)).0, 200);
    });
}

/// B15: a pid file the lab did not write — "left" by a backend that is
/// gone, naming the owner's own redis-server on its own port — is not
/// obeyed by the next `locklab serve`.
#[test]
fn a_forged_pid_file_kills_nothing() {
    let dir = scratch("forged");
    let owner = RedisServer::start();
    let managed = dir.join("run/locklab/managed");
    std::fs::create_dir_all(&managed).unwrap();
    for d in [dir.join("run/locklab"), managed.clone()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let file = managed.join(format!("{}.pid", owner.pid()));
    std::fs::write(&file, format!("{}\n{}\n", owner.port(), u32::MAX - 1)).unwrap();
    let lab = Lab::start(&dir, &[], &[]);
    assert!(
        answers_ping(&owner, None),
        "the owner's redis-server was killed: {}",
        lab.output()
    );
    assert!(!file.exists(), "a dead backend's file is done with");
    drop(lab);

    // A pid-file directory somebody opened to everyone: refused, said so.
    let dir = scratch("open");
    std::fs::create_dir_all(dir.join("run/locklab/managed")).unwrap();
    std::fs::set_permissions(dir.join("run/locklab"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let file = dir.join(format!("run/locklab/managed/{}.pid", owner.pid()));
    let started = locklab_backend::real::reaper::start_time(owner.pid()).unwrap();
    std::fs::write(&file, format!("{}\n{}\n{started}\n", owner.port(), u32::MAX - 1)).unwrap();
    let lab = Lab::start(&dir, &[], &[]);
    let until = Instant::now() + DEADLINE;
    while !lab.output().contains("refusing the pid-file directory") {
        assert!(Instant::now() < until, "{}", lab.output());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        lab.output().contains("it is open to other users (mode 777)"),
        "{}",
        lab.output()
    );
    assert!(answers_ping(&owner, None), "the owner's redis-server was killed");
    assert!(file.exists(), "nothing is done in a refused directory");
}

/// Run a command on a socket of `lab` and return everything it sent up to
/// the reply.
fn session_set(lab: &Lab) -> Vec<Value> {
    runtime().block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(lab.ws_url()).await.unwrap();
        ws.send(Message::Text(
            json!({"type":"command","client":"A","line":"SET k v"})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
        let mut got = Vec::new();
        loop {
            let msg = tokio::time::timeout(DEADLINE, ws.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            let Message::Text(t) = msg else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            let done = v["type"] == "reply" || v["type"] == "error";
            got.push(v);
            if done {
                return got;
            }
        }
    })
}

/// A way to give `serve` the password: a name, its arguments, its
/// environment, and whether the password is in its argv (and warned of).
type Case<'a> = (&'a str, Vec<&'a str>, Vec<(&'a str, &'a str)>, bool);

/// B17: the password can come from the environment or a file, neither in
/// the backend's argv; a password in `--redis` itself gets a warning. The
/// password appears in no output: argv, stdout, stderr, the socket, the
/// health report.
#[test]
fn the_redis_password_need_not_be_on_the_command_line() {
    let owner = RedisServer::start();
    let mut admin = locklab_backend::real::conn::RealConnection::open(&owner.url()).unwrap();
    let set = ["CONFIG", "SET", "requirepass", PASSWORD].map(|a| a.as_bytes().to_vec());
    admin.execute(&set).unwrap();
    drop(admin);
    let with_pw = format!("redis://default:{PASSWORD}@127.0.0.1:{}/", owner.port());
    let pw_file = std::env::temp_dir().join(format!("locklab-hygiene-{}-pw", std::process::id()));
    std::fs::write(&pw_file, format!("{PASSWORD}\n")).unwrap();
    let plain = format!("redis://127.0.0.1:{}/", owner.port());
    let cases: [Case; 3] = [
        ("env", vec![], vec![("LOCKLAB_REDIS_URL", with_pw.as_str())], false),
        (
            "file",
            vec!["--redis", &plain, "--redis-password-file", pw_file.to_str().unwrap()],
            vec![],
            false,
        ),
        ("argv", vec!["--redis", &with_pw], vec![], true),
    ];
    for (name, args, env, warned) in cases {
        let dir = scratch(&format!("pw-{name}"));
        let lab = Lab::start(&dir, &args, &env);
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", lab.child.id())).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&cmdline).contains(PASSWORD),
            warned,
            "{name}: the password in argv"
        );
        let seen = session_set(&lab);
        let text = serde_json::to_string(&seen).unwrap();
        assert!(
            seen.last().is_some_and(|v| v["type"] == "reply" && text.contains("OK")),
            "{name}: no session on the password-protected server: {text}"
        );
        let (status, health) = lab.get("/api/health", &format!("127.0.0.1:{}", lab.port));
        assert_eq!(status, 200);
        assert!(health.contains("\"reachable\":true"), "{name}: {health}");
        let output = lab.output();
        let warning = "warning: the password in --redis is visible to every local user in `ps`; set \
                       LOCKLAB_REDIS_URL instead, or give the password with --redis-password-file PATH";
        assert_eq!(output.contains(warning), warned, "{name}: {output}");
        for (what, s) in [("socket", &text), ("health", &health), ("output", &output)] {
            assert!(!s.contains(PASSWORD), "{name}: the password in the {what}: {s}");
        }
    }
    assert!(answers_ping(&owner, Some(PASSWORD)));
    let _ = std::fs::remove_file(pw_file);
}

/// Run `locklab lesson list --dir DIR`, bounded: a run still going after
/// a minute is a hang. Its exit status and stderr.
fn lesson_list(dir: &Path) -> (Option<i32>, String) {
    let err_path = dir.with_extension("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(["lesson", "list", "--dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("run the locklab binary");
    let until = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("locklab lesson list --dir {} hangs", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(err_path);
    (status.code(), err)
}

/// Issue 42 row 13: a lesson directory holding a symlink to `/dev/zero`,
/// a FIFO or a huge lesson gets one clear error, not 2.1 GB, a hang or
/// 691 MB; a symlink to a real lesson is followed.
#[test]
fn hostile_lesson_files_are_refused_before_they_are_read() {
    let root = scratch("lessons");
    let lesson = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lessons/01-atomic-acquire.toml");
    let make = |name: &str, what: &dyn Fn(&Path)| {
        let d = root.join(name);
        std::fs::create_dir_all(&d).unwrap();
        what(&d.join("x.toml"));
        d
    };
    let zero = make("zero", &|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap());
    let fifo = make("fifo", &|p| {
        assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    });
    let huge = make("huge", &|p| std::fs::write(p, vec![b'#'; 8 << 20]).unwrap());
    let linked = make("linked", &|p| std::os::unix::fs::symlink(&lesson, p).unwrap());
    for (dir, want) in [
        (
            &zero,
            "x.toml is a character device, not a regular file: a lesson file must be a regular file",
        ),
        (
            &fifo,
            "x.toml is a FIFO, not a regular file: a lesson file must be a regular file",
        ),
        (
            &huge,
            "x.toml is 8388608 bytes; a lesson file holds at most 262144 (the largest lesson in lessons/ is 19 KB)",
        ),
    ] {
        let (code, err) = lesson_list(dir);
        assert_eq!(code, Some(1), "{}: {err}", dir.display());
        assert!(err.contains(want), "{}: want {want:?} in {err}", dir.display());
        assert!(err.len() < 1000, "one clear line: {err}");
    }
    assert_eq!(lesson_list(&linked).0, Some(0), "a symlink to a lesson is read");
    let _ = std::fs::remove_dir_all(root);
}

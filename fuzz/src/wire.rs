//! The `wire` target: sim-server's connection loop itself, over real TCP,
//! with the stream cut at every byte (issue 42, row 3: what a connection
//! answers must not depend on how TCP cut it, and a busy script's answers
//! once reset the parser between reads).
//!
//! One sim-server runs in this process for the whole run. Each input (a
//! RESP stream from [`gen::resp_input`](crate::gen::resp_input), behind a
//! `FLUSHALL` so every run starts from the same keyspace) goes once whole
//! — one write — and once a byte a write, with a pause after each byte so
//! that the server's reads end there (on a loaded machine some bytes may
//! still arrive together: those cuts are then not tried, never wrongly
//! reported). The replies, up to the connection's close, must be the same.
//! One input in four is also run while a script is busy (past a
//! `busy-reply-threshold` of 10 ms, on another connection), where the
//! connection answers by itself, then the script is killed.
//!
//! Buffer limits (set to their smallest, once): one input in sixteen is
//! followed by a request that never ends, which must be closed at
//! `client-query-buffer-limit`; one in thirty-two has a subscriber that
//! never reads, which must be dropped at `client-output-buffer-limit
//! pubsub`, and another one in thirty-two a client that sends and never
//! reads, closed at `client-output-buffer-limit normal` (both within the
//! sockets' buffers); the server answers PING after.
//!
//! A run with no reply for [`REPLY_TIMEOUT`] is a hang, reported as a
//! finding. The generator's commands are `SET`, `GET`, inline lines and
//! noise: their replies depend only on the keyspace, which `FLUSHALL` resets.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use locklab_backend::sim_server::{self, Server, SimServerConfig};
use locklab_core::server::Profile;

/// How long a run may wait for the server before it counts as a hang.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// The pause after each byte of a split run, so the server's read ends there.
const BYTE_PAUSE: Duration = Duration::from_micros(200);

/// `FLUSHALL`, in front of every run.
const FLUSHALL: &[u8] = b"*1\r\n$8\r\nFLUSHALL\r\n";

/// The script that keeps the node busy until `SCRIPT KILL`.
const SPIN: &[u8] = b"*3\r\n$4\r\nEVAL\r\n$14\r\nwhile 1 do end\r\n$1\r\n0\r\n";

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut cfg = SimServerConfig::new(Ipv4Addr::LOCALHOST.into(), 0, Profile::V7_0);
        // Only SCRIPT KILL ends the busy script, however slow the machine.
        cfg.script_work_limit = u64::MAX;
        let server = sim_server::spawn(cfg).expect("the fuzzer's sim-server starts");
        let mut c = connect(server.local_addr()).expect("connect");
        let set = b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$20\r\nbusy-reply-threshold\r\n$2\r\n10\r\n";
        assert_eq!(ask(&mut c, set), "+OK");
        let addr = server.local_addr();
        config_set(addr, "client-query-buffer-limit", &QUERY_LIMIT.to_string()).expect("query limit");
        config_set(
            addr,
            "client-output-buffer-limit",
            &format!("normal {NORMAL_LIMIT} 0 0 pubsub {PUBSUB_LIMIT} 0 0"),
        )
        .expect("output limits");
        server
    })
}

fn connect(addr: SocketAddr) -> std::io::Result<TcpStream> {
    let s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(REPLY_TIMEOUT))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Send `bytes` and read one line of reply (without its CRLF).
fn ask(s: &mut TcpStream, bytes: &[u8]) -> String {
    if s.write_all(bytes).is_err() {
        return "(write failed)".into();
    }
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match s.read(&mut b) {
            Ok(1) => line.push(b[0]),
            _ => return format!("(no reply after {:?})", String::from_utf8_lossy(&line)),
        }
    }
    line.truncate(line.len() - 2);
    String::from_utf8_lossy(&line).into_owned()
}

/// Everything the server says to `input` (behind `FLUSHALL`) up to its
/// close, sent whole or a byte a write; `Err` on a hang.
fn replies(addr: SocketAddr, input: &[u8], bytewise: bool) -> Result<Vec<u8>, String> {
    let mut s = connect(addr).map_err(|e| format!("connect: {e}"))?;
    let mut stream = FLUSHALL.to_vec();
    stream.extend_from_slice(input);
    if bytewise {
        for b in &stream {
            // A write after the server closed fails: what it said is read below.
            if s.write_all(std::slice::from_ref(b)).is_err() {
                break;
            }
            std::thread::sleep(BYTE_PAUSE);
        }
    } else {
        let _ = s.write_all(&stream);
    }
    let _ = s.shutdown(Shutdown::Write);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            // A reset after the server closed (it had more bytes coming).
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(got),
            Err(e) => {
                return Err(format!(
                    "no close within {REPLY_TIMEOUT:?} ({e}) after {:?}",
                    String::from_utf8_lossy(&got)
                ))
            }
        }
    }
}

/// Whole and byte-by-byte give the same replies. A reset may cut a run
/// short after the server decided to close, so one run's replies may be a
/// prefix of the other's only when it was reset there.
fn same_split_and_whole(addr: SocketAddr, input: &[u8], when: &str) -> Result<(), String> {
    let whole = replies(addr, input, false)?;
    let split = replies(addr, input, true)?;
    if whole != split {
        return Err(format!(
            "{when}: a byte a read answered {:?}, one read {:?}",
            String::from_utf8_lossy(&split),
            String::from_utf8_lossy(&whole)
        ));
    }
    Ok(())
}

/// Start the spinning script and wait until a new connection is answered
/// BUSY; the script's connection is returned (kept open until the kill).
fn go_busy(addr: SocketAddr) -> Result<TcpStream, String> {
    let mut script = connect(addr).map_err(|e| format!("connect: {e}"))?;
    script.write_all(SPIN).map_err(|e| format!("EVAL: {e}"))?;
    let deadline = Instant::now() + REPLY_TIMEOUT;
    loop {
        let mut probe = connect(addr).map_err(|e| format!("connect: {e}"))?;
        if ask(&mut probe, b"PING\r\n").starts_with("-BUSY") {
            return Ok(script);
        }
        if Instant::now() >= deadline {
            return Err("the script never went busy".into());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `SCRIPT KILL`, then wait for the script's error and a PONG.
fn kill(addr: SocketAddr, mut script: TcpStream) -> Result<(), String> {
    let mut c = connect(addr).map_err(|e| format!("connect: {e}"))?;
    let killed = ask(&mut c, b"*2\r\n$6\r\nSCRIPT\r\n$4\r\nKILL\r\n");
    if killed != "+OK" {
        return Err(format!("SCRIPT KILL answered {killed:?}"));
    }
    let ended = ask(&mut script, b"");
    if !ended.starts_with("-ERR Script killed by user with SCRIPT KILL") {
        return Err(format!("the killed script answered {ended:?}"));
    }
    match ask(&mut c, b"PING\r\n").as_str() {
        "+PONG" => Ok(()),
        other => Err(format!("PING after the kill answered {other:?}")),
    }
}

/// `client-query-buffer-limit` and `client-output-buffer-limit pubsub`
/// here: their smallest settings, so a check costs a few megabytes.
const QUERY_LIMIT: usize = 1 << 20;
const PUBSUB_LIMIT: usize = 256 << 10;
/// `client-output-buffer-limit normal` here (the default is none): every
/// run's replies go through the limited write path; the runs' own replies
/// stay far below it.
const NORMAL_LIMIT: usize = 256 << 10;

/// What the kernel's socket buffers may hold on top of a limit before the
/// server sees it (loopback autotuning reaches a few megabytes).
const SOCKET_SLACK: usize = 8 << 20;

fn config_set(addr: SocketAddr, name: &str, value: &str) -> Result<(), String> {
    let mut c = connect(addr).map_err(|e| format!("connect: {e}"))?;
    let frame = format!(
        "*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n${}\r\n{name}\r\n${}\r\n{value}\r\n",
        name.len(),
        value.len()
    );
    match ask(&mut c, frame.as_bytes()).as_str() {
        "+OK" => Ok(()),
        other => Err(format!("CONFIG SET {name} {value}: {other:?}")),
    }
}

/// The query buffer: `input`'s stream, then one request whose last
/// argument never ends (a size from the input, within
/// `proto-max-bulk-len`), streamed: the server must close the connection
/// once it holds more than the limit, and still answer PING.
fn query_limit_holds(addr: SocketAddr, input: &[u8], pick: usize) -> Result<(), String> {
    let mut s = connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_write_timeout(Some(REPLY_TIMEOUT)).map_err(|e| e.to_string())?;
    let announced = QUERY_LIMIT * 2 + pick % QUERY_LIMIT + SOCKET_SLACK;
    let mut stream = input.to_vec();
    stream.extend_from_slice(format!("\r\n*2\r\n$4\r\nECHO\r\n${announced}\r\n").as_bytes());
    let _ = s.write_all(&stream);
    let chunk = vec![b'q'; 64 << 10];
    let mut sent = 0;
    while sent < announced {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    if sent >= announced {
        return Err(format!(
            "{sent} bytes of one argument taken over a {QUERY_LIMIT}-byte query limit"
        ));
    }
    pong(addr, "after the query-buffer limit")
}

/// The pub/sub output limit: a subscriber that never reads is dropped
/// (the publisher sees 0 receivers) within the limit plus the sockets'
/// buffers, whatever the message size (from the input).
fn pubsub_limit_holds(addr: SocketAddr, pick: usize) -> Result<(), String> {
    let mut deaf = connect(addr).map_err(|e| format!("connect: {e}"))?;
    let sub = ask(&mut deaf, b"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nfuzz\r\n");
    if sub != "*3" {
        return Err(format!("SUBSCRIBE answered {sub:?}"));
    }
    let mut publisher = connect(addr).map_err(|e| format!("connect: {e}"))?;
    let size = 1024 + pick % (64 << 10);
    let frame = format!(
        "*3\r\n$7\r\nPUBLISH\r\n$4\r\nfuzz\r\n${size}\r\n{}\r\n",
        "p".repeat(size)
    );
    let mut published = 0;
    loop {
        match ask(&mut publisher, frame.as_bytes()).as_str() {
            ":1" => published += size,
            ":0" => break,
            other => return Err(format!("PUBLISH answered {other:?}")),
        }
        if published > PUBSUB_LIMIT + SOCKET_SLACK {
            return Err(format!("{published} bytes queued for a subscriber that never reads"));
        }
    }
    drop(deaf);
    pong(addr, "after dropping a deaf subscriber")
}

/// The normal output limit: a client that keeps sending `ECHO`s (a size
/// from the input) and never reads is closed once its unread replies pass
/// the limit (its writes then fail), within the sockets' buffers both ways
/// — and the server never stops reading it first.
fn normal_limit_holds(addr: SocketAddr, pick: usize) -> Result<(), String> {
    let mut deaf = connect(addr).map_err(|e| format!("connect: {e}"))?;
    deaf.set_write_timeout(Some(REPLY_TIMEOUT)).map_err(|e| e.to_string())?;
    let size = 1024 + pick % (64 << 10);
    let frame = format!("*2\r\n$4\r\nECHO\r\n${size}\r\n{}\r\n", "e".repeat(size));
    let mut sent = 0;
    loop {
        match deaf.write_all(frame.as_bytes()) {
            Ok(()) => sent += size,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!(
                    "the server stopped reading a client that does not read, after {sent} bytes"
                ));
            }
            Err(_) => break,
        }
        if sent > NORMAL_LIMIT + 2 * SOCKET_SLACK {
            return Err(format!("{sent} bytes of replies pending for a client that never reads"));
        }
    }
    pong(addr, "after closing a client that does not read")
}

fn pong(addr: SocketAddr, when: &str) -> Result<(), String> {
    let mut c = connect(addr).map_err(|e| format!("connect: {e}"))?;
    match ask(&mut c, b"PING\r\n").as_str() {
        "+PONG" => Ok(()),
        other => Err(format!("PING {when} answered {other:?}")),
    }
}

/// The target: `input` whole and split, idle and (one in four) busy; one
/// in sixteen also checks the query-buffer limit, one in thirty-two each
/// the pub/sub and the normal output limits (all set low once, at the
/// server's start).
pub fn check(input: &[u8]) -> Result<(), String> {
    let addr = server().local_addr();
    same_split_and_whole(addr, input, "idle")?;
    let pick = input
        .iter()
        .fold(input.len(), |h, &b| h.wrapping_mul(31).wrapping_add(usize::from(b)));
    if pick % 4 == 0 {
        let script = go_busy(addr)?;
        let busy = same_split_and_whole(addr, input, "while a script is busy");
        kill(addr, script)?;
        busy?;
    }
    if pick % 16 == 1 {
        query_limit_holds(addr, input, pick)?;
    }
    if pick % 32 == 2 {
        pubsub_limit_holds(addr, pick)?;
    }
    if pick % 32 == 3 {
        normal_limit_holds(addr, pick)?;
    }
    Ok(())
}

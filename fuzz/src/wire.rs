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
//! A run with no reply for [`REPLY_TIMEOUT`] is a hang, reported as a
//! finding. The generator's commands are `SET`, `GET`, inline lines and
//! noise: their replies depend only on the keyspace, which `FLUSHALL` resets.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use locklab_backend::sim_server::{self, Config, Server};
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
        let mut cfg = Config::new(Ipv4Addr::LOCALHOST.into(), 0, Profile::V7_0);
        // Only SCRIPT KILL ends the busy script, however slow the machine.
        cfg.script_work_limit = u64::MAX;
        let server = sim_server::spawn(cfg).expect("the fuzzer's sim-server starts");
        let mut c = connect(server.local_addr()).expect("connect");
        let set = b"*4\r\n$6\r\nCONFIG\r\n$3\r\nSET\r\n$20\r\nbusy-reply-threshold\r\n$2\r\n10\r\n";
        assert_eq!(ask(&mut c, set), "+OK");
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

/// The target: `input` whole and split, idle and (one in four) busy.
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
    Ok(())
}

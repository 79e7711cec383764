//! The lab's fenced resource for `locklab check`: a line protocol on a
//! loopback socket (`W client key fence data`), which accepts a write or
//! refuses it (a fence below the highest seen, when fencing is on), and
//! records what it accepted so the history shows what the resource saw,
//! not what a client believed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::check_run::{io, mono_ns, RunError, POLL};

/// One write the resource accepted.
#[derive(Clone, Debug)]
pub(super) struct Accepted {
    pub(super) client: String,
    pub(super) key: String,
    pub(super) fence: Option<i64>,
    pub(super) value: String,
    pub(super) at_ms: u64,
}

#[derive(Default)]
pub(super) struct Store {
    pub(super) fenced: bool,
    pub(super) highest: Option<i64>,
    pub(super) accepted: Vec<Accepted>,
    pub(super) refused: usize,
}

/// At most this many accepted writes are recorded; past it, writes are refused ("NO full").
const MAX_WRITES: usize = 1_000_000;
/// Connections served at once (each client needs one); more are told so and closed.
const MAX_CONNECTIONS: usize = 256;
/// A request line longer than this closes its connection.
const MAX_REQUEST: u64 = 4096;

/// The lab's resource: a fenced store on a loopback socket. Dropped, it
/// stops accepting; each connection's thread ends when its client closes.
pub(super) struct Resource {
    pub(super) addr: String,
    pub(super) store: Arc<Mutex<Store>>,
    pub(super) stop: Arc<AtomicBool>,
}

impl Resource {
    pub(super) fn start(fenced: bool, t0: u64) -> Result<Resource, RunError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io("bind the resource"))?;
        listener.set_nonblocking(true).map_err(io("the resource's socket"))?;
        let addr = listener.local_addr().map_err(io("the resource's address"))?.to_string();
        let store = Arc::new(Mutex::new(Store {
            fenced,
            ..Store::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopped) = (Arc::clone(&store), Arc::clone(&stop));
        let open = Arc::new(AtomicUsize::new(0));
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut conn, _)) if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS => {
                        let _ = conn.write_all(b"NO too many connections\n");
                    }
                    Ok((conn, _)) if conn.set_nonblocking(false).is_ok() => {
                        let (store, open) = (Arc::clone(&shared), Arc::clone(&open));
                        open.fetch_add(1, Ordering::Relaxed);
                        std::thread::spawn(move || {
                            serve(conn, &store, t0);
                            open.fetch_sub(1, Ordering::Relaxed);
                        });
                    }
                    _ => std::thread::sleep(POLL),
                }
            }
        });
        Ok(Resource { addr, store, stop })
    }
}

impl Drop for Resource {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One client's connection: `W client key fence data` per line.
fn serve(conn: TcpStream, store: &Mutex<Store>, t0: u64) {
    let Ok(mut out) = conn.try_clone() else { return };
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    loop {
        line.clear();
        match (&mut reader).take(MAX_REQUEST).read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if !line.ends_with('\n') => return,
            Ok(_) => {}
        }
        let at_ms = mono_ns().saturating_sub(t0) / 1_000_000;
        let reply = decide(store, line.trim_end(), at_ms);
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Decide one write, and record it if accepted.
fn decide(store: &Mutex<Store>, line: &str, at_ms: u64) -> String {
    let parts: Vec<&str> = line.splitn(5, ' ').collect();
    let [verb, client, key, fence, value] = parts[..] else {
        return "NO malformed\n".to_owned();
    };
    let fence = match fence {
        "-" => None,
        f => match f.parse::<i64>() {
            Ok(f) => Some(f),
            Err(_) => return "NO malformed fence\n".to_owned(),
        },
    };
    if verb != "W" {
        return "NO unknown request\n".to_owned();
    }
    let mut s = store.lock().unwrap_or_else(PoisonError::into_inner);
    if s.accepted.len() >= MAX_WRITES {
        s.refused += 1;
        return "NO full\n".to_owned();
    }
    if s.fenced {
        match (fence, s.highest) {
            (None, _) => {
                s.refused += 1;
                return "NO no fence\n".to_owned();
            }
            (Some(f), Some(h)) if f < h => {
                s.refused += 1;
                return format!("NO stale fence {f} < {h}\n");
            }
            (Some(f), _) => s.highest = Some(f),
        }
    }
    s.accepted.push(Accepted {
        client: client.to_owned(),
        key: key.to_owned(),
        fence,
        value: value.to_owned(),
        at_ms,
    });
    format!("OK {}\n", s.accepted.len())
}

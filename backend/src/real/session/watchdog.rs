//! A session's script that runs past its budget is killed.
//!
//! The [pre-flight](super::preflight) stops what the simulator can see
//! coming; this is the backstop for a script that runs longer on Redis
//! than on the simulator. Each command that runs Lua is sent with a
//! watchdog: a thread that waits for the command's reply for the budget
//! ([`SessionLimits::script_budget`](super::SessionLimits), 1 s by default) and, if none
//! came, asks the server with `FUNCTION STATS` what script is running. A
//! function is killed (`FUNCTION KILL`) only when its command is the one
//! this session sent (its argv, namespaced names and prefixed keys and
//! all). For an `EVAL` redis-server 7.0 says nothing but BUSY; the session's
//! script has then been in flight for the whole budget on a server that was
//! idle when it was sent, so the running script is taken to be the
//! session's and killed with `SCRIPT KILL`. Kills go through an admin
//! connection, never the session user, whose ACL has no such right.
//!
//! redis-server answers nobody while a script runs until its
//! `busy-reply-threshold` (`lua-time-limit`, 5 s by default) has passed;
//! only then does it serve `FUNCTION STATS` and the kill commands. So on a
//! server with the default setting a runaway is killed after about 5 s,
//! whatever the budget; the managed servers the lab starts use a threshold
//! equal to the budget. The lab never changes a user's server configuration.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use locklab_core::reply::Reply;

use super::link::Link;
use crate::real::conn::RealConnection;

/// The watchdog of one command: drop it (or call [`Watchdog::done`]) when
/// the reply is in.
#[derive(Debug)]
pub(super) struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    killed: Arc<AtomicBool>,
}

impl Watchdog {
    /// Watch `sent` (the argvs as sent: one command, or a transaction's
    /// queued ones) for `budget`, asking through `killer`: an admin
    /// connection opened *before* the script was sent, because a server
    /// busy with a script accepts no new connection until its busy
    /// threshold has passed. `admin_url` reopens it if it broke.
    pub(super) fn start(killer: Killer, admin_url: String, sent: Vec<Vec<Vec<u8>>>, budget: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let killed = Arc::new(AtomicBool::new(false));
        let flag = killed.clone();
        let spawned = thread::Builder::new()
            .name("locklab-script-watchdog".into())
            .spawn(move || {
                if !matches!(rx.recv_timeout(budget), Err(mpsc::RecvTimeoutError::Timeout)) {
                    return;
                }
                // Over budget. Keep asking until the reply is in (the server
                // answers only after its busy threshold) or the kill landed.
                let mut admin = killer.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    let stats = match admin.execute(&[b"FUNCTION".to_vec(), b"STATS".to_vec()]) {
                        Ok(stats) => stats,
                        Err(_) => {
                            // A broken connection: a fresh one for next time.
                            if let Ok(fresh) = open_killer(&admin_url) {
                                *admin = fresh;
                            }
                            return;
                        }
                    };
                    if rx.try_recv() != Err(mpsc::TryRecvError::Empty) {
                        return;
                    }
                    let kill = kill_for(&stats, &sent);
                    if let Some(kill) = kill {
                        flag.store(true, Ordering::SeqCst);
                        // NOTBUSY (it just ended) or UNKILLABLE (it wrote):
                        // nothing more the lab can do without SHUTDOWN.
                        let _ = admin.execute(&[kill.to_vec(), b"KILL".to_vec()]);
                        return;
                    }
                    // Somebody else's function, or nothing: ours has not
                    // started yet or already ended. Look again shortly.
                    if !matches!(
                        rx.recv_timeout(Duration::from_millis(100)),
                        Err(mpsc::RecvTimeoutError::Timeout)
                    ) {
                        return;
                    }
                }
            });
        if spawned.is_err() {
            // No thread: no watchdog, as before; the reply timeout still
            // bounds how long the session waits.
        }
        Watchdog { done: Some(tx), killed }
    }

    /// The reply is in: stop watching. Whether the watchdog killed it.
    pub(super) fn done(mut self) -> bool {
        self.done.take();
        self.killed.load(Ordering::SeqCst)
    }
}

/// The admin connection a session's watchdogs ask and kill through, one
/// per node, opened before the first script goes to it.
pub(super) type Killer = Arc<Mutex<RealConnection>>;

/// Open a [`Killer`] connection.
pub(super) fn open_killer(admin_url: &str) -> Result<RealConnection, crate::real::conn::RealError> {
    let conn = RealConnection::open(admin_url)?;
    // Long enough to outwait a busy threshold raised well above the default.
    conn.set_read_timeout(Some(KILLER_TIMEOUT))?;
    Ok(conn)
}

/// Whether (and with which command: `SCRIPT` or `FUNCTION`, then `KILL`)
/// to kill what `FUNCTION STATS` answered `stats` about, the session's
/// command(s) in flight being `sent`.
fn kill_for(stats: &Reply, sent: &[Vec<Vec<u8>>]) -> Option<&'static [u8]> {
    match running_command(stats) {
        // A function: `FUNCTION STATS` names its command, so only the
        // session's own is killed.
        Running::Function(cmd) if sent.contains(&cmd) => Some(b"FUNCTION"),
        // An EVAL: redis-server 7.0 does not say whose (`FUNCTION STATS`
        // answers BUSY while one runs). The session's own script has been
        // in flight for the whole budget and the server was idle when it
        // was sent (the pre-flight's snapshot, or a PING, was just
        // answered), so the script running now is the session's.
        Running::Eval if sent.iter().any(|argv| is_eval(argv)) => Some(b"SCRIPT"),
        _ => None,
    }
}

/// The async lane's watchdog, for a command whose reply is still out after
/// the budget: the same questions and kills as the thread of
/// [`Watchdog::start`], through the session's async admin link `admin`
/// (opened, and seen to answer, before the script was sent). Returns when
/// it killed (and sets `killed`) or gave up; the caller keeps waiting for
/// the reply meanwhile and drops this future when the reply comes.
pub(super) async fn watch_async(admin: &mut Link, sent: &[Vec<Vec<u8>>], killed: &AtomicBool) {
    let stats_argv = [b"FUNCTION".to_vec(), b"STATS".to_vec()];
    loop {
        // The server answers only after its busy threshold.
        let stats = match admin.send(&[&stats_argv]).await {
            Ok(()) => admin.read_within(false, Some(KILLER_TIMEOUT)).await,
            Err(e) => Err(e),
        };
        let Ok(stats) = stats else { return };
        if let Some(kill) = kill_for(&stats, sent) {
            killed.store(true, Ordering::SeqCst);
            // NOTBUSY (it just ended) or UNKILLABLE (it wrote): nothing
            // more the lab can do without SHUTDOWN.
            let _ = admin.execute(&[kill.to_vec(), b"KILL".to_vec()]).await;
            return;
        }
        // Somebody else's function, or nothing: ours has not started yet
        // or already ended. Look again shortly.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How long a killer waits for the server's answer: long enough to
/// outwait a busy threshold raised well above the default.
const KILLER_TIMEOUT: Duration = Duration::from_secs(60);

/// What `FUNCTION STATS` says is running.
#[derive(Debug, PartialEq, Eq)]
enum Running {
    Nothing,
    /// A function, with the command that called it.
    Function(Vec<Vec<u8>>),
    /// An `EVAL` script (redis-server 7.0 answers `FUNCTION STATS` with
    /// BUSY while one runs).
    Eval,
}

/// Read a `FUNCTION STATS` reply.
fn running_command(stats: &Reply) -> Running {
    let Reply::Array(top) = stats else {
        return match stats {
            Reply::Error(e) if e.starts_with("BUSY") => Running::Eval,
            _ => Running::Nothing,
        };
    };
    let Some(Reply::Array(running)) = field(top, b"running_script") else {
        return Running::Nothing;
    };
    let Some(Reply::Array(argv)) = field(running, b"command") else {
        return Running::Nothing;
    };
    Running::Function(
        argv.iter()
            .filter_map(|a| if let Reply::Bulk(b) = a { Some(b.clone()) } else { None })
            .collect(),
    )
}

/// The value after `name` in a flat name/value array (RESP2's map, as
/// `FUNCTION STATS` answers).
fn field<'a>(items: &'a [Reply], name: &[u8]) -> Option<&'a Reply> {
    let pos = items.iter().position(|r| matches!(r, Reply::Bulk(b) if b == name))?;
    items.get(pos + 1)
}

/// Is `argv` an `EVAL` family command (killed with `SCRIPT KILL`)?
fn is_eval(argv: &[Vec<u8>]) -> bool {
    argv.first()
        .is_some_and(|n| n.to_ascii_lowercase().starts_with(b"eval"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_running_command() {
        let b = |s: &str| Reply::Bulk(s.as_bytes().to_vec());
        let stats = Reply::Array(vec![
            b("running_script"),
            Reply::Array(vec![
                b("name"),
                b("f_1234"),
                b("command"),
                Reply::Array(vec![b("FCALL"), b("spin"), b("0")]),
                b("duration_ms"),
                Reply::Integer(5001),
            ]),
            b("engines"),
            Reply::Array(vec![]),
        ]);
        assert_eq!(
            running_command(&stats),
            Running::Function(vec![b"FCALL".to_vec(), b"spin".to_vec(), b"0".to_vec()])
        );
        let idle = Reply::Array(vec![
            b("running_script"),
            Reply::Nil,
            b("engines"),
            Reply::Array(vec![]),
        ]);
        assert_eq!(running_command(&idle), Running::Nothing);
        let eval = Reply::Error(
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.".into(),
        );
        assert_eq!(running_command(&eval), Running::Eval);
    }
}

//! A session's script that runs past its budget is killed.
//!
//! The [pre-flight](super::preflight) stops what the simulator can see
//! coming; this is the backstop for a script that runs longer on Redis
//! than on the simulator. Each command that runs Lua is sent with a
//! watchdog: a thread that waits for the command's reply for the budget
//! ([`Limits::script_budget`](super::Limits), 1 s by default) and, if none
//! came, asks the server with `FUNCTION STATS` what script is running. Only
//! when that script's command is the one this session sent (its argv is
//! the session's, prefixed keys and all) does it send `SCRIPT KILL` or
//! `FUNCTION KILL` — never to another client's script, and never from the
//! session user, whose ACL has no such right.
//!
//! redis-server answers nobody while a script runs until its
//! `busy-reply-threshold` (`lua-time-limit`, 5 s by default) has passed;
//! only then does it serve `FUNCTION STATS` and the kill commands. So on a
//! server with the default setting a runaway is killed after about 5 s,
//! whatever the budget; the managed servers the lab starts use a threshold
//! equal to the budget. The lab never changes a user's server configuration.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use locklab_core::reply::Reply;

use crate::real::RealConnection;

/// The watchdog of one command: drop it (or call [`Watchdog::done`]) when
/// the reply is in.
#[derive(Debug)]
pub(super) struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    killed: Arc<AtomicBool>,
}

impl Watchdog {
    /// Watch `sent` (the argvs as sent: one command, or a transaction's
    /// queued ones) on the server at `admin_url` for `budget`.
    pub(super) fn start(admin_url: String, sent: Vec<Vec<Vec<u8>>>, budget: Duration) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let killed = Arc::new(AtomicBool::new(false));
        let flag = killed.clone();
        let spawned = thread::Builder::new().name("locklab-script-watchdog".into()).spawn(move || {
            if !matches!(rx.recv_timeout(budget), Err(mpsc::RecvTimeoutError::Timeout)) {
                return;
            }
            // Over budget. Keep asking until the reply is in (the server
            // answers only after its busy threshold) or the kill landed.
            let Ok(mut admin) = RealConnection::open(&admin_url) else { return };
            let _ = admin.set_read_timeout(Some(Duration::from_secs(30)));
            loop {
                let Ok(stats) = admin.execute(&[b"FUNCTION".to_vec(), b"STATS".to_vec()]) else { return };
                if rx.try_recv() != Err(mpsc::TryRecvError::Empty) {
                    return;
                }
                match running_command(&stats) {
                    Some(cmd) if sent.contains(&cmd) => {
                        let fcall = cmd.first().is_some_and(|n| n.to_ascii_lowercase().starts_with(b"fcall"));
                        let kill: &[u8] = if fcall { b"FUNCTION" } else { b"SCRIPT" };
                        flag.store(true, Ordering::SeqCst);
                        // NOTBUSY (it just ended) or UNKILLABLE (it wrote):
                        // nothing more the lab can do without SHUTDOWN.
                        let _ = admin.execute(&[kill.to_vec(), b"KILL".to_vec()]);
                        return;
                    }
                    // Somebody else's script, or none: ours has not started
                    // yet or already ended. Look again shortly.
                    _ => {}
                }
                if !matches!(rx.recv_timeout(Duration::from_millis(100)), Err(mpsc::RecvTimeoutError::Timeout)) {
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

/// The argv of the script `FUNCTION STATS` says is running, if any.
fn running_command(stats: &Reply) -> Option<Vec<Vec<u8>>> {
    let Reply::Array(top) = stats else { return None };
    let pos = top.iter().position(|r| matches!(r, Reply::Bulk(b) if b == b"running_script"))?;
    let Some(Reply::Array(running)) = top.get(pos + 1) else { return None };
    let cpos = running.iter().position(|r| matches!(r, Reply::Bulk(b) if b == b"command"))?;
    let Some(Reply::Array(argv)) = running.get(cpos + 1) else { return None };
    Some(argv.iter().filter_map(|a| if let Reply::Bulk(b) = a { Some(b.clone()) } else { None }).collect())
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
                Reply::Array(vec![b("EVAL"), b("while true do end"), b("0")]),
                b("duration_ms"),
                Reply::Integer(5001),
            ]),
            b("engines"),
            Reply::Array(vec![]),
        ]);
        assert_eq!(
            running_command(&stats),
            Some(vec![b"EVAL".to_vec(), b"while true do end".to_vec(), b"0".to_vec()])
        );
        let idle = Reply::Array(vec![b("running_script"), Reply::Nil, b("engines"), Reply::Array(vec![])]);
        assert_eq!(running_command(&idle), None);
    }
}

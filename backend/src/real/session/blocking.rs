//! The blocking lane ([`Session::run`]): a command on a client's own
//! blocking connection, through the same stages as the async lane in
//! `fast.rs` (`phases.rs`), with the pre-flight, the script watchdog and the
//! administrative commands done on blocking connections too. The lesson
//! runner, the CLI and a session on its own cluster use it.

use std::time::Instant;

use locklab_core::cli;
use locklab_core::reply::Reply;

use super::phases::{Before, Loaded, Outcome, Prepared};
use super::preflight::Verdict;
use super::watchdog::{Killer, Watchdog};
use super::{phases, watchdog, Session, SessionError};
use crate::real::conn::RealError;
use crate::real::stages::Stage;

impl Session {
    /// Run one redis-cli line as `client` on node `node`.
    pub fn run_line(&mut self, client: &str, node: u32, line: &str) -> Result<Reply, SessionError> {
        if line.len() > self.sandbox.limits.max_line {
            let e = SessionError::TooLarge {
                what: "the line",
                got: line.len(),
                limit: self.sandbox.limits.max_line,
            };
            self.note(client, &e);
            return Err(e);
        }
        let t = Instant::now();
        let argv = cli::parse(line);
        self.stage(Stage::Parse, t);
        let argv = match argv {
            Ok(a) if a.is_empty() => return Err(SessionError::Empty),
            Ok(a) => a,
            Err(_) => {
                self.note(client, &SessionError::BadLine);
                return Err(SessionError::BadLine);
            }
        };
        self.run(client, node, &argv)
    }

    /// Run one argv as `client` on node `node`: check it, rewrite its keys,
    /// send it, and record the trace. A server error reply is `Ok` (it is
    /// Redis's answer); `Err` is the session refusing or failing.
    ///
    /// On the session's own cluster, a command with keys goes to the node
    /// that serves their slot whatever `node` says (a note records the
    /// routing), and a `MOVED` or `ASK` reply is followed, as `redis-cli -c`
    /// follows it: the redirect is in the trace, the reply is the final one.
    pub fn run(&mut self, client: &str, node: u32, argv: &[Vec<u8>]) -> Result<Reply, SessionError> {
        self.run_routed(client, node, argv).map(|(_, reply)| reply)
    }

    /// The blocking lane: one command, checked, judged, sent and booked
    /// by the stages in [`phases`], on blocking connections.
    pub(super) fn run_inner(&mut self, c: u32, node: u32, argv: &[Vec<u8>]) -> Result<Reply, SessionError> {
        let n = node as usize;
        let t = Instant::now();
        let before = self.prepare(c, node, argv);
        self.stage(Stage::Checks, t);
        let prep = match before? {
            Before::Answer(reply) => return Ok(reply),
            Before::Send(p) => p,
        };
        let t = Instant::now();
        if let Some(reply) = self.preflight_blocking(c, n, &prep)? {
            return Ok(reply);
        }
        if let Some(wait) = self.take_token()? {
            // Backpressure: the token will be there after `wait`.
            std::thread::sleep(wait);
        }
        self.stage(Stage::Checks, t);
        if prep.simulate {
            let sent_at = self.now_ms();
            let reply = self.simulate_blocking(c, n, argv, &prep)?;
            let t = Instant::now();
            let reply = self.finish_simulated((c, node), argv, &prep, (sent_at, reply));
            self.stage(Stage::Trace, t);
            return reply;
        }
        let t = Instant::now();
        let begun = self.begin(c, node, argv);
        self.stage(Stage::Trace, t);
        let t = Instant::now();
        let watchdog = self.watchdog(n, &prep)?;
        let reply = if prep.scan {
            // The session's SCAN: the ACL user may not SCAN (its results
            // are not confined by key patterns), so the admin connection
            // runs it, confined by MATCH to the session's prefix.
            self.admin_execute(n, &prep.rewritten)
        } else {
            let queued = self.queued_for_exec(&prep);
            self.conn(c, n).and_then(|conn| {
                let first = conn.execute(&prep.rewritten)?;
                conn.read_rest(&prep.rewritten, &queued, first)
            })
        };
        let killed = watchdog.is_some_and(Watchdog::done);
        let loaded = match self.loaded_library(argv, &reply) {
            Some(lib) => self.check_loaded_blocking(n, &lib),
            None => Ok(()),
        };
        self.stage(Stage::Send, t);
        let outcome = Outcome {
            reply,
            killed,
            loaded,
            dropped: Default::default(),
        };
        let t = Instant::now();
        let reply = self.finish((c, node), argv, &prep, begun, outcome);
        self.stage(Stage::Trace, t);
        reply
    }

    /// `argv` on node `n`'s admin connection (made, with the ACL user, if
    /// need be).
    pub(super) fn admin_execute(&mut self, n: usize, argv: &[Vec<u8>]) -> Result<Reply, RealError> {
        self.ensure_user(n)
            .map_err(|e| match e {
                SessionError::Unreachable { source, .. } => source,
                other => RealError::Unsupported(other.to_string()),
            })
            .and_then(|()| self.nodes[n].admin.as_mut().ok_or(RealError::EmptyCommand))
            .and_then(|admin| admin.execute(argv))
    }

    /// The pre-flight of a command that runs Lua, on blocking connections:
    /// `Some(reply)` when the simulator's answer is the reply; `Err` when
    /// the script is refused (a refused `EXEC` discards its transaction).
    pub(super) fn preflight_blocking(
        &mut self,
        c: u32,
        n: usize,
        prep: &Prepared,
    ) -> Result<Option<Reply>, SessionError> {
        let Some((batch, _)) = prep.checked.as_ref().filter(|_| prep.preflight) else {
            return Ok(None);
        };
        let verdict = match (self.verdict_unread(prep), self.snapshot_request()) {
            (Some(verdict), _) => verdict,
            (None, Err(why)) => Verdict::Refuse(why),
            (None, Ok(None)) => self.judge(&[], None, batch),
            (None, Ok(Some((keys, argv)))) => {
                self.ensure_user(n)?;
                let read = self.nodes[n]
                    .admin
                    .as_mut()
                    .ok_or(RealError::EmptyCommand)
                    .and_then(|a| a.execute(&argv));
                match read {
                    Ok(reply) => self.judge(&keys, Some(&reply), batch),
                    Err(source) => {
                        self.nodes[n].admin = None;
                        self.nodes[n].user_ready = false;
                        return Err(self.unreachable(n, source));
                    }
                }
            }
        };
        match verdict {
            Verdict::Send => Ok(None),
            Verdict::Answer(reply) => Ok(Some(reply)),
            Verdict::Refuse(why) => {
                if prep.is_exec {
                    // The transaction is over either way: discard it.
                    self.multi.remove(&prep.link);
                    let _ = self.conn(c, n).and_then(|conn| conn.execute(&[b"DISCARD".to_vec()]));
                }
                Err(SessionError::ScriptRefused(why))
            }
        }
    }

    /// [`Session::loaded_library`]'s check on the blocking admin
    /// connection.
    pub(super) fn check_loaded_blocking(&mut self, n: usize, lib: &[u8]) -> Result<(), SessionError> {
        let Some(admin) = self.nodes[n].admin.as_mut() else {
            return Err(SessionError::NoNode(n as u32));
        };
        let list = admin.execute(&phases::function_list(lib));
        match self.judge_loaded(lib, list.as_ref().ok()) {
            Loaded::Fine => Ok(()),
            Loaded::Delete => {
                if let Some(admin) = self.nodes[n].admin.as_mut() {
                    let _ = admin.execute(&phases::function_delete(lib));
                }
                Err(phases::library_refused())
            }
            Loaded::Refuse => Err(phases::library_refused()),
        }
    }

    /// A watchdog for a checked script about to go out on node `n` (none
    /// for anything else): it kills the script if it outruns the budget.
    pub(super) fn watchdog(&mut self, n: usize, prep: &Prepared) -> Result<Option<Watchdog>, SessionError> {
        let Some((_, sent)) = &prep.checked else {
            return Ok(None);
        };
        let url = self.nodes[n].target.url.clone();
        let killer = self.killer(n).map_err(|source| self.unreachable(n, source))?;
        Ok(Some(Watchdog::start(
            killer,
            url,
            sent.clone(),
            self.sandbox.limits.script_budget,
        )))
    }

    /// Node `n`'s connection for script watchdogs, opened now if needed,
    /// and seen to answer `PING`: the server runs no script right before
    /// the session's goes out, which is what lets the watchdog take a
    /// running `EVAL` for the session's own.
    pub(super) fn killer(&mut self, n: usize) -> Result<Killer, RealError> {
        let ping = [b"PING".to_vec()];
        if let Some(k) = self.killers.get(&n) {
            let mut conn = k.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(conn.execute(&ping), Ok(Reply::Status(_))) {
                return Ok(k.clone());
            }
            *conn = watchdog::open_killer(&self.nodes[n].target.url)?;
            drop(conn);
            return Ok(k.clone());
        }
        let mut conn = watchdog::open_killer(&self.nodes[n].target.url)?;
        conn.execute(&ping)?;
        let k: Killer = std::sync::Arc::new(std::sync::Mutex::new(conn));
        self.killers.insert(n, k.clone());
        Ok(k)
    }
}

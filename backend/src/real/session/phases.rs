//! The stages every command of a session goes through, apart from its I/O.
//!
//! A command is checked and rewritten ([`Session::prepare`]), its scripts
//! are judged on the simulator from a snapshot of the session's keys
//! ([`Session::snapshot_request`], [`Session::judge`]), it takes a token
//! from the rate limit ([`Session::take_token`]), goes on the trace as
//! `Sent` ([`Session::begin`]), and once Redis answered (or did not) its
//! reply is booked, shown unprefixed and traced ([`Session::finish`]). The
//! blocking lane ([`Session::run`], for the lesson runner and the CLI) and
//! the async lane ([`Session::run_async`](super::Session::run_async), for
//! the WebSocket) differ only in how they talk to the server between those
//! stages, so the sandbox's rules exist once.

use std::time::Duration;

use locklab_core::actor::Actor;
use locklab_core::reply::Reply;
use locklab_core::trace::{EventKind, LossReason};

use super::link::Dropped;
use super::preflight::{self, Verdict};
use super::{Argv, Confinement, Rewritten, Scripts, Session, SessionError};
use crate::real::conn::RealError;

/// The keys a pre-flight copies (as typed) and the `EVAL` that reads them.
pub(super) type Snapshot = (Vec<Vec<u8>>, Argv);

/// A command that passed the checks and goes to Redis.
#[derive(Debug)]
pub(super) struct Prepared {
    /// The argv as sent: keys prefixed, names namespaced.
    pub(super) rewritten: Argv,
    /// The (client, node) link it goes on.
    pub(super) link: (u32, u32),
    pub(super) is_exec: bool,
    /// When it runs Lua: the batch as typed (for the simulator) and as sent
    /// (for the watchdog). A transaction's `EXEC` brings its whole queue.
    pub(super) checked: Option<(Vec<Argv>, Vec<Argv>)>,
    /// Whether the simulator must judge `checked` first (not on the
    /// session's own cluster: nobody else to protect there, and a copy of
    /// keys in several slots cannot be read in one script).
    pub(super) preflight: bool,
    /// `SCAN`, which the admin connection runs for the session.
    pub(super) scan: bool,
    /// A script that runs on the simulator, only its writes sent
    /// ([`Scripts::Simulated`], [`effects`](super::effects)): not sent
    /// itself, and neither pre-flighted nor watched.
    pub(super) simulate: bool,
}

/// What [`Session::prepare`] decided.
#[derive(Debug)]
pub(super) enum Before {
    /// Answered without Redis (metadata Redis refuses: the simulator's
    /// answer is Redis's).
    Answer(Reply),
    Send(Prepared),
}

/// A command on the wire: its request number, when it left, how the trace
/// shows it.
#[derive(Debug)]
pub(super) struct Begun {
    req: u64,
    sent_at: u64,
    shown: Vec<Vec<String>>,
}

/// What came back for a command.
#[derive(Debug)]
pub(super) struct Outcome {
    pub(super) reply: Result<Reply, RealError>,
    /// The watchdog killed its script.
    pub(super) killed: bool,
    /// The check of a `FUNCTION LOAD`'s library (see
    /// [`Session::loaded_library`]).
    pub(super) loaded: Result<(), SessionError>,
    /// What of the reply the link read and dropped (past its cap).
    pub(super) dropped: Dropped,
}

/// What a `FUNCTION LIST` of a just-loaded library says should happen.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Loaded {
    Fine,
    /// Refuse it, and delete it (it is in the session's namespace).
    Delete,
    /// Refuse it (not the session's to delete).
    Refuse,
}

impl Session {
    /// Check and rewrite `argv` for client `c` on node `node`, and find
    /// the batch the simulator must see first.
    pub(super) fn prepare(&mut self, c: u32, node: u32, argv: &[Vec<u8>]) -> Result<Before, SessionError> {
        // Every command of either lane comes through here once.
        self.stages.0.commands += 1;
        if node as usize >= self.nodes.len() {
            return Err(SessionError::NoNode(node));
        }
        let link = (c, node);
        let rewritten = match self.sandbox.check_and_rewrite(argv)? {
            Rewritten::Send(r, checked) => {
                // The quota, charged before anything is sent.
                self.quota.charge(&self.sandbox.limits, checked, argv)?;
                r
            }
            Rewritten::Answer => return Ok(Before::Answer(self.preflight.answer(argv))),
        };
        if let Some(reply) = self.script_cache(link, argv)? {
            return Ok(Before::Answer(reply));
        }
        // Lua runs on the simulator first: alone, or a transaction whole.
        let is_exec = argv[0].eq_ignore_ascii_case(b"exec");
        let simulated = self.scripts == Scripts::Simulated;
        // On a server the lab does not own a script runs on the simulator
        // (FUNCTION LOAD is pre-flighted and sent: a library's load runs no
        // command, and Redis stops it after 500 ms itself).
        let simulate = simulated && !self.multi.contains_key(&link) && runs_script(argv);
        let checked = match self.multi.get(&link) {
            _ if simulate => None,
            None if self.preflight.needs_check(argv) => Some((vec![argv.to_vec()], vec![rewritten.clone()])),
            Some(q) if is_exec && q.iter().any(|(user, _)| self.preflight.needs_check(user)) => {
                Some(q.iter().cloned().unzip())
            }
            _ => None,
        };
        let own = self.sandbox.confinement == Confinement::OwnCluster;
        Ok(Before::Send(Prepared {
            rewritten,
            link,
            is_exec,
            preflight: checked.is_some() && !own,
            checked,
            scan: argv[0].eq_ignore_ascii_case(b"scan"),
            simulate,
        }))
    }

    /// `SCRIPT LOAD`, `EXISTS` and `FLUSH` (allowed by the table) where the
    /// session's scripts are kept. On a server the lab does not own, by
    /// default ([`Scripts::Simulated`]) every script of the session runs on
    /// the lab's simulator, so the script cache a session sees is the
    /// simulator's: these three are answered there and never sent. Redis's
    /// cache then holds no script of the session's, a session cannot learn
    /// which scripts the owner has cached, `EXISTS` says 1 for a script the
    /// session loaded or ran, and `FLUSH` empties the session's scripts
    /// only (and their count in the quota). Queued in `MULTI` they would
    /// reach Redis, so there they are refused. Under `--scripts=run` on
    /// such a server scripts run on Redis and its cache is the server's:
    /// `SCRIPT FLUSH` would empty the owner's scripts too, so it is
    /// refused. On the lab's own servers a flush is sent, and the session's
    /// scripts no longer count. `Some(reply)`: the answer, nothing sent.
    fn script_cache(&mut self, link: (u32, u32), argv: &[Vec<u8>]) -> Result<Option<Reply>, SessionError> {
        let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
        if !is(0, "script") || !(is(1, "load") || is(1, "exists") || is(1, "flush")) {
            return Ok(None);
        }
        let flush = is(1, "flush");
        let name = format!("SCRIPT {}", String::from_utf8_lossy(&argv[1]).to_uppercase());
        match self.scripts {
            Scripts::Run if flush => Err(SessionError::NotAllowed {
                name,
                why: "under --scripts=run your Redis keeps the session's scripts in the cache every client shares, \
                      and a flush would empty your own scripts too",
            }),
            Scripts::Simulated if self.multi.contains_key(&link) => Err(SessionError::NotAllowed {
                name,
                why: "on a server the lab does not own the session's scripts are kept by the lab's simulator, so \
                      SCRIPT cannot be queued in MULTI",
            }),
            Scripts::Simulated => {
                let reply = self.preflight.answer(argv);
                if flush && !reply.is_error() {
                    self.quota.forget_scripts();
                }
                Ok(Some(reply))
            }
            Scripts::Run | Scripts::Managed => {
                if flush {
                    self.quota.forget_scripts();
                }
                Ok(None)
            }
        }
    }

    /// The pre-flight's verdict before any key is read: on a server the lab
    /// does not own, a transaction with a script in it is refused (its
    /// `EXEC` discards it). Its commands are queued on Redis already, and a
    /// script in it would run there; running the whole transaction on the
    /// simulator instead would end the `WATCH`es the user made on that
    /// link, so `EXEC` could no longer fail when it should.
    pub(super) fn verdict_unread(&self, prep: &Prepared) -> Option<Verdict> {
        (prep.is_exec && self.scripts == Scripts::Simulated).then(|| {
            Verdict::Refuse(
                "on a server the lab does not own, a script runs on the lab's simulator and only its writes are sent, \
                 so it cannot be queued in MULTI; the transaction was discarded: run the script on its own"
                    .into(),
            )
        })
    }

    /// The session's keys the pre-flight copies, and the `EVAL` that reads
    /// them (`None`: no keys, nothing to read). `Err`: the check cannot be
    /// made (too many keys), so the script is refused.
    ///
    /// On a server the lab does not own by default nothing is read: the
    /// only Lua pre-flighted there is `FUNCTION LOAD`, whose load runs no
    /// command (a transaction with a script is refused unread), and a copy
    /// of the session's keys through a script on the owner's server is
    /// what issue 35's B10 was.
    pub(super) fn snapshot_request(&self) -> Result<Option<Snapshot>, String> {
        if self.scripts == Scripts::Simulated {
            return Ok(None);
        }
        let keys = self.preflight.keys()?;
        if keys.is_empty() {
            return Ok(None);
        }
        let mut argv = vec![
            b"EVAL".to_vec(),
            preflight::SNAPSHOT_LUA.as_bytes().to_vec(),
            keys.len().to_string().into_bytes(),
        ];
        argv.extend(keys.iter().map(|k| [self.sandbox.prefix.as_bytes(), k].concat()));
        Ok(Some((keys, argv)))
    }

    /// Run `batch` (user view) on the simulator, on the copy of the keys
    /// `snapshot` read (`None`: the session has none).
    pub(super) fn judge(&mut self, keys: &[Vec<u8>], snapshot: Option<&Reply>, batch: &[Argv]) -> Verdict {
        let entries = match snapshot {
            None => Vec::new(),
            Some(reply) => match preflight::parse_snapshot(keys, reply) {
                Ok(s) => s,
                Err(why) => return Verdict::Refuse(why),
            },
        };
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.preflight.check(now_ms, &entries, batch)
    }

    /// A token from the rate limit: `Ok(None)` at once, `Ok(Some(wait))`
    /// once the caller has waited that long (backpressure), `Err` when the
    /// wait would be longer than the limits allow.
    pub(super) fn take_token(&mut self) -> Result<Option<Duration>, SessionError> {
        let l = &self.sandbox.limits;
        self.bucket
            .take(l.commands_per_sec, l.burst, l.max_wait)
            .ok_or(SessionError::RateLimited(l.commands_per_sec))
    }

    /// The command goes on the wire now: `Sent` on the client's lane.
    pub(super) fn begin(&mut self, c: u32, node: u32, argv: &[Vec<u8>]) -> Begun {
        let now = self.now_ms();
        self.begin_at(c, node, argv, now)
    }

    /// [`Session::begin`] for a request that went out at `sent_at` (session
    /// ms): a script run on the simulator is booked once its writes are
    /// applied, but its round trip started with the reads under `WATCH`.
    pub(super) fn begin_at(&mut self, c: u32, node: u32, argv: &[Vec<u8>], sent_at: u64) -> Begun {
        self.preflight.track(argv);
        let shown: Vec<Vec<String>> = vec![argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()];
        self.req += 1;
        let req = self.req;
        self.push(
            sent_at,
            Actor::Client(c),
            EventKind::Sent {
                req,
                node,
                commands: shown.clone(),
            },
        );
        Begun { req, sent_at, shown }
    }

    /// Book what came back: the reply as the user sees it, with `Executed`
    /// and `Received`; or, when the node did not answer, `Lost` and every
    /// connection to it forgotten (the socket is dead, or its server
    /// restarted and forgot the ACL user).
    pub(super) fn finish(
        &mut self,
        link: (u32, u32),
        argv: &[Vec<u8>],
        prep: &Prepared,
        begun: Begun,
        outcome: Outcome,
    ) -> Result<Reply, SessionError> {
        self.finish_at(link, argv, prep, begun, outcome, None)
    }

    /// [`Session::finish`] for a reply that came back at `back_at`
    /// (session ms) rather than now: a concurrent flight's, read on its
    /// own thread and booked when the session gets to it.
    pub(super) fn finish_at(
        &mut self,
        (c, node): (u32, u32),
        argv: &[Vec<u8>],
        prep: &Prepared,
        begun: Begun,
        outcome: Outcome,
        back_at: Option<u64>,
    ) -> Result<Reply, SessionError> {
        let Begun { req, sent_at, shown } = begun;
        let back_at = back_at.unwrap_or_else(|| self.now_ms()).max(sent_at);
        let mut reply = match outcome.reply {
            Ok(reply) => reply,
            Err(source) => {
                self.forget_conns(node);
                let lost = EventKind::Lost {
                    req,
                    client: c,
                    node,
                    reason: LossReason::NodeDown,
                };
                self.push(back_at, Actor::Client(c), lost);
                return Err(self.unreachable(node as usize, source));
            }
        };
        self.after_reply(prep, argv, &reply);
        if let Err(e) = outcome.loaded {
            reply = e.to_reply();
        }
        if outcome.killed {
            reply = SessionError::ScriptKilled {
                budget_ms: self.sandbox.limits.script_budget.as_millis() as u64,
                reply: self.sandbox.unscope_text(&reply.to_cli()),
            }
            .to_reply();
        }
        self.sandbox.unscope(argv, &mut reply, prep.scan);
        let max = self.sandbox.limits.max_reply_bytes;
        if let Some(note) = super::quota::cut_reply(&mut reply, max, outcome.dropped) {
            self.console_note(c, note);
        }
        let mid = sent_at + (back_at - sent_at) / 2;
        let executed = EventKind::Executed {
            req,
            client: c,
            commands: shown,
            replies: vec![reply.clone()],
        };
        self.push(mid, Actor::Node(node), executed);
        let received = EventKind::Received {
            req,
            node,
            replies: vec![reply.clone()],
        };
        self.push(back_at, Actor::Client(c), received);
        Ok(reply)
    }

    /// Forget every connection to node `node` after it failed to answer,
    /// in both lanes, and the transactions open on it.
    pub(super) fn forget_conns(&mut self, node: u32) {
        let n = node as usize;
        self.conns.retain(|&(_, nn), _| nn != node);
        self.links.retain(|&(_, nn), _| nn != node);
        self.multi.retain(|&(_, nn), _| nn != node);
        self.killers.remove(&n);
        self.nodes[n].admin = None;
        self.nodes[n].reader = None;
        self.nodes[n].user_ready = false;
    }

    /// After a `FUNCTION LOAD` Redis accepted: the library whose functions
    /// must be checked (every one in the session's namespace: the shim puts
    /// them there; a library that got around it is deleted again).
    pub(super) fn loaded_library(&self, argv: &[Vec<u8>], reply: &Result<Reply, RealError>) -> Option<Vec<u8>> {
        let is = |i: usize, w: &str| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()));
        let Ok(Reply::Bulk(lib)) = reply else { return None };
        (is(0, "function") && is(1, "load") && !self.sandbox.ns.is_empty()).then(|| lib.clone())
    }

    /// Judge `FUNCTION LIST LIBRARYNAME lib`'s answer (`None`: it failed).
    pub(super) fn judge_loaded(&self, lib: &[u8], list: Option<&Reply>) -> Loaded {
        let ns = self.sandbox.ns.as_bytes();
        let names = super::function_names(list);
        if lib.starts_with(ns) && !names.is_empty() && names.iter().all(|f| f.starts_with(ns)) {
            Loaded::Fine
        } else if lib.starts_with(ns) {
            Loaded::Delete
        } else {
            Loaded::Refuse
        }
    }
}

/// Does `argv` run a script (`EVAL`, `EVALSHA`, their `_RO` forms, `FCALL`,
/// `FCALL_RO`)? What [`Scripts::Simulated`] runs on the simulator.
pub(super) fn runs_script(argv: &[Vec<u8>]) -> bool {
    preflight::runs_lua(argv) && !argv[0].eq_ignore_ascii_case(b"function")
}

/// The refusal of a library that registered a function outside the
/// session's namespace.
pub(super) fn library_refused() -> SessionError {
    SessionError::ScriptRefused(
        "a library of a lab session must register its functions with redis.register_function; it was deleted again"
            .into(),
    )
}

/// `FUNCTION LIST LIBRARYNAME lib` and `FUNCTION DELETE lib`.
pub(super) fn function_list(lib: &[u8]) -> Argv {
    vec![
        b"FUNCTION".to_vec(),
        b"LIST".to_vec(),
        b"LIBRARYNAME".to_vec(),
        lib.to_vec(),
    ]
}

pub(super) fn function_delete(lib: &[u8]) -> Argv {
    vec![b"FUNCTION".to_vec(), b"DELETE".to_vec(), lib.to_vec()]
}

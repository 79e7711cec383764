//! The hub as a replicated state machine: what a frame does is decided in
//! two steps, so that several `locklab serve` instances can serve one
//! class from one log (`--class-store redis://…`, see `class::store`).
//!
//! 1. [`Hub::admit`]: on the instance whose socket sent it, checked against
//!    what that instance knows (role, throttle, presenter secret, a repeated
//!    answer). Refusals and repeats are answered there ([`Admit::Done`]) and
//!    never logged, so nobody can grow a class's log by sending junk; what
//!    changes a class becomes an [`LogEntry`] ([`Admit::Log`]).
//! 2. [`Hub::apply`]: every instance applies every entry of the class's
//!    log, in the log's order, with the same rules (the handlers of
//!    `hub.rs`), so they hold the same class: the same roster, tallies,
//!    scores and stream ids (a follower resumes with `since` on any
//!    instance). Whatever is random (a code, a member id) was drawn at
//!    admission and is in the entry; a connection of another instance is a
//!    *ghost* here (a connection without a socket: what is sent to it is
//!    dropped by the pump).
//!
//! A single instance (the memory store, and the unit tests through
//! [`Hub::handle`]) does both at once: [`Hub::settle`].

use std::net::IpAddr;
use std::time::Instant;

use locklab_core::class::{Answer, ClassClientMsg, ClassCode, ClassError, Control};
use serde::{Deserialize, Serialize};

use super::{error, Hub, Out, Role, SocketId};

/// One change to a class, as its log holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// The instance whose socket it came from ([`Hub::set_instance`]).
    pub instance: String,
    /// That instance's connection number.
    pub conn: SocketId,
    /// That connection's peer (for the throttle of a ghost).
    pub peer: IpAddr,
    pub what: What,
}

/// What an [`LogEntry`] does. A presenter secret is never in it, only its
/// hash ([`crate::class::secret_hash`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum What {
    Start {
        secret_hash: String,
    },
    Resume {
        secret_hash: String,
    },
    Join {
        name: Option<String>,
        member: Option<String>,
        /// The member id a new follower gets.
        fresh: String,
        since: Option<String>,
    },
    Control {
        secret_hash: String,
        control: Control,
    },
    Answer {
        question: u32,
        answer: Answer,
    },
    DrillResult {
        drill: u32,
        found: bool,
    },
    /// The connection closed.
    Left,
}

/// What [`Hub::admit`] made of a message.
#[derive(Debug, PartialEq)]
pub enum Admit {
    /// Answered here; no class changes.
    Done(Vec<Out>),
    /// To be appended to class `code`'s log and applied from it.
    /// `known`: this hub holds the class; when it does not, the store is
    /// asked whether another instance started it ([`Hub::no_such_class`]
    /// when none did).
    Log {
        code: ClassCode,
        entry: LogEntry,
        known: bool,
    },
}

impl Hub {
    /// This process's name in the logs: unique per process, so a restarted
    /// instance treats what its former self logged as another's.
    pub fn set_instance(&mut self, instance: String) {
        self.instance = instance;
    }

    /// This process's name in the logs.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The other instances some connection here belongs to: the pump checks
    /// that they still beat ([`crate::class::store::ClassStore::heartbeat`]).
    pub fn ghost_instances(&self) -> Vec<String> {
        let mut all: Vec<String> = self.ghosts.keys().map(|(i, _)| i.clone()).collect();
        all.sort();
        all.dedup();
        all
    }

    /// Instance `dead` stopped beating (killed: it could not log its
    /// connections' `Left`): a `Left` for each of its connections in a
    /// class, to append to that class's log on its behalf, so that every
    /// instance shows its followers away and its presenter gone, in log
    /// order. Several instances may append the same `Left`: a repeat finds
    /// no ghost and changes nothing. Its connections in no class are
    /// forgotten here at once.
    pub fn departures(&mut self, dead: &str) -> Vec<(ClassCode, LogEntry)> {
        let theirs: Vec<(SocketId, SocketId)> = self
            .ghosts
            .iter()
            .filter(|((i, _), _)| i == dead)
            .map(|((_, c), g)| (*c, *g))
            .collect();
        let mut left = Vec::new();
        for (conn, ghost) in theirs {
            let Some(c) = self.conns.get(&ghost) else { continue };
            let code = match &c.role {
                Role::Presenter(code) | Role::Follower(code, _) => code.clone(),
                Role::None => {
                    self.conns.remove(&ghost);
                    self.ghosts.remove(&(dead.to_owned(), conn));
                    continue;
                }
            };
            let entry = LogEntry {
                instance: dead.to_owned(),
                conn,
                peer: c.peer,
                what: What::Left,
            };
            left.push((code, entry));
        }
        left
    }

    /// Step 1 of a message from local connection `conn` (see the module doc).
    pub fn admit(&mut self, conn: SocketId, msg: ClassClientMsg, now: Instant) -> Admit {
        match self.admit_inner(conn, msg, now) {
            Ok(Some((code, what))) => {
                // A start's code is new: it is known to be free of this hub.
                let known = matches!(what, What::Start { .. }) || self.classes.contains_key(&code);
                let peer = self.conns.get(&conn).map(|c| c.peer);
                let Some(peer) = peer else {
                    return Admit::Done(Vec::new());
                };
                let instance = self.instance.clone();
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.logged = Some(code.clone());
                }
                let entry = LogEntry {
                    instance,
                    conn,
                    peer,
                    what,
                };
                Admit::Log { code, entry, known }
            }
            Ok(None) => Admit::Done(Vec::new()),
            Err(Refused::Error(e)) => Admit::Done(vec![Out::To(conn, error(e))]),
            Err(Refused::Out(out)) => Admit::Done(out),
        }
    }

    /// long: one arm per client message, each a few checks.
    fn admit_inner(
        &mut self,
        conn: SocketId,
        msg: ClassClientMsg,
        now: Instant,
    ) -> Result<Option<(ClassCode, What)>, Refused> {
        Ok(Some(match msg {
            ClassClientMsg::Start => {
                let (code, secret_hash) = self.admit_start(conn)?;
                (code, What::Start { secret_hash })
            }
            ClassClientMsg::Resume { code, secret } => {
                let peer = self.role_free(conn)?.peer;
                let secret_hash = crate::class::secret_hash(&secret);
                if let Some(class) = self.classes.get(&code) {
                    if !crate::class::same_secret(&secret_hash, &class.secret_hash) {
                        self.bad_attempt(peer, now);
                        return Err(ClassError::NotPresenter.into());
                    }
                }
                self.secrets.insert(conn, secret);
                (code, What::Resume { secret_hash })
            }
            ClassClientMsg::Join {
                code,
                name,
                member,
                since,
            } => {
                let peer = self.role_free(conn)?.peer;
                if let Some(secs) = self.throttled(peer, now) {
                    return Err(ClassError::Throttled(secs).into());
                }
                let fresh = self.random_hex(1);
                let what = What::Join {
                    name,
                    member,
                    fresh,
                    since,
                };
                (code, what)
            }
            ClassClientMsg::Control { secret, control } => {
                let secret_hash = crate::class::secret_hash(&secret);
                let code = self.presenting(conn, &secret_hash)?;
                (code, What::Control { secret_hash, control })
            }
            ClassClientMsg::Answer { question, answer } => {
                let (code, member) = self.follower_of(conn)?;
                let first = self.classes.get(&code).is_some_and(|c| {
                    let open = c.open.and_then(|i| c.questions.get(i));
                    open.is_some_and(|q| q.question.id == question)
                        && c.members
                            .get(&member)
                            .is_some_and(|f| !f.answers.contains_key(&question))
                });
                if !first {
                    // A repeat, or no such question: answered as before,
                    // and nothing changes.
                    let mut out = Vec::new();
                    if let Err(e) = self.answer(conn, question, &answer, now, &mut out) {
                        out.push(Out::To(conn, error(e)));
                    }
                    return Err(Refused::Out(out));
                }
                (code, What::Answer { question, answer })
            }
            ClassClientMsg::DrillResult { drill, found, .. } => {
                let (code, member) = self.follower_of(conn)?;
                let class = self.classes.get(&code).ok_or(ClassError::Ended)?;
                let d = class.drill.as_ref().filter(|d| d.drill.id == drill);
                let d = d.ok_or_else(|| ClassError::Malformed(format!("no drill {drill} is open")))?;
                if d.reports.contains_key(&member) {
                    return Ok(None);
                }
                (code, What::DrillResult { drill, found })
            }
        }))
    }

    /// The class `conn` presents, if `secret_hash` is its secret's.
    fn presenting(&self, conn: SocketId, secret_hash: &str) -> Result<ClassCode, ClassError> {
        let code = match self.conns.get(&conn).map(|c| &c.role) {
            Some(Role::Presenter(code)) => code.clone(),
            _ => return Err(ClassError::NotPresenter),
        };
        let class = self.classes.get(&code).ok_or(ClassError::Ended)?;
        if class.presenter != Some(conn) || !crate::class::same_secret(secret_hash, &class.secret_hash) {
            return Err(ClassError::NotPresenter);
        }
        Ok(code)
    }

    /// A join or resume named a class no instance holds: a bad attempt of
    /// its peer (the throttle), and an error.
    pub fn no_such_class(&mut self, conn: SocketId, code: &ClassCode, now: Instant) -> Vec<Out> {
        self.secrets.remove(&conn);
        if let Some(c) = self.conns.get_mut(&conn) {
            c.logged = None;
            let peer = c.peer;
            self.bad_attempt(peer, now);
        }
        vec![Out::To(conn, error(ClassError::NoSuchClass(code.to_string())))]
    }

    /// Local connection `conn` closed: `Ok` entry to log when other
    /// instances know it (it is in a class); else it is gone here at once
    /// (after a class ended nothing more is appended to its log, whose keys
    /// are about to expire).
    pub fn leave(&mut self, conn: SocketId, now: Instant) -> Result<(ClassCode, LogEntry), Vec<Out>> {
        self.secrets.remove(&conn);
        let logged = self
            .conns
            .get(&conn)
            .filter(|c| !matches!(c.role, Role::None))
            .and_then(|c| c.logged.clone().map(|code| (code, c.peer)));
        match logged {
            Some((code, peer)) => {
                let entry = LogEntry {
                    instance: self.instance.clone(),
                    conn,
                    peer,
                    what: What::Left,
                };
                Ok((code, entry))
            }
            None => Err(self.disconnect(conn, now)),
        }
    }

    /// Step 2: entry `e` of class `code`'s log. The connection it names is
    /// returned when it is one of this instance's (its sender may go on).
    pub fn apply(&mut self, code: &ClassCode, e: LogEntry, now: Instant) -> (Vec<Out>, Option<SocketId>) {
        let local = e.instance == self.instance;
        let conn = if local {
            if !self.conns.contains_key(&e.conn) {
                // Closed and forgotten here (its `Left` is later in the log).
                return (Vec::new(), None);
            }
            e.conn
        } else {
            let key = (e.instance.clone(), e.conn);
            match self.ghosts.get(&key) {
                Some(&g) => g,
                None if e.what == What::Left => return (Vec::new(), None),
                None => {
                    let g = self.connect(e.peer);
                    self.ghosts.insert(key, g);
                    g
                }
            }
        };
        let mut out = Vec::new();
        let done = match e.what {
            What::Start { secret_hash } => {
                self.start(conn, code, secret_hash, now, &mut out);
                Ok(())
            }
            What::Resume { secret_hash } => self.resume(conn, code, &secret_hash, now, &mut out),
            What::Join {
                name,
                member,
                fresh,
                since,
            } => self.join(conn, code, name, member, (fresh, since), now, &mut out),
            What::Control { secret_hash, control } => self.control(conn, &secret_hash, control, now, &mut out),
            What::Answer { question, answer } => self.answer(conn, question, &answer, now, &mut out),
            What::DrillResult { drill, found } => self.drill_result(conn, drill, found),
            What::Left => {
                // This instance's own connection, said gone by another
                // that thought this one dead: its socket closes too (the
                // page reconnects), so no socket outlives its member.
                if local {
                    out.push(Out::Close(conn));
                }
                out.extend(self.disconnect(conn, now));
                self.ghosts.remove(&(e.instance.clone(), e.conn));
                Ok(())
            }
        };
        if let Err(e) = done {
            self.secrets.remove(&conn);
            out.push(Out::To(conn, error(e)));
        }
        (out, local.then_some(conn))
    }

    /// What a single instance does with an admitted message: apply it now.
    pub fn settle(&mut self, admitted: Admit, now: Instant) -> Vec<Out> {
        match admitted {
            Admit::Done(out) => out,
            Admit::Log {
                code,
                entry,
                known: false,
            } => self.no_such_class(entry.conn, &code, now),
            Admit::Log {
                code,
                entry,
                known: true,
            } => self.apply(&code, entry, now).0,
        }
    }

    /// The ghosts among `conns` (their class ended): gone.
    pub(super) fn forget_ghosts(&mut self, conns: &[SocketId]) {
        if self.ghosts.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<SocketId> = conns.iter().copied().collect();
        self.ghosts.retain(|_, g| {
            let keep = !gone.contains(g);
            if !keep {
                self.conns.remove(g);
            }
            keep
        });
    }
}

/// Why a message was not logged.
enum Refused {
    Error(ClassError),
    /// Answered in full (a repeated answer).
    Out(Vec<Out>),
}

impl From<ClassError> for Refused {
    fn from(e: ClassError) -> Refused {
        Refused::Error(e)
    }
}

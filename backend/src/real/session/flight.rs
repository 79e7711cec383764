//! A command split at its round trip, so that several can be on the wire
//! at once.
//!
//! [`Session::run`] takes a command through every stage and its I/O in one
//! call, so a caller runs one command at a time. A lesson's background
//! client programs must run truly concurrently on real servers (issue 18:
//! six processes fighting for one lock are six connections whose commands
//! interleave on the server), so here the blocking lane is cut in two:
//! [`Session::take_off`] does the stages before the I/O (checks, rewrite,
//! pre-flight, rate limit, `Sent`) and hands out the client's connection
//! with the command in a [`Flight`] — or, when the connection is missing
//! (the first request, or the one before still on the wire), what it takes
//! to open one; whoever holds the flight opens it ([`Flight::connect`]) and
//! does the round trip ([`Flight::fly`]), on a thread of its own; and
//! [`Session::land`] books the reply (`Executed`, `Received`, the
//! connection back in the session). The session itself stays on one
//! thread: only the connection travels.

use std::time::Instant;

use locklab_core::actor::Actor;
use locklab_core::reply::Reply;
use locklab_core::trace::EventKind;

use super::phases::{Before, Begun, Outcome, Prepared};
use super::watchdog::Watchdog;
use super::{Argv, Opener, Session, SessionError};
use crate::real::conn::{RealConnection, RealError};

/// A command taken off: its connection, and what the session needs to
/// book its reply.
#[derive(Debug)]
pub struct Flight {
    c: u32,
    node: u32,
    argv: Argv,
    prep: Prepared,
    /// An `EXEC`'s queue as sent, when [`Session::queued_for_exec`] needs it.
    queued: Vec<Argv>,
    begun: Begun,
    watchdog: Option<Watchdog>,
    conn: Option<RealConnection>,
    /// How to open the connection, when the flight brings none.
    opener: Option<Opener>,
    reply: Option<Result<Reply, RealError>>,
    landed_at: Option<Instant>,
}

/// What [`Session::take_off`] made of a command.
#[derive(Debug)]
pub enum TakeOff {
    /// Answered without a round trip of its own (metadata the simulator
    /// answers, a script the pre-flight answered, the session's `SCAN`).
    Answered(Reply),
    /// On its way: [`Flight::fly`] it, then [`Session::land`] it.
    Flying(Box<Flight>),
}

impl Flight {
    /// Does it open a connection of its own (so it needs a worker of its
    /// own: the client's other connection to the node may be busy)?
    pub fn opens(&self) -> bool {
        self.opener.is_some()
    }

    /// Open the flight's connection if it brings none: the handshake
    /// (connect, `AUTH`) on the thread that will fly it, so over a slow
    /// link it costs that client's time, not everybody's. A failure is
    /// the flight's reply.
    pub fn connect(&mut self) {
        if let Some(opener) = self.opener.take() {
            match opener.open() {
                Ok(conn) => self.conn = Some(conn),
                Err(e) => self.reply = Some(Err(e)),
            }
        }
    }

    /// The round trip, on whatever thread holds the flight (connecting
    /// first if [`Flight::connect`] was not called). A flight whose
    /// connection could not be opened has its failure already.
    pub fn fly(&mut self) {
        self.connect();
        if self.reply.is_some() {
            return;
        }
        self.reply = Some(match self.conn.as_mut() {
            Some(conn) => conn
                .execute(&self.prep.rewritten)
                .and_then(|first| conn.read_rest(&self.prep.rewritten, &self.queued, first)),
            None => Err(RealError::EmptyCommand),
        });
        self.landed_at = Some(Instant::now());
    }

    /// The node it goes to.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// The client index it was sent for.
    pub fn client(&self) -> u32 {
        self.c
    }
}

impl Session {
    /// Has client `c` a connection to `node` free to take off on (none
    /// while its requests are on the wire)?
    pub fn has_conn(&self, c: u32, node: u32) -> bool {
        self.conns.contains_key(&(c, node))
    }

    /// The stages of [`Session::run`] before the round trip, for a command
    /// whose round trip another thread makes. Only on a prefixed session
    /// (a session on its own cluster routes and follows redirects on the
    /// blocking lane).
    pub fn take_off(&mut self, client: &str, node: u32, argv: &[Vec<u8>]) -> Result<TakeOff, SessionError> {
        let c = self.client_index(client)?;
        if !self.async_ready() {
            return Err(SessionError::NotAllowed {
                name: "a concurrent command".into(),
                why: "a session on its own cluster routes by slot on the blocking lane",
            });
        }
        let n = node as usize;
        let prep = match self.prepare(c, node, argv)? {
            Before::Answer(reply) => return Ok(TakeOff::Answered(reply)),
            // The session's SCAN, and a script run on the simulator whose
            // writes go on the applier's connection: both on this thread.
            Before::Send(p) if p.scan || p.simulate => return self.run(client, node, argv).map(TakeOff::Answered),
            Before::Send(p) => p,
        };
        if let Some(reply) = self.preflight_blocking(c, n, &prep)? {
            return Ok(TakeOff::Answered(reply));
        }
        if let Some(wait) = self.take_token()? {
            std::thread::sleep(wait);
        }
        let watchdog = self.watchdog(n, &prep)?;
        let begun = self.begin(c, node, argv);
        // The client's connection, or (missing) how to open one: opened by
        // whoever flies it, not here.
        let (conn, opener, reply) = match self.conns.remove(&(c, node)) {
            Some(conn) => (Some(conn), None, None),
            None => match self.opener(c, n) {
                Ok(opener) => {
                    self.links.remove(&(c, node));
                    (None, Some(opener), None)
                }
                Err(source) => (None, None, Some(Err(source))),
            },
        };
        Ok(TakeOff::Flying(Box::new(Flight {
            c,
            node,
            argv: argv.to_vec(),
            queued: self.queued_for_exec(&prep),
            prep,
            begun,
            watchdog,
            conn,
            opener,
            reply,
            landed_at: None,
        })))
    }

    /// Book a flight's reply as [`Session::run`] books it, and give its
    /// connection back to the client (unless the node was forgotten
    /// meanwhile, or the client opened another). The node it ran on and
    /// the reply as the user sees it.
    pub fn land(&mut self, mut flight: Flight) -> Result<(u32, Reply), SessionError> {
        let (c, node) = (flight.c, flight.node);
        let reply = flight.reply.take().unwrap_or(Err(RealError::EmptyCommand));
        if let Some(conn) = flight.conn.take() {
            if reply.is_ok() && self.nodes[node as usize].user_ready {
                self.conns.entry((c, node)).or_insert(conn);
            }
        }
        let killed = flight.watchdog.take().is_some_and(Watchdog::done);
        let loaded = match self.loaded_library(&flight.argv, &reply) {
            Some(lib) => self.check_loaded_blocking(node as usize, &lib),
            None => Ok(()),
        };
        let outcome = Outcome {
            reply,
            killed,
            loaded,
            dropped: Default::default(),
        };
        let back_at = flight.landed_at.map(|t| self.ms_at(t));
        let result = self.finish_at((c, node), &flight.argv, &flight.prep, flight.begun, outcome, back_at);
        if let Err(e) = &result {
            if !matches!(e, SessionError::Unreachable { .. }) {
                let at_ms = self.now_ms();
                self.push(at_ms, Actor::Client(c), EventKind::Note { text: e.to_string() });
            }
        }
        result.map(|reply| (node, reply))
    }

    /// Session ms of a wall instant (clamped to the session's start).
    fn ms_at(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.started).as_millis()).unwrap_or(u64::MAX)
    }
}

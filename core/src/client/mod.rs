//! Client programs: what the processes that want the lock actually do.
//!
//! A client in a locklab world is a state machine. It never blocks and never
//! reads a clock: the world hands it one [`Input`] at a time (start, a
//! reply, a timeout, a timer firing) together with the time on the
//! *client's own* clock, and the machine answers with [`ProgramAction`]s (send this
//! command to that node, wake me in 40 ms, write to the resource, I now
//! believe I hold the lock). This is the shape of an async client library
//! with the executor taken out, and it buys three things:
//!
//! * the world decides *when* everything happens, so a GC pause is simply
//!   "deliver nothing to this client for 1.5 s", and a crash is "drop it";
//! * the same program runs identically from the same seed, natively and in
//!   wasm32, which is what makes a trace replayable;
//! * a program's beliefs ([`ProgramAction::Hold`]) are explicit, so the monitor can
//!   compare what a client *thinks* with what the node *has*.
//!
//! Three programs cover the lessons:
//!
//! * [`commands`] — a plain list of redis-cli lines (the console, and
//!   lessons that spell every command out);
//! * [`lock`] — acquire with retry and backoff, optional fencing token,
//!   optional watchdog renewal, work, a write to the resource, release with
//!   one of the variants the lessons compare;
//! * [`redlock`] — the Redlock algorithm over N independent masters, whose
//!   acquisition decision can be a written [`condition`].
//!
//! [`host`] is the other side: what a world must do for a program, and
//! the one dispatch of a program's [`ProgramAction`]s to it.
//!
//! [`ops`] holds the commands and scripts they share (the release variants,
//! the renewal variants) with the reason each one is or is not safe.

pub mod commands;
pub mod condition;
pub mod host;
pub mod lock;
pub mod ops;
pub mod redlock;
pub mod scripts;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::reply::Reply;
use crate::rng::Rng;

pub use commands::{CommandsProgram, Step};
pub use host::ProgramHost;
pub use lock::{Acquire, Backoff, Fencing, LockProgram, Retry, Token, WaitReplicas, Watchdog, Work};
pub use ops::{Release, Renew, RELEASE_LUA, RENEW_LUA};
pub use redlock::{Extend, RedlockProgram};
pub use scripts::{LockScripts, ScriptRole};

/// One command: its arguments as bytes.
pub type Argv = Vec<Vec<u8>>;

/// Which node a request goes to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Whichever node is the master right now. A Sentinel-aware client
    /// follows a failover without knowing it happened — which is exactly
    /// why the lock on the old master is forgotten so quietly.
    #[default]
    Master,
    /// A fixed node, by index.
    Node(u32),
}

/// A client program, as a scenario file describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Program {
    Commands(CommandsProgram),
    Lock(LockProgram),
    Redlock(RedlockProgram),
}

impl Program {
    /// The lock keys the program uses, so the world can watch them.
    pub fn lock_keys(&self) -> Vec<String> {
        match self {
            Program::Commands(_) => Vec::new(),
            Program::Lock(p) => vec![p.key.clone()],
            Program::Redlock(p) => vec![p.key.clone()],
        }
    }

    /// Does finishing the program mean the process is gone (a worker that
    /// exits), as opposed to a console that simply stops typing?
    pub fn exits_when_done(&self) -> bool {
        !matches!(self, Program::Commands(_))
    }
}

/// A program the world cannot run.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ProgramError {
    #[error("step {step}: cannot parse {line:?}: Invalid argument(s)")]
    BadLine { step: usize, line: String },
    #[error("step {step}: empty command")]
    EmptyLine { step: usize },
    #[error("{0}")]
    Invalid(String),
}

/// What the world tells a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Begin.
    Start,
    /// The replies to the request sent with `tag`, one per command.
    Reply { tag: u32, replies: Vec<Reply> },
    /// The request sent with `tag` timed out: no reply will come.
    Failed { tag: u32 },
    /// The timer set with `tag` fired.
    Timer { tag: u32 },
}

/// What a program asks the world to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramAction {
    /// Send a request (one command, or a pipeline executed back to back) and
    /// give up after `timeout_ms` on the client's clock (`None`: wait
    /// forever, like redis-cli).
    Send {
        tag: u32,
        target: Target,
        commands: Vec<Argv>,
        timeout_ms: Option<u64>,
    },
    /// Fire `Input::Timer { tag }` after `after_ms` on the client's clock;
    /// replaces a pending timer with the same tag.
    Timer { tag: u32, after_ms: u64 },
    /// Forget a pending timer.
    Cancel { tag: u32 },
    /// Write to the protected resource.
    Write { token: Option<i64>, value: String },
    /// The program now believes it holds `key`.
    Hold { key: String },
    /// The program no longer believes it holds `key`.
    Unhold { key: String },
    /// Narrate a decision in the trace.
    Note(String),
    /// The program has finished.
    Done,
}

/// What a program sees of the world while it handles one input.
pub struct Ctx<'a> {
    /// The client's clock, in Unix milliseconds.
    pub now: u64,
    /// The client's own random stream.
    pub rng: &'a mut Rng,
    /// The client's name (lock tokens are made from it).
    pub name: &'a str,
    /// How many nodes the world has (Redlock's default: all of them).
    pub nodes: u32,
    out: &'a mut Vec<ProgramAction>,
}

impl<'a> Ctx<'a> {
    pub fn new(now: u64, rng: &'a mut Rng, name: &'a str, nodes: u32, out: &'a mut Vec<ProgramAction>) -> Ctx<'a> {
        Ctx {
            now,
            rng,
            name,
            nodes,
            out,
        }
    }

    pub fn send(&mut self, tag: u32, target: Target, commands: Vec<Argv>, timeout_ms: Option<u64>) {
        self.out.push(ProgramAction::Send {
            tag,
            target,
            commands,
            timeout_ms,
        });
    }

    pub fn timer(&mut self, tag: u32, after_ms: u64) {
        self.out.push(ProgramAction::Timer { tag, after_ms });
    }

    pub fn cancel(&mut self, tag: u32) {
        self.out.push(ProgramAction::Cancel { tag });
    }

    pub fn write(&mut self, token: Option<i64>, value: String) {
        self.out.push(ProgramAction::Write { token, value });
    }

    pub fn hold(&mut self, key: &str) {
        self.out.push(ProgramAction::Hold { key: key.to_owned() });
    }

    pub fn unhold(&mut self, key: &str) {
        self.out.push(ProgramAction::Unhold { key: key.to_owned() });
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.out.push(ProgramAction::Note(text.into()));
    }

    pub fn done(&mut self) {
        self.out.push(ProgramAction::Done);
    }
}

/// A running program.
#[derive(Clone, Debug)]
pub enum Machine {
    Commands(commands::CommandsMachine),
    Lock(lock::LockMachine),
    Redlock(redlock::RedlockMachine),
}

impl Machine {
    /// Check a program and get it ready to run.
    pub fn new(program: &Program, nodes: u32) -> Result<Machine, ProgramError> {
        Ok(match program {
            Program::Commands(p) => Machine::Commands(commands::CommandsMachine::new(p, nodes)?),
            Program::Lock(p) => Machine::Lock(lock::LockMachine::new(p, nodes)?),
            Program::Redlock(p) => Machine::Redlock(redlock::RedlockMachine::new(p, nodes)?),
        })
    }

    /// Handle one input.
    pub fn handle(&mut self, cx: &mut Ctx<'_>, input: Input) {
        match self {
            Machine::Commands(m) => m.handle(cx, input),
            Machine::Lock(m) => m.handle(cx, input),
            Machine::Redlock(m) => m.handle(cx, input),
        }
    }
}

/// Build an argv from text arguments.
pub fn argv(parts: &[&str]) -> Argv {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// `OK` from SET, or `1` from SETNX: the acquire worked.
pub(crate) fn acquired(reply: &Reply) -> bool {
    match reply {
        Reply::Status(s) => s == "OK",
        Reply::Integer(1) => true,
        _ => false,
    }
}

//! A plain list of steps: what a person at redis-cli does.
//!
//! Lessons that spell every command out (experiment 6.1: four commands,
//! four expected replies) run as a `Commands` program. Each `Send` waits for
//! its reply before the next step, as redis-cli does; `Sleep` is "the
//! process takes a while"; `Hold`/`Unhold` let a lesson say when this
//! client *believes* it holds the lock, so the overlap band is drawn even
//! though no acquire logic runs; `Write` touches the protected resource,
//! optionally with the last integer reply as its fencing token (the `INCR`
//! that came just before).

use serde::{Deserialize, Serialize};

use super::{Argv, Ctx, Input, ProgramError, Target};
use crate::reply::Reply;

/// One step of a [`CommandsProgram`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    /// Type a redis-cli line; wait for the reply (or `timeout_ms`).
    Send {
        line: String,
        /// Node index; default: the current master.
        #[serde(default)]
        node: Option<u32>,
        #[serde(default)]
        timeout_ms: Option<u64>,
    },
    /// Do nothing for a while (client clock).
    Sleep { ms: u64 },
    /// Write to the resource.
    Write {
        #[serde(default)]
        token: Option<i64>,
        /// Use the last integer reply as the token (overrides `token`).
        #[serde(default)]
        token_from_last_reply: bool,
        #[serde(default)]
        value: String,
    },
    /// From here on, this client believes it holds `key`.
    Hold { key: String },
    /// From here on, it does not.
    Unhold { key: String },
}

/// A list of steps run in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandsProgram {
    pub steps: Vec<Step>,
}

impl CommandsProgram {
    /// A program that sends these redis-cli lines to the master, in order.
    pub fn lines(lines: &[&str]) -> CommandsProgram {
        CommandsProgram {
            steps: lines
                .iter()
                .map(|l| Step::Send {
                    line: (*l).to_owned(),
                    node: None,
                    timeout_ms: None,
                })
                .collect(),
        }
    }
}

#[derive(Clone, Debug)]
enum Parsed {
    Send {
        argv: Argv,
        target: Target,
        timeout_ms: Option<u64>,
    },
    Sleep(u64),
    Write {
        token: Option<i64>,
        from_reply: bool,
        value: String,
    },
    Hold(String),
    Unhold(String),
}

const SEND: u32 = 1;
const SLEEP: u32 = 1;

/// The running form: steps parsed once, a cursor, the last integer seen.
#[derive(Clone, Debug)]
pub struct CommandsMachine {
    steps: Vec<Parsed>,
    next: usize,
    last_integer: Option<i64>,
    finished: bool,
}

impl CommandsMachine {
    pub fn new(p: &CommandsProgram, nodes: u32) -> Result<CommandsMachine, ProgramError> {
        let mut steps = Vec::with_capacity(p.steps.len());
        for (i, s) in p.steps.iter().enumerate() {
            steps.push(match s {
                Step::Send { line, node, timeout_ms } => {
                    let argv = crate::cli::parse(line).map_err(|_| ProgramError::BadLine {
                        step: i,
                        line: line.clone(),
                    })?;
                    if argv.is_empty() {
                        return Err(ProgramError::EmptyLine { step: i });
                    }
                    if let Some(n) = node.filter(|&n| n >= nodes) {
                        return Err(ProgramError::Invalid(format!("step {i}: no node {n}")));
                    }
                    let target = node.map_or(Target::Master, Target::Node);
                    Parsed::Send {
                        argv,
                        target,
                        timeout_ms: *timeout_ms,
                    }
                }
                Step::Sleep { ms } => Parsed::Sleep(*ms),
                Step::Write {
                    token,
                    token_from_last_reply,
                    value,
                } => Parsed::Write {
                    token: *token,
                    from_reply: *token_from_last_reply,
                    value: value.clone(),
                },
                Step::Hold { key } => Parsed::Hold(key.clone()),
                Step::Unhold { key } => Parsed::Unhold(key.clone()),
            });
        }
        Ok(CommandsMachine {
            steps,
            next: 0,
            last_integer: None,
            finished: false,
        })
    }

    pub fn handle(&mut self, cx: &mut Ctx<'_>, input: Input) {
        match input {
            Input::Start => self.run(cx),
            Input::Reply { tag: SEND, replies } => {
                if let Some(Reply::Integer(i)) = replies.last() {
                    self.last_integer = Some(*i);
                }
                self.run(cx);
            }
            Input::Failed { tag: SEND } => self.run(cx),
            Input::Timer { tag: SLEEP } => self.run(cx),
            _ => {}
        }
    }

    /// Run steps until one has to wait.
    fn run(&mut self, cx: &mut Ctx<'_>) {
        while let Some(step) = self.steps.get(self.next).cloned() {
            self.next += 1;
            match step {
                Parsed::Send {
                    argv,
                    target,
                    timeout_ms,
                } => {
                    cx.send(SEND, target, vec![argv], timeout_ms);
                    return;
                }
                Parsed::Sleep(ms) => {
                    cx.timer(SLEEP, ms);
                    return;
                }
                Parsed::Write {
                    token,
                    from_reply,
                    value,
                } => {
                    let token = if from_reply { self.last_integer } else { token };
                    cx.write(token, value);
                }
                Parsed::Hold(k) => cx.hold(&k),
                Parsed::Unhold(k) => cx.unhold(&k),
            }
        }
        if !self.finished {
            self.finished = true;
            cx.done();
        }
    }
}

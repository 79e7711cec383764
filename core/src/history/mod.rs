//! Histories of *your* lock library, checked.
//!
//! The simulator judges its own runs as they happen ([`crate::invariants`]).
//! A lock library run against a real or simulated Redis cannot be watched
//! from inside: all we have is what its clients did and when — each call's
//! invocation and completion on one clock, its outcome, and the writes the
//! protected resource accepted. That is a *history*, the thing Jepsen,
//! Knossos and Porcupine check. This module reads one (JSON lines, one
//! operation or fault per line, [`parse`]) and judges it:
//!
//! * the simulator's own invariants, by feeding the history to the same
//!   [`Monitor`](crate::invariants::Monitor): **stale-write** (the resource
//!   accepted a write from an earlier holder after a later holder's) and
//!   **wrong-release** (a release removed a lock another client had
//!   acquired), with **overlap** reported when the resource witnessed it —
//!   two clients' accepted writes inside the span both believed they held
//!   the lock ([`judge`]);
//! * what only a library's own calls show: **extension after expiry** (an
//!   extension reported success although the lock had certainly expired
//!   before it was sent) and **renewal gaps** (the next extension was sent
//!   after the lock may already have expired);
//! * **linearizability of the lock key as a register** ([`linear`]):
//!   Wing–Gong's search with Lowe's cache, as Porcupine does it, with a step
//!   limit and an honest "unknown (limit)".
//!
//! Every finding carries its minimal witnessing sub-history, as lines of the
//! same format, so it can be read, drawn and checked again on its own.
//! Faults are lines of their own ([`FaultMark`]): the timeline draws them as
//! markers on the lanes; the checker does not need them.
//!
//! The page opens a history or a MONITOR capture ([`open`]) in its worker:
//! checked or replayed here, drawn as a trace ([`drawn`]) with a verdict
//! card in both languages ([`card`]).

pub mod card;
pub mod drawn;
mod from_trace;
mod generate;
mod judge;
pub mod linear;
pub mod monitor;
pub mod monitor_line;
pub mod open;
mod parse;
mod zh;

use serde::{Deserialize, Serialize};

use crate::invariants::Invariant;

pub use from_trace::from_trace;
pub use generate::generate;
pub use judge::check;
pub use parse::{parse, parse_str, HistoryError, Limits};

/// What a call did to the lock (or, for `write`, to the resource).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// Take the lock: `SET key token NX PX ttl` or the library's equivalent.
    /// `ok`: the lock was granted.
    Acquire,
    /// Give it back: `ok`, the lock key was deleted by this call.
    Release,
    /// Extend the lease to `ttl_ms` from now: `ok`, it was extended.
    Extend,
    /// A write to the protected resource made under the lock `key`, with
    /// the fencing token `fence` if any: `ok`, the resource accepted it.
    Write,
    /// Read the lock key: `value` is the token seen (`null`: no lock).
    Read,
}

impl OpKind {
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Acquire => "acquire",
            OpKind::Release => "release",
            OpKind::Extend => "extend",
            OpKind::Write => "write",
            OpKind::Read => "read",
        }
    }

    pub fn parse(s: &str) -> Option<OpKind> {
        [
            OpKind::Acquire,
            OpKind::Release,
            OpKind::Extend,
            OpKind::Write,
            OpKind::Read,
        ]
        .into_iter()
        .find(|k| k.name() == s)
    }
}

/// One call of one client: a line of the history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// The line it was read from (1-based; 0 for a history built in memory),
    /// so a witness points back into the file.
    #[serde(skip)]
    pub line: u64,
    pub client: String,
    pub op: OpKind,
    /// The lock key (for a write: the lock it is made under).
    pub key: String,
    /// The client's lock value (its random token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// The fencing token a write carried (or an acquire obtained).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<i64>,
    /// A read's result (the token seen), or the data a write wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub invoke_ms: u64,
    /// `None`: the call never returned (a timeout, a crash, the run ended).
    #[serde(default)]
    pub complete_ms: Option<u64>,
    /// `None`: the outcome is unknown — the call may or may not have taken
    /// effect, at any time after its invocation.
    #[serde(default)]
    pub ok: Option<bool>,
}

impl Op {
    /// The latest moment the call can have taken effect: its completion, or
    /// never-bounded when its outcome is unknown.
    pub fn end_ms(&self) -> u64 {
        match (self.ok, self.complete_ms) {
            (Some(_), Some(c)) => c,
            _ => u64::MAX,
        }
    }

    /// The history line for this call.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A fault the nemesis injected, for the timeline's markers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultMark {
    #[serde(skip)]
    pub line: u64,
    /// What it was: `pause`, `clock-jump`, `failover`, `partition`, …
    pub fault: String,
    /// Whom it hit: a client or a node name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub from_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A history: calls and faults, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub ops: Vec<Op>,
    pub faults: Vec<FaultMark>,
}

/// What a finding is about: one of the simulator's invariants, or what only
/// a library's own calls show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Check {
    /// Judged as the simulator judges (stale-write, wrong-release, and
    /// overlap when the resource witnessed it).
    Invariant(Invariant),
    ExtensionAfterExpiry,
    RenewalGap,
    /// The lock key does not behave as one register.
    NotLinearizable,
}

impl Check {
    /// The stable name: an invariant's own, `extension-after-expiry`,
    /// `renewal-gap`, `not-linearizable`.
    pub fn name(self) -> &'static str {
        match self {
            Check::Invariant(i) => i.name(),
            Check::ExtensionAfterExpiry => "extension-after-expiry",
            Check::RenewalGap => "renewal-gap",
            Check::NotLinearizable => "not-linearizable",
        }
    }

    /// What a person calls it.
    pub fn title(self) -> &'static str {
        match self {
            Check::Invariant(Invariant::Overlap) => "two holders wrote to the resource",
            Check::Invariant(i) => i.title(),
            Check::ExtensionAfterExpiry => "lease extended after it expired",
            Check::RenewalGap => "lease may have lapsed between renewals",
            Check::NotLinearizable => "the lock key is not linearizable",
        }
    }
}

impl Serialize for Check {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One thing wrong, with the calls that show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub check: Check,
    pub key: String,
    pub from_ms: u64,
    pub to_ms: u64,
    pub clients: Vec<String>,
    pub detail: String,
    /// [`Finding::detail`] in Chinese, for the page's card.
    pub detail_zh: String,
    /// The minimal sub-history that shows it, in invocation order.
    pub witness: Vec<Op>,
}

/// The register verdict for one lock key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Linearity {
    Linearizable,
    NotLinearizable,
    /// The search hit its step limit before deciding.
    Unknown {
        steps: u64,
    },
}

/// The register verdict of one key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyVerdict {
    pub key: String,
    pub ops: usize,
    #[serde(flatten)]
    pub linearity: Linearity,
}

/// Everything the checker found in a history.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    pub ops: usize,
    pub clients: Vec<String>,
    pub keys: Vec<KeyVerdict>,
    pub findings: Vec<Finding>,
}

impl Report {
    /// Was `check` found?
    pub fn found(&self, check: Check) -> bool {
        self.findings.iter().any(|f| f.check == check)
    }

    /// A few lines of plain text: the verdicts, then each finding with its
    /// witness.
    pub fn text(&self) -> String {
        let mut out = format!("{} operations, {} clients\n", self.ops, self.clients.len());
        for k in &self.keys {
            let v = match &k.linearity {
                Linearity::Linearizable => "linearizable".to_owned(),
                Linearity::NotLinearizable => "NOT linearizable".to_owned(),
                Linearity::Unknown { steps } => format!("unknown (limit of {steps} steps reached)"),
            };
            out.push_str(&format!("key {}: {} operations, {v}\n", k.key, k.ops));
        }
        if self.findings.is_empty() {
            out.push_str("no violations\n");
        }
        for f in &self.findings {
            out.push_str(&format!(
                "{} ({}) on {} [{}–{} ms]: {}\n",
                f.check.title(),
                f.check.name(),
                f.key,
                f.from_ms,
                f.to_ms,
                f.detail
            ));
            for op in &f.witness {
                let at = if op.line > 0 {
                    format!("line {}: ", op.line)
                } else {
                    String::new()
                };
                out.push_str(&format!("    {at}{}\n", op.to_line()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

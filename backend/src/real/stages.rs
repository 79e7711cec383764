//! Where a lab command's time goes, stage by stage (issue 41): what `locklab
//! bench` prints as the lab's µs per command.
//!
//! A command through the lab is read ([`Stage::Parse`]: the socket's JSON
//! and the console line), checked ([`Stage::Checks`]: the table, key
//! prefix, quota, rate limit, and a script's run on the simulator), sent
//! ([`Stage::Send`]: the round trips to Redis, waiting included), followed
//! by the lock watch ([`Stage::Watch`]), booked on the trace
//! ([`Stage::Trace`]: its events) and written back ([`Stage::Encode`]:
//! redis-cli's rendering and the messages' JSON). Each owner of that work (a
//! [`Session`](crate::real::session::Session), a socket's
//! [`RealLab`](crate::real::lab::RealLab)) keeps a [`Book`] of plain
//! counters, so a command pays a clock read per stage and no shared memory;
//! the book is added to the process's total once, when its owner is
//! dropped, where the bench reads it ([`total`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One stage of a command's way through the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Parse,
    Checks,
    Send,
    Watch,
    Trace,
    Encode,
}

impl Stage {
    pub const ALL: [Stage; 6] = [
        Stage::Parse,
        Stage::Checks,
        Stage::Send,
        Stage::Watch,
        Stage::Trace,
        Stage::Encode,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Checks => "checks",
            Stage::Send => "send",
            Stage::Watch => "watch",
            Stage::Trace => "trace",
            Stage::Encode => "encode",
        }
    }
}

/// Time spent in each stage, and the commands it was spent on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stages {
    ns: [u64; 6],
    /// Commands checked (each one the lab sent or answered itself).
    pub commands: u64,
}

impl Stages {
    /// Add the time since `since` to `stage`.
    pub fn add(&mut self, stage: Stage, since: Instant) {
        self.add_time(stage, since.elapsed());
    }

    pub fn add_time(&mut self, stage: Stage, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.ns[stage as usize] = self.ns[stage as usize].saturating_add(ns);
    }

    /// Nanoseconds spent in `stage` so far.
    pub fn ns(&self, stage: Stage) -> u64 {
        self.ns[stage as usize]
    }

    pub fn merge(&mut self, other: &Stages) {
        for (a, b) in self.ns.iter_mut().zip(other.ns) {
            *a = a.saturating_add(b);
        }
        self.commands = self.commands.saturating_add(other.commands);
    }

    /// What was spent since `before` (an earlier reading of the same total).
    pub fn since(&self, before: &Stages) -> Stages {
        let mut out = *self;
        for (a, b) in out.ns.iter_mut().zip(before.ns) {
            *a = a.saturating_sub(b);
        }
        out.commands = out.commands.saturating_sub(before.commands);
        out
    }

    /// µs per command in `stage` (`None` with no command).
    pub fn per_command_us(&self, stage: Stage) -> Option<f64> {
        (self.commands > 0).then(|| self.ns(stage) as f64 / 1000.0 / self.commands as f64)
    }
}

/// Every dropped [`Book`]'s stages, added up.
static TOTAL: Mutex<Stages> = Mutex::new(Stages {
    ns: [0; 6],
    commands: 0,
});

/// The stages of every book dropped so far in this process.
pub fn total() -> Stages {
    TOTAL.lock().map(|t| *t).unwrap_or_default()
}

/// Books not yet dropped (not yet in [`total`]).
static OPEN: AtomicUsize = AtomicUsize::new(0);

/// How many books are still open: a reader of [`total`] that waits for
/// every session it started to end (the bench, after a round) waits for
/// this too, as a session's end may be finished on another thread.
pub fn open_books() -> usize {
    OPEN.load(Ordering::SeqCst)
}

/// A [`Stages`] that adds itself to [`total`] when dropped.
#[derive(Debug)]
pub struct Book(pub Stages);

impl Default for Book {
    fn default() -> Self {
        OPEN.fetch_add(1, Ordering::SeqCst);
        Book(Stages::default())
    }
}

impl Drop for Book {
    fn drop(&mut self) {
        if self.0 != Stages::default() {
            if let Ok(mut t) = TOTAL.lock() {
                t.merge(&self.0);
            }
        }
        OPEN.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_book_is_added_to_the_total_once() {
        let before = total();
        let mut b = Book::default();
        b.0.add_time(Stage::Send, Duration::from_micros(30));
        b.0.add_time(Stage::Encode, Duration::from_micros(2));
        b.0.commands = 2;
        drop(b);
        let got = total().since(&before);
        // Other tests' books may be dropped meanwhile: at least ours.
        assert!(got.ns(Stage::Send) >= 30_000 && got.commands >= 2, "{got:?}");
        let mut one = Stages::default();
        one.add_time(Stage::Send, Duration::from_micros(30));
        one.commands = 2;
        assert_eq!(one.per_command_us(Stage::Send), Some(15.0));
        assert_eq!(Stages::default().per_command_us(Stage::Send), None);
    }
}

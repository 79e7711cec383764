//! How a host watches and stops a running script, and how much work one run
//! may do.
//!
//! redis-server runs a script to its end however long it takes; past
//! `busy-reply-threshold` (`lua-time-limit`, 5 s) it answers every other
//! client `-BUSY` and accepts `SCRIPT KILL` / `FUNCTION KILL`, which its
//! count hook (`luaMaskCountHook`) notices and turns into an error. Core has
//! no clock and no threads, so the *time* half belongs to the host
//! (`locklab sim-server` watches the wall clock and answers the other
//! clients); what core offers is the other half:
//!
//! * a [`ScriptControl`] the host shares with the thread that runs the
//!   script: the host sets [`ScriptControl::kill`], the VM's count hook sees
//!   it at its next tick and ends the run with Redis's error; the VM records
//!   whether the script already wrote ([`ScriptControl::wrote`]), which makes
//!   it `UNKILLABLE` in Redis;
//! * a per-thread work budget ([`set_thread_limits`]): Lua instructions plus
//!   the native work of string and table builtins and of each `redis.call`
//!   (its argument and reply bytes), in units calibrated to an
//!   instruction's time, which the count hook also sees (a kill lands
//!   within one hook interval of work). In the browser and the
//!   CLI the default ([`INSTRUCTION_LIMIT`](super::INSTRUCTION_LIMIT), a
//!   tenth of a second natively) stands in for redis-server's BUSY; a host
//!   that can answer BUSY itself raises it, and the budget stays the hard
//!   stop that ends a script nobody kills.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::vm::INSTRUCTION_LIMIT;

/// Shared between the host and the thread running a script.
#[derive(Debug, Default)]
pub struct ScriptControl {
    kill: AtomicBool,
    wrote: AtomicBool,
}

impl ScriptControl {
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask the running script to stop (SCRIPT KILL / FUNCTION KILL). The VM
    /// notices within one tick of its count hook.
    pub fn kill(&self) {
        self.kill.store(true, Ordering::SeqCst);
    }

    pub fn kill_requested(&self) -> bool {
        self.kill.load(Ordering::SeqCst)
    }

    /// Has the running script called a write command (`SCRIPT_WRITE_DIRTY`)?
    pub fn wrote(&self) -> bool {
        self.wrote.load(Ordering::SeqCst)
    }

    pub(crate) fn mark_wrote(&self) {
        self.wrote.store(true, Ordering::SeqCst);
    }

    /// Ready for the next run.
    pub fn reset(&self) {
        self.kill.store(false, Ordering::SeqCst);
        self.wrote.store(false, Ordering::SeqCst);
    }
}

thread_local! {
    static CONTROL: RefCell<Option<Arc<ScriptControl>>> = const { RefCell::new(None) };
    static LIMIT: Cell<u64> = const { Cell::new(INSTRUCTION_LIMIT) };
}

/// The control and work budget for scripts run on this thread from now on.
/// `None` and [`INSTRUCTION_LIMIT`] are the defaults (nobody can kill, a
/// tenth of a second of work).
pub fn set_thread_limits(control: Option<Arc<ScriptControl>>, work_limit: u64) {
    let _ = CONTROL.try_with(|c| *c.borrow_mut() = control);
    let _ = LIMIT.try_with(|l| l.set(work_limit.max(1)));
}

pub(crate) fn thread_control() -> Option<Arc<ScriptControl>> {
    CONTROL.try_with(|c| c.borrow().clone()).ok().flatten()
}

pub(crate) fn thread_limit() -> u64 {
    LIMIT.try_with(Cell::get).unwrap_or(INSTRUCTION_LIMIT)
}

/// How deep Lua 5.1's pattern matcher would recurse on `p`, at most: one
/// level per item with a `?`, `*`, `+` or `-` suffix and per capture
/// parenthesis (`match` in lstrlib.c calls itself there; everything else is
/// its `goto init` loop). Malformed patterns are counted as far as they go;
/// the matcher reports them itself.
pub fn pattern_depth(p: &[u8]) -> usize {
    let mut i = usize::from(p.first() == Some(&b'^'));
    let mut depth = 1;
    while i < p.len() {
        match p[i] {
            b'(' | b')' => {
                depth += 1;
                i += 1;
            }
            b'%' if matches!(p.get(i + 1), Some(b'b')) => i += 4,
            b'%' if matches!(p.get(i + 1), Some(b'f')) => {
                i = class_end(p, i + 2);
            }
            _ => {
                let ep = class_end(p, i);
                if matches!(p.get(ep), Some(b'?' | b'*' | b'+' | b'-')) {
                    depth += 1;
                    i = ep + 1;
                } else {
                    i = ep;
                }
            }
        }
    }
    depth
}

/// lstrlib.c's `classEnd`: where the single-character class at `i` ends.
fn class_end(p: &[u8], mut i: usize) -> usize {
    match p.get(i) {
        None => p.len(),
        Some(b'%') => (i + 2).min(p.len()),
        Some(b'[') => {
            i += 1;
            if p.get(i) == Some(&b'^') {
                i += 1;
            }
            // do { ... } while (*p != ']'): the first ']' is a literal.
            loop {
                let Some(&c) = p.get(i) else { return p.len() };
                i += 1;
                if c == b'%' {
                    i += 1;
                }
                match p.get(i) {
                    None => return p.len(),
                    Some(b']') => return i + 1,
                    Some(_) => {}
                }
            }
        }
        Some(_) => i + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_depth_counts_recursive_items() {
        assert_eq!(pattern_depth(b"abc"), 1);
        assert_eq!(pattern_depth(b"^a?b*c+d-"), 5);
        assert_eq!(pattern_depth(b"(a)()"), 5);
        assert_eq!(pattern_depth(b"%a*[%]x]?%b()%f[%w]x"), 3);
        assert_eq!(pattern_depth(b"[]]*"), 2);
        assert_eq!(pattern_depth(b"[abc"), 1);
        assert_eq!(pattern_depth(b"%"), 1);
        assert_eq!(pattern_depth(&b"a?".repeat(20000)), 20001);
    }
}

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
//!   stop that ends a script nobody kills;
//! * the keys other clients `WATCH` while the script is busy
//!   ([`ScriptControl::watch_while_busy`]): redis-server runs an allow-busy
//!   `WATCH` between two of the script's slices (`processEventsWhileBlocked`),
//!   so the script's later writes to those keys fail the watcher's `EXEC`.
//!   The host answers such a `WATCH` without the node, which the script
//!   holds; the node's `touchWatchedKey` marks the registered keys it
//!   touches from then on, and the host replays the `WATCH` when the script
//!   ends, failing the `EXEC` of a watcher whose key was marked.

use std::cell::{Cell, RefCell};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::vm::{INSTRUCTION_LIMIT, MAX_PATTERN_DEPTH};

/// Shared between the host and the thread running a script.
#[derive(Debug, Default)]
pub struct ScriptControl {
    /// Shared with the VM (`Lua::set_interrupt`), whose pattern matcher
    /// reads it within one call.
    kill: Arc<AtomicBool>,
    wrote: AtomicBool,
    /// Whether `watches` has any entry (read on every write the script makes).
    watching: AtomicBool,
    /// Keys watched by other clients while this run was busy.
    watches: Mutex<Vec<BusyWatch>>,
}

/// A key a client watched while the script was busy, and whether the
/// script changed it since (`touchWatchedKey`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusyWatch {
    pub db: usize,
    pub key: Vec<u8>,
    pub touched: bool,
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

    /// The kill flag itself, for the VM's builtins that loop within one call.
    pub(crate) fn kill_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.kill)
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
        self.take_watches();
    }

    /// A client `WATCH`es `keys` of `db` while the script is busy: from now
    /// on the script's writes to them are recorded. Returns where they are
    /// in [`ScriptControl::take_watches`]'s list.
    pub fn watch_while_busy(&self, db: usize, keys: &[Vec<u8>]) -> Range<usize> {
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        let from = watches.len();
        watches.extend(keys.iter().map(|key| BusyWatch {
            db,
            key: key.clone(),
            touched: false,
        }));
        self.watching.store(!watches.is_empty(), Ordering::Release);
        from..watches.len()
    }

    /// The keys watched while the run was busy, in the order they were
    /// watched, with whether the run changed each since (the list is
    /// emptied).
    pub fn take_watches(&self) -> Vec<BusyWatch> {
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        self.watching.store(false, Ordering::Release);
        std::mem::take(&mut *watches)
    }

    /// The running script changed `key` of `db`, or (`key` `None`) emptied
    /// `db` with `exists` telling which watched keys it held.
    fn touched(&self, db: usize, key: Option<&[u8]>, exists: &dyn Fn(usize, &[u8]) -> bool) {
        if !self.watching.load(Ordering::Acquire) {
            return;
        }
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        for w in watches.iter_mut().filter(|w| w.db == db) {
            match key {
                Some(k) if w.key == k => w.touched = true,
                None if exists(w.db, &w.key) => w.touched = true,
                _ => {}
            }
        }
    }
}

/// `touchWatchedKey` for the keys watched while this thread's script is
/// busy (nothing when no script runs under a control).
pub(crate) fn touch_busy_watches(db: usize, key: &[u8]) {
    let _ = CONTROL.try_with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.touched(db, Some(key), &|_, _| false);
        }
    });
}

/// `touchAllWatchedKeysInDb` for the keys watched while this thread's
/// script is busy: those `db` held (`exists`) are changed by its flush.
pub(crate) fn flush_busy_watches(db: usize, exists: &dyn Fn(usize, &[u8]) -> bool) {
    let _ = CONTROL.try_with(|c| {
        if let Some(c) = c.borrow().as_ref() {
            c.touched(db, None, exists);
        }
    });
}

thread_local! {
    static CONTROL: RefCell<Option<Arc<ScriptControl>>> = const { RefCell::new(None) };
    static LIMIT: Cell<u64> = const { Cell::new(INSTRUCTION_LIMIT) };
    static PATTERN_DEPTH: Cell<usize> = const { Cell::new(MAX_PATTERN_DEPTH) };
}

/// The deepest pattern scripts run on this thread may match from now on
/// (see [`MAX_PATTERN_DEPTH`], the default). Lua 5.1's matcher recurses
/// once per level on the thread's stack, as redis-server's does on its
/// 8 MB C stack (it answers `1 100000` for 100,000 `a?` and dies at
/// 200,000): a host whose script thread has a stack that large
/// (sim-server) raises the bound to what that stack holds.
pub fn set_thread_pattern_depth(depth: usize) {
    let _ = PATTERN_DEPTH.try_with(|d| d.set(depth.max(1)));
}

pub(crate) fn thread_pattern_depth() -> usize {
    PATTERN_DEPTH.try_with(Cell::get).unwrap_or(MAX_PATTERN_DEPTH)
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

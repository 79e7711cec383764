//! A session's quota on a server it does not own: the bytes its keys may
//! hold and the scripts it may have the server keep, charged *before* a
//! command is sent, from the table's cost rules ([`lab::charges`]).
//!
//! The account is an upper bound, not a measurement. Each key the session
//! names is charged what the writes it was sent can have made it hold: a
//! write that replaces a value (`SET`) charges the larger of the old and
//! the new, one that adds (`HSET`, `LPUSH`) adds, an offset (`SETRANGE`)
//! charges the value up to it, twice (redis-server allocates a grown
//! string greedily). Nothing is ever credited back: a deleted or expired
//! key keeps its charge, so the account only ever stays above what the
//! server holds for the session (a lock taken and released a million times
//! with `SET … NX PX` and the compare-and-delete is charged once, since
//! each `SET` replaces). Past [`SessionLimits::max_tracked_keys`] keys, new keys
//! are charged to one pool that only grows. Scripts' own writes are not
//! charged here (they are bounded by the script checks).
//!
//! Scripts are counted by body: a distinct `EVAL` body is cached as
//! `SCRIPT LOAD` caches one — by Redis, which keeps it past the session,
//! or on a server the lab does not own by default, by the lab's simulator
//! that runs the session's scripts. `SCRIPT FLUSH` empties that cache and
//! the count ([`Quota::forget_scripts`]); libraries stay counted.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use locklab_core::reply::Reply;
use locklab_core::server::lab::{self, Charge, ARG_BYTES};

use super::link::Dropped;
use super::sandbox::Checked;
use super::{SessionError, SessionLimits};

/// What one session has charged.
#[derive(Debug, Default)]
pub struct Quota {
    /// Per key (as typed), the most bytes it can hold.
    held: HashMap<Vec<u8>, u64>,
    /// Keys past the tracked ones, together.
    pool: u64,
    /// `held`'s sum plus `pool`.
    total: u64,
    /// The bodies of the scripts and libraries kept for the session (a
    /// hash of each): their bytes, and whether it is a library
    /// (`FUNCTION LOAD`, which `SCRIPT FLUSH` leaves).
    scripts: HashMap<u64, (u64, bool)>,
    script_bytes: u64,
}

/// A fixed hasher for script bodies (the set only tells bodies apart).
type Fixed = BuildHasherDefault<DefaultHasher>;

impl Quota {
    /// The bytes charged so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Charge `argv` (passed by the table as `checked`), or refuse it
    /// because it would take the session past a quota; nothing is charged
    /// then. Allocates only for a key or a script it has not seen.
    pub fn charge(&mut self, limits: &SessionLimits, checked: Checked, argv: &[Vec<u8>]) -> Result<(), SessionError> {
        let over = |what, got, quota, hint| SessionError::OverQuota {
            name: String::from_utf8_lossy(&argv[0]).to_uppercase(),
            what,
            got,
            quota,
            hint,
        };
        // (key index, bytes it may hold after) for each key grown; at most
        // a few (MSET's pairs are bounded by the argument count).
        let mut after: Vec<(usize, u64)> = Vec::new();
        let mut grown = 0u64;
        lab::charges(checked.cmd, checked.costs, argv, |i, charge| {
            let old = self.held_of(argv, i, &after);
            let new = match charge {
                Charge::AtMost(b) => old.max(b),
                Charge::Add(b) => old.saturating_add(b),
                Charge::ElementOf(from) => {
                    let element = self.held_of(argv, from, &after).min(limits.max_argv_bytes as u64);
                    old.saturating_add(element + ARG_BYTES)
                }
                Charge::ValueOf(from) => old.max(self.held_of(argv, from, &after)),
            };
            grown = grown.saturating_add(new - old);
            after.push((i, new));
        });
        let total = self.total.saturating_add(grown);
        if grown > 0 && total > limits.session_quota {
            return Err(over(
                "the bytes the session's keys may hold",
                total,
                limits.session_quota,
                " (--session-quota; the lab counts what its writes can store, and never less)",
            ));
        }
        let script = lab::script_body(checked.costs, argv)
            .map(|body| (Fixed::default().hash_one(body), body.len() as u64))
            .filter(|(h, _)| !self.scripts.contains_key(h));
        if let Some((_, len)) = script {
            if self.scripts.len() >= limits.max_scripts {
                return Err(over(
                    "the number of scripts and libraries kept for the session",
                    self.scripts.len() as u64 + 1,
                    limits.max_scripts as u64,
                    "",
                ));
            }
            if self.script_bytes + len > limits.max_script_bytes {
                return Err(over(
                    "the bytes of the scripts and libraries kept for the session",
                    self.script_bytes + len,
                    limits.max_script_bytes,
                    "",
                ));
            }
        }
        for (i, new) in after {
            if let Some(key) = argv.get(i) {
                self.set(limits, key, new);
            }
        }
        if let Some((h, len)) = script {
            let library = checked.costs.contains(&lab::Cost::Library);
            self.scripts.insert(h, (len, library));
            self.script_bytes += len;
        }
        self.total = total;
        Ok(())
    }

    /// `SCRIPT FLUSH` emptied the cache that keeps the session's scripts:
    /// they no longer count (its libraries do, until `FUNCTION DELETE` or
    /// the session's end).
    pub fn forget_scripts(&mut self) {
        self.scripts.retain(|_, &mut (_, library)| library);
        self.script_bytes = self.scripts.values().map(|&(bytes, _)| bytes).sum();
    }

    /// What key `argv[i]` may hold: as charged by this command already,
    /// or before it (0 for a key never charged).
    fn held_of(&self, argv: &[Vec<u8>], i: usize, after: &[(usize, u64)]) -> u64 {
        let Some(key) = argv.get(i) else { return 0 };
        after
            .iter()
            .rev()
            .find(|(j, _)| argv.get(*j) == Some(key))
            .map(|&(_, b)| b)
            .unwrap_or_else(|| self.held.get(key).copied().unwrap_or(0))
    }

    /// Key `key` may hold `new` bytes now (never less than before).
    fn set(&mut self, limits: &SessionLimits, key: &[u8], new: u64) {
        if let Some(b) = self.held.get_mut(key) {
            *b = new;
        } else if self.held.len() < limits.max_tracked_keys {
            self.held.insert(key.to_vec(), new);
        } else {
            self.pool = self.pool.saturating_add(new);
        }
    }
}

/// What of a reply is shown to the page: at most `max` bytes of its
/// strings, and no element once they are spent. A longer reply is cut as
/// a pager cuts it — its start shown, the rest counted — and the note to
/// show with it is returned. `dropped`: what the link already left unread
/// ([`Link::keep_at_most`](super::link::Link::keep_at_most)).
pub fn cut_reply(reply: &mut Reply, max: usize, dropped: Dropped) -> Option<String> {
    let mut left = max;
    let (mut bytes, mut items) = (dropped.bytes, dropped.items);
    cut(reply, &mut left, &mut bytes, &mut items);
    (bytes > 0 || items > 0).then(|| {
        format!(
            "the reply was cut: the lab shows {max} bytes of a reply; {bytes} more bytes and {items} more elements \
             were not shown"
        )
    })
}

/// [`cut_reply`] of one value: `left` is what may still be shown.
fn cut(reply: &mut Reply, left: &mut usize, bytes: &mut u64, items: &mut u64) {
    let text = |b: &mut Vec<u8>, left: &mut usize, bytes: &mut u64| {
        if b.len() > *left {
            *bytes += (b.len() - *left) as u64;
            b.truncate(*left);
            b.shrink_to_fit();
        }
        *left -= b.len();
    };
    match reply {
        Reply::Bulk(b) => text(b, left, bytes),
        Reply::Verbatim { text: b, .. } => text(b, left, bytes),
        Reply::Array(v) | Reply::Set(v) => {
            for (i, r) in v.iter_mut().enumerate() {
                if *left == 0 {
                    *items += (v.len() - i) as u64;
                    v.truncate(i);
                    return;
                }
                cut(r, left, bytes, items);
            }
        }
        Reply::Map(pairs) => {
            for (i, (k, v)) in pairs.iter_mut().enumerate() {
                if *left == 0 {
                    *items += (pairs.len() - i) as u64;
                    pairs.truncate(i);
                    return;
                }
                cut(k, left, bytes, items);
                cut(v, left, bytes, items);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use locklab_core::cli::parse;
    use locklab_core::server::table;
    use locklab_core::server::Profile;

    use super::*;

    fn run(q: &mut Quota, limits: &SessionLimits, line: &str) -> Result<(), SessionError> {
        let argv = parse(line).unwrap();
        let cmd = table::find(&argv[0], Profile::V8_4).unwrap();
        let costs = cmd.lab_check(&argv).unwrap();
        q.charge(limits, Checked { cmd, costs }, &argv)
    }

    #[test]
    fn a_lock_taken_again_and_again_is_charged_once() {
        let limits = SessionLimits::default();
        let mut q = Quota::default();
        run(&mut q, &limits, "SET lock tok NX PX 30000").unwrap();
        let once = q.total();
        for _ in 0..10_000 {
            run(&mut q, &limits, "SET lock tok NX PX 30000").unwrap();
            run(&mut q, &limits, "DEL lock").unwrap();
        }
        assert_eq!(q.total(), once);
    }

    #[test]
    fn growth_past_the_quota_is_refused_before_it_is_sent() {
        let limits = SessionLimits {
            session_quota: 10 << 20,
            ..SessionLimits::default()
        };
        let mut q = Quota::default();
        // 1 MiB offsets, charged twice their reach: four fit, not five.
        for i in 0..4 {
            run(&mut q, &limits, &format!("SETRANGE s{i} 1048576 x")).unwrap();
        }
        let e = run(&mut q, &limits, "SETRANGE s9 1048576 x").unwrap_err();
        assert!(e.to_string().contains("quota is 10485760"), "{e}");
        // Rewriting a key already charged costs nothing more.
        run(&mut q, &limits, "SETRANGE s0 10 x").unwrap();
        // A list rotated on itself grows by an element each time, bounded.
        run(&mut q, &limits, "RPUSH l a").unwrap();
        let before = q.total();
        run(&mut q, &limits, "RPOPLPUSH l l").unwrap();
        assert!(q.total() > before);
    }

    #[test]
    fn scripts_are_counted_by_body() {
        let limits = SessionLimits {
            max_scripts: 2,
            ..SessionLimits::default()
        };
        let mut q = Quota::default();
        for _ in 0..5 {
            run(&mut q, &limits, "EVAL \"return 1\" 0").unwrap();
        }
        run(&mut q, &limits, "SCRIPT LOAD \"return 2\"").unwrap();
        let e = run(&mut q, &limits, "SCRIPT LOAD \"return 3\"").unwrap_err();
        assert!(e.to_string().contains("number of scripts"), "{e}");
        run(&mut q, &limits, "EVAL \"return 2\" 0").unwrap();
        // A flush empties the scripts' count, not the libraries'.
        q.forget_scripts();
        run(&mut q, &limits, "SCRIPT LOAD \"return 3\"").unwrap();
        run(&mut q, &limits, "FUNCTION LOAD \"#!lua name=l\"").unwrap();
        q.forget_scripts();
        run(&mut q, &limits, "SCRIPT LOAD \"return 4\"").unwrap();
        let e = run(&mut q, &limits, "SCRIPT LOAD \"return 5\"").unwrap_err();
        assert!(e.to_string().contains("number of scripts"), "{e}");
    }

    #[test]
    fn a_long_reply_is_cut_with_a_note() {
        let mut r = Reply::Bulk(vec![b'x'; 5000]);
        let note = cut_reply(&mut r, 1000, Dropped::default()).unwrap();
        assert_eq!(r, Reply::Bulk(vec![b'x'; 1000]));
        assert!(note.contains("4000 more bytes"), "{note}");
        let mut a = Reply::Array((0..100).map(|_| Reply::Bulk(vec![b'y'; 100])).collect());
        let note = cut_reply(&mut a, 1000, Dropped::default()).unwrap();
        let Reply::Array(v) = &a else { panic!() };
        assert_eq!(v.len(), 10);
        assert!(note.contains("90 more elements"), "{note}");
        let mut small = Reply::Array(vec![Reply::Integer(1), Reply::Bulk(b"ok".to_vec())]);
        assert!(cut_reply(&mut small, 1000, Dropped::default()).is_none());
    }
}

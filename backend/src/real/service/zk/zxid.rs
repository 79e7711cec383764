//! Session ids and zxids between a real ZooKeeper ensemble and a lesson's
//! numbers (the simulator's `core/src/service/zk.rs`).
//!
//! * **Session ids.** A real server hands out ids like `0x3000a1b2c0000`;
//!   the simulator numbers sessions from [`FIRST_SESSION`] (`0x1001`), the
//!   n-th session opened in the run being `FIRST_SESSION + n`. The driver
//!   shows the n-th real session the run opened as that number.
//! * **zxids.** A zxid is the leader's epoch in the high 32 bits and a
//!   counter in the low 32, on the real ensemble as in the simulator. Two
//!   things differ, and both are undone here:
//!   - *Transactions the simulator does not count.* A real
//!     `createSession` is a transaction and takes a zxid; the simulator's
//!     `SESSION` takes none. So are the lab's own set-up transactions
//!     before the run (the observer's session). The driver records every
//!     such zxid as *hidden* (it reads the leader's last zxid with `srvr`
//!     before and after opening a session: what committed in between is
//!     the session's), and everything up to the zxid the run started at is
//!     hidden too. A zxid is shown with its counter lowered by the hidden
//!     zxids of the same epoch below it, so `CREATE /locks` after one
//!     `SESSION` is `0x100000001` as in the simulator, although the
//!     ensemble committed it as `0x100000003`. A session's *close* or
//!     *expiry* is a transaction in both, and is counted in both.
//!   - *Epochs.* A fresh ensemble's first epoch is 1, as the simulator's;
//!     the epoch is shown relative to the one the run started in
//!     (`shown = real − start + 1`), so each real election shows as the
//!     next epoch, with its counter starting over — and the new epoch's
//!     zxids are larger than every earlier one, as on the real ensemble.

use std::collections::BTreeSet;

use locklab_core::service::zk::FIRST_SESSION;

const LOW: i64 = 0xffff_ffff;

/// The run's translation state.
#[derive(Clone, Debug)]
pub struct Numbers {
    /// Real session ids, in the order the run opened them.
    sessions: Vec<i64>,
    start_epoch: i64,
    /// The counter the run started at, in `start_epoch`.
    start_counter: i64,
    /// Real zxids after the start that the simulator does not count.
    hidden: BTreeSet<i64>,
}

impl Numbers {
    /// Translation for a run that starts when the leader's last zxid is
    /// `start`.
    pub fn new(start: i64) -> Numbers {
        Numbers {
            sessions: Vec::new(),
            start_epoch: start >> 32,
            start_counter: start & LOW,
            hidden: BTreeSet::new(),
        }
    }

    /// The run opened real session `real`: the id the lesson sees.
    pub fn opened(&mut self, real: i64) -> i64 {
        if let Some(shown) = self.shown_session(real) {
            return shown;
        }
        self.sessions.push(real);
        FIRST_SESSION + self.sessions.len() as i64 - 1
    }

    /// The lesson's id for a real session, if the run opened it.
    pub fn shown_session(&self, real: i64) -> Option<i64> {
        self.sessions
            .iter()
            .position(|&s| s == real)
            .map(|i| FIRST_SESSION + i as i64)
    }

    /// The real transactions in `(before, after]` are not the lesson's
    /// (a session's creation); `after` within the same epoch as `before`
    /// or a later one.
    pub fn hide(&mut self, before: i64, after: i64) {
        if after >> 32 != before >> 32 {
            // An election in between: only the new epoch's part is known.
            for z in ((after & !LOW) + 1)..=after {
                self.hidden.insert(z);
            }
            return;
        }
        for z in (before + 1)..=after {
            self.hidden.insert(z);
        }
    }

    /// A real zxid as the lesson numbers them; one from before the run's
    /// epoch (or 0, no zxid) passes through.
    pub fn zxid_shown(&self, real: i64) -> i64 {
        let epoch = real >> 32;
        if real <= 0 || epoch < self.start_epoch {
            return real;
        }
        let mut skipped = self.hidden.range((real & !LOW)..real).count() as i64;
        if epoch == self.start_epoch {
            skipped += self.start_counter;
        }
        let counter = ((real & LOW) - skipped).max(0);
        ((epoch - self.start_epoch + 1) << 32) | counter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const E1: i64 = 1 << 32;
    const E2: i64 = 2 << 32;

    #[test]
    fn sessions_are_numbered_from_the_simulators_first_id() {
        let mut n = Numbers::new(E1);
        assert_eq!(n.opened(0x0003_000a_1b2c_0000), 0x1001);
        assert_eq!(n.opened(0x0001_000a_1b2c_0001), 0x1002);
        assert_eq!(n.opened(0x0003_000a_1b2c_0000), 0x1001, "the same session twice");
        assert_eq!(n.shown_session(77), None);
    }

    /// Lesson 44's numbers: the observer's session before the start, A's
    /// and B's sessions hidden, A's expiry counted, and an election.
    #[test]
    fn lesson_44s_zxids_are_the_simulators() {
        // The observer's createSession was 0x100000001: the run starts there.
        let mut n = Numbers::new(E1 | 1);
        n.hide(E1 | 1, E1 | 2); // A's SESSION
        assert_eq!(n.zxid_shown(E1 | 3), 4_294_967_297, "CREATE /locks");
        assert_eq!(n.zxid_shown(E1 | 5), 4_294_967_299, "A's lock node");
        n.hide(E1 | 5, E1 | 6); // B's SESSION
        assert_eq!(n.zxid_shown(E1 | 7), 4_294_967_300, "B's lock node");
        assert_eq!(n.zxid_shown(E1 | 8), 4_294_967_301, "A's expiry");
        assert_eq!(n.zxid_shown(E2 | 1), 8_589_934_593, "the new epoch starts over");
        assert!(n.zxid_shown(E2 | 1) > n.zxid_shown(E1 | 8));
        assert_eq!(n.zxid_shown(0), 0);
    }

    #[test]
    fn a_run_on_a_used_ensemble_counts_from_its_start() {
        let mut n = Numbers::new((3 << 32) | 40);
        assert_eq!(n.zxid_shown((3 << 32) | 41), E1 | 1);
        n.hide((3 << 32) | 41, (4 << 32) | 2);
        assert_eq!(n.zxid_shown((4 << 32) | 3), E2 | 1);
    }
}

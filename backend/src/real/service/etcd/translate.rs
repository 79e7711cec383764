//! What differs between a lesson's etcd numbers and a real cluster's, and
//! the one place they are translated: lease ids, the lease in a lock key's
//! name, revisions, and TTLs under time compression.
//!
//! * **Lease ids.** Real etcd hands out large ids (`694d7d8f3a1c2b04`); the
//!   simulator numbers them from [`FIRST_LEASE`], the n-th lease granted
//!   in the run being `FIRST_LEASE + n` (core's rule, reused here). The
//!   driver shows the n-th lease the run was granted as that number and
//!   sends the real id for it; an id the run never got passes through
//!   unchanged (etcd then answers for it as it would).
//! * **Lock keys** carry the lease in hex (`concurrency.Mutex`'s
//!   `name/<lease hex>`, core's [`lock_key`]): translated with the lease.
//! * **Revisions.** A fresh cluster starts at revision 1, as the simulator
//!   does, and neither granting leases nor electing leaders moves it, so a
//!   key's create revision is the simulator's. The revision the run starts
//!   at is subtracted anyway (`shown = real − start + 1`), so a cluster
//!   some earlier run wrote to numbers the same way.
//! * **TTLs** are whole seconds on etcd and divided by the run's factor:
//!   `LEASE GRANT 10` at 10× asks for 1 s (at least 1). A keep-alive
//!   answers the granted TTL, shown as the TTL the lesson asked for. A
//!   `TIMETOLIVE` answers the seconds left *rounded down*
//!   (`int64(Remaining().Seconds())`), where the simulator rounds up; the
//!   real remainder `s` lies in `[s, s + 1)` real seconds, so it is shown as
//!   the top of that span in lesson seconds, `(s + 1) × factor`, capped at
//!   the lease's granted TTL — the simulator's rounding at the resolution
//!   etcd gives (exact at 1×; a fresh or just-promoted lease shows its full
//!   TTL, as in the simulator).

use locklab_core::service::etcd::{lock_key, FIRST_LEASE};

/// A lease the run was granted: its real id, and the TTL the lesson asked
/// for (lesson seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Granted {
    real: i64,
    lesson_ttl: i64,
}

/// The run's translation state.
#[derive(Clone, Debug)]
pub struct Translate {
    factor: i64,
    leases: Vec<Granted>,
    /// The cluster's revision when the run started.
    start_rev: i64,
}

impl Translate {
    pub fn new(factor: u64, start_rev: i64) -> Translate {
        Translate {
            factor: factor.clamp(1, 10_000) as i64,
            leases: Vec::new(),
            start_rev: start_rev.max(1),
        }
    }

    pub fn factor(&self) -> i64 {
        self.factor
    }

    /// The real TTL, whole seconds, for a lesson's `ttl`.
    pub fn ttl_to_real(&self, lesson_ttl: i64) -> i64 {
        if lesson_ttl <= 0 {
            return lesson_ttl;
        }
        ((lesson_ttl + self.factor - 1) / self.factor).max(1)
    }

    /// The run was granted `real` for a lesson TTL: the id the lesson sees.
    pub fn granted(&mut self, real: i64, lesson_ttl: i64) -> i64 {
        if let Some(shown) = self.shown_lease(real) {
            return shown;
        }
        self.leases.push(Granted { real, lesson_ttl });
        FIRST_LEASE + self.leases.len() as i64 - 1
    }

    fn index_of_shown(&self, shown: i64) -> Option<usize> {
        let i = usize::try_from(shown.checked_sub(FIRST_LEASE)?).ok()?;
        (i < self.leases.len()).then_some(i)
    }

    /// The real id for a lease id the lesson typed.
    pub fn real_lease(&self, shown: i64) -> i64 {
        self.index_of_shown(shown).map_or(shown, |i| self.leases[i].real)
    }

    /// The lesson's id for a real lease, if the run was granted it.
    pub fn shown_lease(&self, real: i64) -> Option<i64> {
        self.leases
            .iter()
            .position(|g| g.real == real)
            .map(|i| FIRST_LEASE + i as i64)
    }

    /// The lesson TTL the lease with this (shown) id was granted with.
    pub fn lesson_ttl(&self, shown: i64) -> Option<i64> {
        self.index_of_shown(shown).map(|i| self.leases[i].lesson_ttl)
    }

    /// A lock key as sent: `name/<shown hex>` becomes `name/<real hex>`.
    pub fn key_to_real(&self, key: &str) -> String {
        self.swap_lease_suffix(key, |hex| {
            let shown = i64::from_str_radix(hex, 16).ok()?;
            self.index_of_shown(shown).map(|i| self.leases[i].real)
        })
    }

    /// A key as the lesson reads it: `name/<real hex>` becomes
    /// `name/<shown hex>`.
    pub fn key_shown(&self, key: &str) -> String {
        self.swap_lease_suffix(key, |hex| self.shown_lease(u64::from_str_radix(hex, 16).ok()? as i64))
    }

    fn swap_lease_suffix(&self, key: &str, to: impl Fn(&str) -> Option<i64>) -> String {
        let Some((name, hex)) = key.rsplit_once('/') else {
            return key.to_owned();
        };
        match to(hex) {
            Some(lease) => lock_key(name, lease),
            None => key.to_owned(),
        }
    }

    /// A revision as the lesson numbers them.
    pub fn rev_shown(&self, real: i64) -> i64 {
        real - self.start_rev + 1
    }

    /// A keep-alive's TTL (the granted one) in lesson seconds.
    pub fn keepalive_shown(&self, shown_lease: i64, real_ttl: i64) -> i64 {
        self.lesson_ttl(shown_lease).unwrap_or(real_ttl * self.factor)
    }

    /// A `TIMETOLIVE` answer in lesson seconds (see the module doc); -1
    /// (no such lease) stays.
    pub fn remaining_shown(&self, shown_lease: i64, real_s: i64) -> i64 {
        if real_s < 0 {
            return -1;
        }
        let top = (real_s + 1) * self.factor;
        self.lesson_ttl(shown_lease).map_or(top, |ttl| top.min(ttl))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REAL_A: i64 = 0x694d_7d8f_3a1c_2b04;
    const REAL_B: i64 = 0x694d_7d8f_3a1c_2b09;

    #[test]
    fn the_nth_lease_is_shown_by_the_simulators_rule() {
        let mut t = Translate::new(10, 1);
        assert_eq!(t.granted(REAL_A, 10), 7001);
        assert_eq!(t.granted(REAL_B, 30), 7002);
        // Granted twice (a retried grant): still the same number.
        assert_eq!(t.granted(REAL_A, 10), 7001);
        assert_eq!(t.real_lease(7001), REAL_A);
        assert_eq!(t.real_lease(7002), REAL_B);
        // One the run never got passes through.
        assert_eq!(t.real_lease(7003), 7003);
        assert_eq!(t.shown_lease(12345), None);
    }

    #[test]
    fn a_lock_key_carries_the_lease_in_hex_both_ways() {
        let mut t = Translate::new(10, 1);
        t.granted(REAL_A, 10);
        assert_eq!(
            t.key_to_real("lock/order/1001/1b59"),
            format!("lock/order/1001/{REAL_A:x}")
        );
        assert_eq!(
            t.key_shown(&format!("lock/order/1001/{REAL_A:x}")),
            "lock/order/1001/1b59"
        );
        // Not a lease the run was granted, or no lease at all: unchanged.
        assert_eq!(t.key_shown("lock/order/1001/ffff"), "lock/order/1001/ffff");
        assert_eq!(t.key_to_real("plain"), "plain");
    }

    #[test]
    fn revisions_count_from_the_start_of_the_run() {
        assert_eq!(Translate::new(10, 1).rev_shown(2), 2);
        assert_eq!(Translate::new(10, 41).rev_shown(42), 2);
    }

    #[test]
    fn ttls_are_compressed_to_whole_seconds_and_shown_back() {
        let mut t = Translate::new(10, 1);
        assert_eq!(t.ttl_to_real(10), 1);
        assert_eq!(t.ttl_to_real(30), 3);
        assert_eq!(t.ttl_to_real(5), 1, "etcd's floor is one second");
        assert_eq!(t.ttl_to_real(11), 2, "rounded up, never shorter than asked");
        t.granted(REAL_A, 10);
        t.granted(REAL_B, 30);
        assert_eq!(t.keepalive_shown(7001, 1), 10);
        // 3.1 s left just after a promotion: etcd says 3, shown as 30.
        assert_eq!(t.remaining_shown(7002, 3), 30);
        // 2.4 s left: etcd says 2; the lesson's remainder is in 20..30.
        assert_eq!(t.remaining_shown(7002, 2), 30);
        // 1.4 s left: in 10..20, shown as its top.
        assert_eq!(t.remaining_shown(7002, 1), 20);
        assert_eq!(t.remaining_shown(7002, -1), -1);
        // At 1× it is the simulator's rounding up.
        let mut one = Translate::new(1, 1);
        one.granted(REAL_A, 30);
        assert_eq!(one.remaining_shown(7001, 13), 14);
    }
}

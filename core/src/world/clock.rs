//! Clocks that disagree.
//!
//! The world has one true time, the virtual millisecond counter every event
//! is stamped with. Nobody inside the world can read it. Each node and each
//! client has its own [`Clock`] instead: an offset from true time, a drift
//! rate in parts per million, and whatever jumps a fault gives it (an NTP
//! step, an operator setting the date by hand). A node expires its keys by
//! *its* clock; a client measures its backoff, its critical section and
//! Redlock's `elapsed` by *its* clock. The clock lessons (20, 32) are about
//! what happens when those disagree.
//!
//! A clock is piecewise linear: an anchor `(world, local)` and a rate. A
//! jump or a drift change re-anchors at the current instant, so the past
//! never changes. Integer arithmetic only (ppm, floor division in `i128`),
//! so wasm32 and native agree to the millisecond.

use serde::{Deserialize, Serialize};

/// The drift rate is kept above −100 % (a clock that runs backwards on its
/// own is not a clock) and below +1000 %.
const MIN_DRIFT_PPM: i64 = -900_000;
const MAX_DRIFT_PPM: i64 = 10_000_000;
const PPM: i128 = 1_000_000;

/// How a clock starts out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClockConfig {
    /// Added to the true time (may be negative).
    pub offset_ms: i64,
    /// How fast it runs: +1000 ppm gains 1 ms per second.
    pub drift_ppm: i64,
}

/// A clock: local time as a function of world time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clock {
    anchor_world: u64,
    anchor_local: u64,
    drift_ppm: i64,
}

fn add_signed(v: u64, d: i64) -> u64 {
    if d >= 0 {
        v.saturating_add(d as u64)
    } else {
        v.saturating_sub(d.unsigned_abs())
    }
}

impl Clock {
    /// A clock reading `base + offset` at world time 0.
    pub fn new(base: u64, cfg: ClockConfig) -> Clock {
        Clock {
            anchor_world: 0,
            anchor_local: add_signed(base, cfg.offset_ms),
            drift_ppm: cfg.drift_ppm.clamp(MIN_DRIFT_PPM, MAX_DRIFT_PPM),
        }
    }

    pub fn drift_ppm(&self) -> i64 {
        self.drift_ppm
    }

    /// The local reading at world time `t` (`t` at or after the last
    /// re-anchoring). Never decreases as `t` grows.
    pub fn local(&self, t: u64) -> u64 {
        let d = i128::from(t.saturating_sub(self.anchor_world));
        let v = i128::from(self.anchor_local) + d + (d * i128::from(self.drift_ppm)).div_euclid(PPM);
        v.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The first world time at or after `not_before` at which this clock
    /// reads at least `local`: when a timer set for `local` fires, or when a
    /// node whose clock this is deletes a key due at `local − 1`.
    pub fn when(&self, local: u64, not_before: u64) -> u64 {
        if self.local(not_before) >= local {
            return not_before;
        }
        let need = i128::from(local) - i128::from(self.anchor_local);
        let rate = PPM + i128::from(self.drift_ppm);
        let d = (need * PPM + rate - 1).div_euclid(rate).max(0);
        let mut t = (i128::from(self.anchor_world) + d).clamp(0, i128::from(u64::MAX / 2)) as u64;
        t = t.max(not_before);
        // Floor rounding can leave the estimate a millisecond or two off.
        while self.local(t) < local && t < u64::MAX / 2 {
            t += 1;
        }
        while t > not_before && self.local(t - 1) >= local {
            t -= 1;
        }
        t
    }

    /// Step the clock by `delta_ms` at world time `now`.
    pub fn jump(&mut self, now: u64, delta_ms: i64) {
        let l = self.local(now);
        self.anchor_world = now;
        self.anchor_local = add_signed(l, delta_ms);
    }

    /// Change the drift rate from world time `now` on.
    pub fn set_drift(&mut self, now: u64, ppm: i64) {
        let l = self.local(now);
        self.anchor_world = now;
        self.anchor_local = l;
        self.drift_ppm = ppm.clamp(MIN_DRIFT_PPM, MAX_DRIFT_PPM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perfect_clock_is_base_plus_time() {
        let c = Clock::new(1000, ClockConfig::default());
        assert_eq!(c.local(0), 1000);
        assert_eq!(c.local(250), 1250);
        assert_eq!(c.when(1250, 0), 250);
    }

    #[test]
    fn offset_and_drift() {
        let c = Clock::new(
            1000,
            ClockConfig {
                offset_ms: -10,
                drift_ppm: 100_000,
            },
        );
        assert_eq!(c.local(0), 990);
        assert_eq!(c.local(1000), 990 + 1100);
        let t = c.when(2090, 0);
        assert!(c.local(t) >= 2090 && c.local(t - 1) < 2090);
    }

    #[test]
    fn a_slow_clock_fires_timers_late() {
        let c = Clock::new(
            0,
            ClockConfig {
                offset_ms: 0,
                drift_ppm: -500_000,
            },
        );
        assert_eq!(c.when(100, 0), 200);
    }

    #[test]
    fn jumps_move_the_reading_not_the_past() {
        let mut c = Clock::new(0, ClockConfig::default());
        c.jump(100, 5_000);
        assert_eq!(c.local(100), 5_100);
        assert_eq!(c.local(101), 5_101);
        c.jump(200, -10_000);
        assert_eq!(c.local(200), 0);
        assert_eq!(c.when(50, 200), 250);
    }

    #[test]
    fn when_is_exact_for_many_rates() {
        for ppm in [-900_000, -333_333, -1, 0, 7, 12_345, 999_999, 5_000_000] {
            let c = Clock::new(
                77,
                ClockConfig {
                    offset_ms: 3,
                    drift_ppm: ppm,
                },
            );
            for target in [80, 81, 100, 1_000, 12_345] {
                let t = c.when(target, 0);
                assert!(c.local(t) >= target, "ppm {ppm} target {target}");
                assert!(t == 0 || c.local(t - 1) < target, "ppm {ppm} target {target}");
            }
        }
    }
}

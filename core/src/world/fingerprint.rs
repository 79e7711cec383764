//! A world's fingerprint: 64 bits that are equal for two worlds whose
//! futures are equal.
//!
//! The explorer's breadth-first search (`explore::bfs`) reaches the
//! same world along many schedules (a client crashed before or after a
//! delivery that did not concern it) and must expand it once. Two worlds
//! behave alike from now on when everything that decides what happens next
//! is alike: each node's keyspace with its deadlines, role, clock and
//! connections; each client's program state, clock, generator, timers and
//! requests in flight; the queue (what is in flight and when it arrives,
//! in order); the resource; the invariant monitor; the lock shadows; the
//! replication links. The walk hashes exactly that, in a fixed order, from
//! the `Debug` encoding of core's types (no `HashMap` anywhere in core, so
//! the encoding is canonical). Left out, because they only record the past
//! and never change the future: the trace itself (its length is kept: the
//! event limit counts it), the queue's insertion
//! counter (only the order it gives matters, and the walk keeps the order),
//! and the trace-only texts of blocked commands. Equal fingerprints of
//! different worlds are possible (64 bits), as in every model checker that
//! stores fingerprints instead of states (TLC, Stateright): the chance is
//! about n²/2⁶⁵ for n states, under 10⁻⁷ for a million.

use std::fmt::Write;

use super::World;

/// A 64-bit hash of what is written to it, eight bytes at a time
/// (MurmurHash3's x64 block step; stable on every target). It replaced
/// FNV-1a, whose byte-at-a-time multiply was a quarter of the search's time
/// (issue 44, `perf` of design 07's search). A piece shorter than eight
/// bytes is mixed with its length, so "ab"+"c" and "a"+"bc" differ.
struct Mix64(u64);

const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

impl Mix64 {
    fn block(&mut self, w: u64) {
        let k = w.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        self.0 = (self.0 ^ k).rotate_left(27).wrapping_mul(5).wrapping_add(0x52dc_e729);
    }
}

impl Mix64 {
    /// MurmurHash3's finaliser: every input bit reaches every output bit.
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        z ^ (z >> 33)
    }
}

impl Write for Mix64 {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let mut chunks = s.as_bytes().chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.block(u64::from_le_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.block(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
        Ok(())
    }
}

/// A sink that also keeps the text, one line per part of the world (for
/// [`World::fingerprint_text`]).
struct Text(String);

impl Write for Text {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

impl World {
    /// The fingerprint of everything that decides this world's future (see
    /// the module comment for what is left out and why).
    pub fn fingerprint(&self) -> u64 {
        let mut h = Mix64(0xcbf2_9ce4_8422_2325);
        self.fingerprint_into(&mut h, true);
        h.finish()
    }

    /// What [`World::fingerprint`] hashes, as text, one part per line
    /// (nodes written out, not as their cached hashes): to see what tells
    /// two near-duplicate states apart when a search finds too many.
    pub fn fingerprint_text(&self) -> String {
        let mut t = Text(String::new());
        self.fingerprint_into(&mut t, false);
        t.0
    }

    fn fingerprint_into(&self, h: &mut impl Write, cached: bool) {
        // Writing to `Mix64` or `Text` cannot fail.
        let _ = writeln!(
            h,
            "{}|{}|{}|{}|{}|{}|{}|{}|",
            self.now,
            self.steps(),
            self.master,
            self.halted,
            self.next_req,
            self.next_wait,
            self.deadlock_dirty,
            self.seed
        );
        for ((t, _), item) in &self.queue {
            let _ = writeln!(h, "{t}:{item:?};");
        }
        for n in &self.nodes {
            // A node's own hash is cached until it changes (most steps
            // change one node of several); the slot's small fields are
            // hashed each time.
            if cached {
                let node = *n.node.fp.get_or_init(|| {
                    let mut h = Mix64(0xcbf2_9ce4_8422_2325);
                    let _ = write!(h, "{:?}", *n.node.node);
                    h.finish()
                });
                let _ = write!(h, "{node}");
            } else {
                let _ = write!(h, "{:?}", *n.node.node);
            }
            let _ = writeln!(
                h,
                "|{:?}|{}|{}|{}|{:?}|{}|{}|{:?}|{:?};",
                n.clock, n.down, n.inc, n.up_gen, n.master_of, n.offset, n.applied, n.tick_at, n.internal
            );
        }
        for c in &self.clients {
            let _ = writeln!(h, "{c:?};");
        }
        let _ = writeln!(
            h,
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            self.resource,
            self.net,
            self.step_faults,
            self.monitor,
            self.locks,
            self.waiters,
            self.repl,
            self.ongoing,
            self.services,
            self.service_tick_at,
            self.write_locks
        );
    }
}

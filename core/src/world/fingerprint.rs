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

/// A 64-bit hash of the bytes written to it, eight at a time (MurmurHash3's
/// x64 block step and finaliser; stable on every target). It replaced
/// byte-wise FNV-1a, a quarter of the search's time in `perf` (issue 44).
/// `Debug` writes many pieces of one to three bytes, so writes are copied
/// into a buffer and mixed a buffer at a time; the total length is mixed
/// in at the end.
struct Mix64 {
    h: u64,
    buf: [u8; BUF],
    /// Bytes in `buf`.
    fill: usize,
    len: u64,
}

const BUF: usize = 256;
const C1: u64 = 0x87c3_7b91_1142_53d5;
const C2: u64 = 0x4cf5_ad43_2745_937f;

impl Mix64 {
    fn new() -> Mix64 {
        Mix64 {
            h: 0xcbf2_9ce4_8422_2325,
            buf: [0; BUF],
            fill: 0,
            len: 0,
        }
    }

    fn block(&mut self, w: u64) {
        let k = w.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        self.h = (self.h ^ k).rotate_left(27).wrapping_mul(5).wrapping_add(0x52dc_e729);
    }

    /// Mix every whole word of `bytes`; the rest (under eight bytes) back.
    fn words<'a>(&mut self, bytes: &'a [u8]) -> &'a [u8] {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.block(u64::from_le_bytes(b));
        }
        chunks.remainder()
    }

    /// Mix the buffer's whole words, keeping its tail at its start.
    fn flush(&mut self) {
        let buf = self.buf;
        let rest = self.words(&buf[..self.fill]);
        let n = rest.len();
        self.buf[..n].copy_from_slice(rest);
        self.fill = n;
    }

    /// The hash so far, finalised (every input bit reaches every output bit).
    fn finish(&mut self) -> u64 {
        self.flush();
        let mut tail = [0u8; 8];
        tail[..self.fill].copy_from_slice(&self.buf[..self.fill]);
        let w = u64::from_le_bytes(tail);
        let mut z = self.h ^ w.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2) ^ self.len;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        z ^ (z >> 33)
    }
}

impl Write for Mix64 {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let bytes = s.as_bytes();
        self.len += bytes.len() as u64;
        if self.fill + bytes.len() <= BUF {
            if bytes.len() <= 8 {
                // Most pieces: a byte loop beats a call to memmove.
                for &b in bytes {
                    self.buf[self.fill] = b;
                    self.fill += 1;
                }
            } else {
                self.buf[self.fill..self.fill + bytes.len()].copy_from_slice(bytes);
                self.fill += bytes.len();
            }
            return Ok(());
        }
        self.flush();
        if self.fill + bytes.len() <= BUF {
            self.buf[self.fill..self.fill + bytes.len()].copy_from_slice(bytes);
            self.fill += bytes.len();
            return Ok(());
        }
        // A long piece: top the buffer's tail up to a word, then mix the
        // piece directly.
        let need = (8 - self.fill) % 8;
        let (head, body) = bytes.split_at(need.min(bytes.len()));
        self.buf[self.fill..self.fill + head.len()].copy_from_slice(head);
        self.fill += head.len();
        self.flush();
        let rest = self.words(body);
        self.buf[..rest.len()].copy_from_slice(rest);
        self.fill = rest.len();
        Ok(())
    }
}

/// A sink that also keeps the text, one line per part of the world (for
/// [`World::fingerprint_text`]).
struct TextSink(String);

impl Write for TextSink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

impl World {
    /// The fingerprint of everything that decides this world's future (see
    /// the module comment for what is left out and why).
    pub fn fingerprint(&self) -> u64 {
        let mut h = Mix64::new();
        self.fingerprint_into(&mut h, true);
        h.finish()
    }

    /// What [`World::fingerprint`] hashes, as text, one part per line
    /// (nodes written out, not as their cached hashes): to see what tells
    /// two near-duplicate states apart when a search finds too many.
    pub fn fingerprint_text(&self) -> String {
        let mut t = TextSink(String::new());
        self.fingerprint_into(&mut t, false);
        t.0
    }

    fn fingerprint_into(&self, h: &mut impl Write, cached: bool) {
        self.head_into(h);
        for n in &self.nodes {
            // A node's own hash is cached until it changes (most steps
            // change one node of several); the slot's small fields are
            // hashed each time.
            if cached {
                let node = *n.node.fp.get_or_init(|| {
                    let mut h = Mix64::new();
                    let _ = write!(h, "{:?}", *n.node.node);
                    h.finish()
                });
                let _ = write!(h, "{node}");
            } else {
                let _ = write!(h, "{:?}", *n.node.node);
            }
            Self::node_slot_into(h, n);
        }
        self.shared_into(h);
        for c in &self.clients {
            let _ = writeln!(h, "{c:?};");
        }
        let _ = writeln!(h, "{:?}\n{:?}\n{:?}", self.monitor, self.locks, self.write_locks);
    }

    /// The world's counters and the queue, in order. Writing to `Mix64`
    /// or `TextSink` cannot fail.
    fn head_into(&self, h: &mut impl Write) {
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
    }

    /// A node slot's small fields (after the node itself).
    fn node_slot_into(h: &mut impl Write, n: &super::NodeSlot) {
        let _ = writeln!(
            h,
            "|{:?}|{}|{}|{}|{:?}|{}|{}|{:?}|{:?};",
            n.clock, n.down, n.inc, n.up_gen, n.master_of, n.offset, n.applied, n.tick_at, n.internal
        );
    }

    /// What is neither a client's nor keyed by clients as bare numbers:
    /// the resource, the network's generator, the faults injected at
    /// steps, the waiters, replication, the ongoing violations, services.
    fn shared_into(&self, h: &mut impl Write) {
        let _ = writeln!(
            h,
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            self.resource,
            self.net,
            self.step_faults,
            self.waiters,
            self.repl,
            self.ongoing,
            self.services,
            self.service_tick_at
        );
    }
}

/// Where a client's identity sits in a `Debug` text, so that renaming
/// clients is patching bytes in place (every form has the same length
/// whatever client it names: indexes are one digit, names one letter).
#[derive(Clone, Copy)]
enum Spot {
    /// A client's index: `client: 1`, `Client(1)`, `owner: Some(1)`.
    Index(usize),
    /// A client's one-letter name: `client: "A"`, `Client("A")`, and the
    /// first letter of a token or a write's value (`"A-1-…"`, `"A#1"`).
    Name(usize),
    /// The same as a byte array's first element (`[65, 45, …]`: a token in
    /// a node's keyspace, a request's arguments or a reply).
    NameByte(usize),
}

/// A `Debug` text and the spots in it that name clients.
struct Marked {
    text: Vec<u8>,
    spots: Vec<Spot>,
}

/// Client names for the symmetry reduction: one ASCII capital each.
struct Renaming<'a> {
    /// `to[i]`: client i's new index.
    to: &'a [u32],
    /// Name letter → client index.
    index_of: [u8; 128],
    /// Client index → name letter.
    letter: &'a [u8],
}

const NONE: u8 = u8::MAX;

impl Marked {
    /// Find the spots: `client: ` and `Client(` before an index or a quoted
    /// name, `owner: Some(` before an index, a quote or `[` before a
    /// client's letter followed by `-` or `#` (as character or byte 45, 35).
    fn new(text: String, index_of: &[u8; 128]) -> Marked {
        let b = text.into_bytes();
        let mut spots = Vec::new();
        let is_name = |c: u8| c < 128 && index_of[c as usize] != NONE;
        let mut i = 0;
        while i < b.len() {
            let rest = &b[i..];
            let label = [&b" client: "[..], b"Client(", b"owner: Some("]
                .into_iter()
                .find(|l| rest.starts_with(l));
            if let Some(l) = label {
                let at = i + l.len();
                if at < b.len() && b[at].is_ascii_digit() && !b.get(at + 1).is_some_and(u8::is_ascii_digit) {
                    spots.push(Spot::Index(at));
                } else if b.get(at) == Some(&b'"') && b.get(at + 2) == Some(&b'"') && is_name(b[at + 1]) {
                    spots.push(Spot::Name(at + 1));
                }
                i = at;
                continue;
            }
            if b[i] == b'"' && i + 2 < b.len() && is_name(b[i + 1]) && matches!(b[i + 2], b'-' | b'#') {
                spots.push(Spot::Name(i + 1));
                i += 2;
                continue;
            }
            if b[i] == b'[' && rest.len() >= 7 {
                let d = &rest[1..];
                let two = d[0].is_ascii_digit() && d[1].is_ascii_digit();
                let byte = if two { (d[0] - b'0') * 10 + (d[1] - b'0') } else { 0 };
                if two && is_name(byte) && (d[2..].starts_with(b", 45") || d[2..].starts_with(b", 35")) {
                    spots.push(Spot::NameByte(i + 1));
                    i += 3;
                    continue;
                }
            }
            i += 1;
        }
        Marked { text: b, spots }
    }

    /// Mix the text, renamed, into `h`.
    fn mix(&self, r: &Renaming, h: &mut Mix64, scratch: &mut Vec<u8>) {
        scratch.clear();
        scratch.extend_from_slice(&self.text);
        for s in &self.spots {
            match *s {
                Spot::Index(at) => {
                    let old = u32::from(scratch[at] - b'0');
                    let new = r.to.get(old as usize).copied().unwrap_or(old);
                    scratch[at] = b'0' + new as u8;
                }
                Spot::Name(at) => scratch[at] = r.rename_letter(scratch[at]),
                Spot::NameByte(at) => {
                    let old = (scratch[at] - b'0') * 10 + (scratch[at + 1] - b'0');
                    let new = r.rename_letter(old);
                    scratch[at] = b'0' + new / 10;
                    scratch[at + 1] = b'0' + new % 10;
                }
            }
        }
        // `Debug` texts are UTF-8 and every patch is ASCII for ASCII.
        let _ = h.write_str(std::str::from_utf8(scratch).unwrap_or_default());
    }
}

impl Renaming<'_> {
    fn rename_letter(&self, c: u8) -> u8 {
        let i = self.index_of[c as usize & 127];
        if i == NONE {
            return c;
        }
        let new = self.to.get(usize::from(i)).copied().unwrap_or(u32::from(i));
        self.letter.get(new as usize).copied().unwrap_or(c)
    }
}

/// Every permutation of `0..n`, in lexicographic order.
fn permutations(n: usize) -> Vec<Vec<u32>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, (n - 1) as u32);
            out.push(q);
        }
    }
    out
}

/// Most clients the symmetry reduction renames (4! = 24 renamings per state).
const MAX_SYMMETRIC: usize = 4;

impl World {
    /// [`World::fingerprint`] up to renaming clients: the least fingerprint
    /// of this world over every permutation of its clients, so a world and
    /// the same world with two clients' roles swapped fingerprint alike —
    /// the symmetry reduction of model checkers (Murφ's scalarsets,
    /// TLC's `SYMMETRY`, Stateright's `Representative`), sound because
    /// nothing in the world's rules looks at a client's index or name
    /// except to tell clients apart. Renamed consistently: the client
    /// slots' order; every `client: N`, `Client(N)` and `owner: Some(N)`
    /// (queue items, inboxes, waiters, the resource's writes, lock
    /// shadows); the monitor's per-client grants, grant keys and
    /// believers and the Redlock majorities (`renamed_clients`); each
    /// client's write lock; and the name letter that begins a token or a
    /// write's value, as a string or as bytes (nodes' keyspaces, requests,
    /// replies), and a fault's or link's client name. Request and
    /// connection ids are kept: they are references, equal in both worlds.
    ///
    /// Clients only become interchangeable when their programs, clocks,
    /// start times and random streams are alike
    /// ([`crate::world::WorldConfig::shared_client_stream`]); otherwise the
    /// renamed worlds differ and nothing merges. Applies to worlds of 2–4
    /// clients with one-letter names and no lock service; any other world
    /// gets its plain fingerprint.
    pub fn symmetric_fingerprint(&self) -> u64 {
        let n = self.clients.len();
        let letters: Vec<u8> = self
            .names
            .clients
            .iter()
            .filter_map(|c| match c.as_bytes() {
                [l] if l.is_ascii_uppercase() => Some(*l),
                _ => None,
            })
            .collect();
        if !(2..=MAX_SYMMETRIC).contains(&n) || letters.len() != n || !self.services.is_empty() {
            return self.fingerprint();
        }
        let mut index_of = [NONE; 128];
        for (i, l) in letters.iter().enumerate() {
            index_of[*l as usize] = i as u8;
        }
        // What renaming only patches, marked once.
        let mut fixed = String::new();
        self.head_into(&mut fixed);
        for n in &self.nodes {
            let _ = write!(fixed, "{:?}", *n.node.node);
            Self::node_slot_into(&mut fixed, n);
        }
        self.shared_into(&mut fixed);
        let fixed = Marked::new(fixed, &index_of);
        let slots: Vec<Marked> = self
            .clients
            .iter()
            .map(|c| Marked::new(format!("{c:?};\n"), &index_of))
            .collect();
        let mut scratch = Vec::new();
        let mut best = u64::MAX;
        for to in permutations(n) {
            let r = Renaming {
                to: &to,
                index_of,
                letter: &letters,
            };
            let mut h = Mix64::new();
            fixed.mix(&r, &mut h, &mut scratch);
            let mut order = vec![0usize; n];
            for (old, new) in to.iter().enumerate() {
                order[*new as usize] = old;
            }
            for old in order {
                slots[old].mix(&r, &mut h, &mut scratch);
            }
            let write_locks: std::collections::BTreeMap<u32, &String> = self
                .write_locks
                .iter()
                .map(|(c, k)| (to.get(*c as usize).copied().unwrap_or(*c), k))
                .collect();
            let rest = format!(
                "{:?}\n{:?}\n{:?}",
                self.monitor.renamed_clients(&to),
                self.locks.renamed_clients(&to),
                write_locks
            );
            Marked::new(rest, &index_of).mix(&r, &mut h, &mut scratch);
            best = best.min(h.finish());
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(pieces: &[&str]) -> u64 {
        let mut h = Mix64::new();
        for p in pieces {
            let _ = h.write_str(p);
        }
        h.finish()
    }

    /// The hash is of the byte stream, whatever pieces `Debug` cuts it
    /// into (short pieces buffered, long ones mixed directly, across the
    /// buffer's edge), and a trailing zero byte still counts.
    #[test]
    fn the_hash_is_of_the_stream_not_of_its_pieces() {
        let text: String = (0..1_000u32).map(|i| char::from(b'a' + (i * 7 % 26) as u8)).collect();
        let whole = hash(&[&text]);
        for cut in [1, 3, 8, 9, 255, 256, 257, 300, 999] {
            let (a, b) = text.split_at(cut);
            assert_eq!(hash(&[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<&str> = (0..text.len()).map(|i| &text[i..i + 1]).collect();
        assert_eq!(hash(&bytes), whole, "one byte at a time");
        let (a, b) = text.split_at(250);
        let (b, c) = b.split_at(500);
        assert_eq!(hash(&[a, b, c]), whole, "a long piece after a partly full buffer");
        assert_ne!(hash(&["a"]), hash(&["a\0"]));
        assert_ne!(hash(&[&text[..999]]), whole);
    }
}

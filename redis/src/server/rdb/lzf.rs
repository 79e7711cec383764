//! LZF (liblzf 3.6 as redis-server 7.0.15 builds it: lzf_c.c, lzf_d.c and
//! lzfP.h's `HLOG 16`, `VERY_FAST 1`, `ULTRA_FAST 0`): compression of the
//! strings an RDB or a DUMP payload holds (`rdbcompression yes`, strings
//! longer than 20 bytes that shrink by at least four), byte for byte as
//! redis-server writes them, and decompression of what it wrote.

use std::cell::RefCell;

/// lzfP.h's `HLOG`: the hash table has 2^16 slots.
const HLOG: u32 = 16;
const HSIZE: usize = 1 << HLOG;
/// lzf_c.c's limits: a literal run, a back reference's distance and length.
const MAX_LIT: usize = 1 << 5;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);

/// lzf_c.c's `FRST`, `NEXT` and (`VERY_FAST`) `IDX`, on the 32-bit
/// `unsigned int` its hash is.
fn frst(p: &[u8], i: usize) -> u32 {
    (u32::from(p[i]) << 8) | u32::from(p[i + 1])
}

fn next(v: u32, p: &[u8], i: usize) -> u32 {
    (v << 8) | u32::from(p[i + 2])
}

fn idx(h: u32) -> usize {
    ((h >> (3 * 8 - HLOG)).wrapping_sub(h.wrapping_mul(5)) as usize) & (HSIZE - 1)
}

/// The hash table of positions, kept between calls so that a call costs
/// what its input does, not 2^16 slots cleared: a slot is empty unless it
/// was written in this call (its generation). redis-server's table is an
/// uninitialised stack array (`INIT_HTAB 0`), whose stale pointers into an
/// earlier call's buffer almost never pass the distance check; an empty
/// table is what it has in practice, and the only deterministic choice.
struct Table {
    slots: Vec<u64>,
    generation: u32,
}

impl Table {
    /// Start a call: every slot reads empty.
    fn begin(&mut self) {
        if self.slots.is_empty() {
            self.slots = vec![0; HSIZE];
        }
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(0);
            self.generation = 1;
        }
    }

    /// The position last stored in `slot` during this call, and `pos` in
    /// its place (`ref = *hslot; *hslot = ip;`).
    fn swap(&mut self, slot: usize, pos: usize) -> Option<usize> {
        let new = self.entry(pos);
        let old = std::mem::replace(&mut self.slots[slot], new);
        (old >> 32 == u64::from(self.generation)).then_some((old & 0xffff_ffff) as usize)
    }

    fn set(&mut self, slot: usize, pos: usize) {
        let new = self.entry(pos);
        self.slots[slot] = new;
    }

    fn entry(&self, pos: usize) -> u64 {
        (u64::from(self.generation) << 32) | pos as u64
    }
}

thread_local! {
    static TABLE: RefCell<Table> = const { RefCell::new(Table { slots: Vec::new(), generation: 0 }) };
}

/// One more literal byte (`lit++; *op++ = *ip++;`), closing a run that
/// reached `MAX_LIT` and starting the next.
fn push_literal(out: &mut [u8], (op, lit): (&mut usize, &mut usize), byte: u8) {
    *lit += 1;
    out[*op] = byte;
    *op += 1;
    if *lit == MAX_LIT {
        out[*op - *lit - 1] = (*lit - 1) as u8; // stop run
        *lit = 0;
        *op += 1; // start run
    }
}

/// `lzf_compress(input, len, out, out_len)`: the compressed bytes, or `None`
/// when they would not fit in `out_len` bytes (redis-server then writes
/// the string plain). Positions are indices where lzf_c.c has pointers;
/// `ref > in_data` keeps its meaning: position 0 is never referred to.
// long: transcribes lzf_compress's one loop in its order, which decides every output byte
pub(crate) fn compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    // `in_len` is an `unsigned int` in liblzf; rdbSaveRawString's strings
    // are far below 4 GiB (proto-max-bulk-len).
    let in_end = input.len();
    if in_end == 0 || out_len == 0 || u32::try_from(in_end).is_err() {
        return None;
    }
    TABLE.with(|t| {
        let mut htab = t.borrow_mut();
        htab.begin();
        let mut out = vec![0u8; out_len];
        let mut ip = 0usize;
        let mut op = 1usize; // start run
        let mut lit = 0usize;
        let mut hval = if in_end >= 2 { frst(input, 0) } else { 0 };
        while ip + 2 < in_end {
            hval = next(hval, input, ip);
            let found = htab.swap(idx(hval), ip);
            let reference = found.filter(|&r| {
                ip - r - 1 < MAX_OFF
                    && ip + 4 < in_end
                    && r > 0
                    && input[r] == input[ip]
                    && input[r + 1] == input[ip + 1]
                    && input[r + 2] == input[ip + 2]
            });
            if let Some(r) = reference {
                let off = ip - r - 1;
                let mut len = 2usize;
                let maxlen = (in_end - ip - len).min(MAX_REF);
                out[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop run
                op -= usize::from(lit == 0); // undo run if length is zero
                if op + 3 + 1 >= out_len {
                    return None;
                }
                // The unrolled sixteen compares leave the loop at once on a
                // difference; otherwise the plain loop goes on (and stops
                // at maxlen without comparing that byte).
                let mut differed = false;
                if maxlen > 16 {
                    for _ in 0..16 {
                        len += 1;
                        if input[r + len] != input[ip + len] {
                            differed = true;
                            break;
                        }
                    }
                }
                if !differed {
                    loop {
                        len += 1;
                        if !(len < maxlen && input[r + len] == input[ip + len]) {
                            break;
                        }
                    }
                }
                len -= 2; // len is now #octets - 1
                ip += 1;
                if len < 7 {
                    out[op] = ((off >> 8) + (len << 5)) as u8;
                    op += 1;
                } else {
                    out[op] = ((off >> 8) + (7 << 5)) as u8;
                    out[op + 1] = (len - 7) as u8;
                    op += 2;
                }
                out[op] = off as u8;
                op += 1;
                lit = 0;
                op += 1; // start run
                ip += len + 1;
                if ip + 2 >= in_end {
                    break;
                }
                // VERY_FAST: hash the match's last two positions.
                ip -= 2;
                hval = frst(input, ip);
                hval = next(hval, input, ip);
                htab.set(idx(hval), ip);
                ip += 1;
                hval = next(hval, input, ip);
                htab.set(idx(hval), ip);
                ip += 1;
            } else {
                // One more literal byte we must copy.
                if op >= out_len {
                    return None;
                }
                push_literal(&mut out, (&mut op, &mut lit), input[ip]);
                ip += 1;
            }
        }
        if op + 3 > out_len {
            // At most 3 bytes can be missing here.
            return None;
        }
        while ip < in_end {
            push_literal(&mut out, (&mut op, &mut lit), input[ip]);
            ip += 1;
        }
        out[op - lit - 1] = (lit as u8).wrapping_sub(1); // end run
        op -= usize::from(lit == 0); // undo run if length is zero
        out.truncate(op);
        Some(out)
    })
}

/// The most bytes one input byte can stand for: a back reference of three
/// bytes (control, length, offset) copies at most 7 + 255 + 2 = 264.
const MAX_EXPANSION: usize = 264 / 3;

/// Expand `input` into exactly `expected_len` bytes, or `None` if the data
/// is malformed: a back reference before the start, a run past the input's
/// end, or a result of another length (lzf_d.c's `E2BIG`/`EINVAL`).
pub(crate) fn decompress(input: &[u8], expected_len: usize) -> Option<Vec<u8>> {
    // The length is the payload's claim, not a reservation: reserve no more
    // than the input can expand to (a three-byte back reference yields at
    // most 264 bytes), so a false claim costs nothing before it is refused.
    let mut out: Vec<u8> = Vec::with_capacity(expected_len.min(input.len().saturating_mul(MAX_EXPANSION)));
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let run = input.get(ip..ip + ctrl + 1)?;
            if out.len() + run.len() > expected_len {
                return None;
            }
            out.extend_from_slice(run);
            ip += ctrl + 1;
        } else {
            // A back reference: length in the top 3 bits (7 = one more
            // byte), offset in the low 5 bits and the next byte.
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let low = usize::from(*input.get(ip)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            let from = out.len().checked_sub(back)?;
            len += 2;
            if out.len() + len > expected_len {
                return None;
            }
            // Byte by byte: the reference may overlap what it produces.
            for i in 0..len {
                let b = out[from + i];
                out.push(b);
            }
        }
    }
    (out.len() == expected_len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::{compress, decompress};

    /// Outputs of redis-server 7.0.15's `lzf_compress`, read from its DUMP
    /// payloads (`SET k <value>`, `DUMP k`: the bytes after `C3 <clen> <len>`),
    /// and round trips.
    #[test]
    fn compresses_as_liblzf_and_round_trips() {
        let cases: &[&[u8]] = &[
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            b"abcabcabcabcabcabcabcabcabcabcabcabcabcabc",
            b"the quick brown fox jumps over the lazy dog, the quick brown fox jumps again",
        ];
        for &input in cases {
            let packed = compress(input, input.len() - 4).expect("compressible");
            assert!(packed.len() < input.len() - 4);
            assert_eq!(decompress(&packed, input.len()).as_deref(), Some(input));
        }
        // As redis-server 7.0.15 writes them: "aa", a reference one byte back
        // of 46, "aa"; "abca", a reference three back of 36, "bc".
        assert_eq!(
            compress(&[b'a'; 50], 46).expect("compressible"),
            [0x01, b'a', b'a', 0xe0, 0x25, 0x00, 0x01, b'a', b'a']
        );
        assert_eq!(
            compress(cases[1], cases[1].len() - 4).expect("compressible"),
            [0x03, b'a', b'b', b'c', b'a', 0xe0, 0x1b, 0x02, 0x01, b'b', b'c']
        );
        // Nothing repeats: it does not fit in four bytes less.
        let plain: Vec<u8> = (0u8..64).collect();
        assert_eq!(compress(&plain, plain.len() - 4), None);
    }

    /// Long inputs with every kind of run: the round trip holds, and the
    /// table's generations keep one call's positions out of the next.
    #[test]
    fn long_inputs_round_trip_call_after_call() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in [21usize, 100, 1000, 70_000, 300_000] {
            let input: Vec<u8> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if i % 97 < 60 {
                        b"lock:order:"[i % 11]
                    } else {
                        (x % 7) as u8 + b'a'
                    }
                })
                .collect();
            let first = compress(&input, input.len() - 4);
            assert!(first.is_some() || n < 1000, "{n} bytes, 60 % repeated, compress");
            if let Some(packed) = &first {
                assert_eq!(decompress(packed, input.len()).as_deref(), Some(&input[..]), "{n}");
            }
            assert_eq!(
                compress(&input, input.len() - 4),
                first,
                "a second call, the same bytes"
            );
        }
    }

    #[test]
    fn literal_runs_and_overlapping_references() {
        // "abc" literal, a reference of length 6 one byte back (copied byte
        // by byte, so it repeats 'c'), then the literal "d".
        let data = [2, b'a', b'b', b'c', 4 << 5, 0, 0, b'd'];
        assert_eq!(decompress(&data, 10).as_deref(), Some(&b"abcccccccd"[..]));
        assert_eq!(decompress(&data, 9), None, "wrong length");
        assert_eq!(decompress(&[4 << 5, 0], 2), None, "reference before the start");
        assert_eq!(decompress(&[5, b'a'], 6), None, "literal past the input");
    }

    /// A payload may claim any length; the claim alone must not allocate it
    /// (`Vec::with_capacity(usize::MAX / 2)` aborts the process).
    #[test]
    fn a_false_length_claim_is_refused_without_reserving_it() {
        assert_eq!(decompress(&[0, b'a'], usize::MAX / 2), None);
        let data = [2, b'a', b'b', b'c', 7 << 5, 255, 0];
        let out = decompress(&data, 3 + 264).expect("the longest reference");
        assert!(out[3..].iter().all(|&b| b == b'c'));
    }
}

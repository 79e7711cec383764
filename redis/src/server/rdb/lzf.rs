//! LZF decompression (liblzf's `lzf_decompress`, lzf_d.c), for strings that
//! redis-server compressed in a DUMP payload (`rdbcompression yes`, strings
//! longer than 20 bytes that shrink).

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
    use super::decompress;

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

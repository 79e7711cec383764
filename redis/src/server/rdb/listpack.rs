//! Listpacks (listpack.c) and intsets (intset.c): the compact blobs
//! redis-server 7.0 keeps small hashes, sorted sets, list nodes and integer
//! sets in, and writes into a DUMP payload as they are.
//!
//! A listpack is `total-bytes u32 | count u16 | entries… | 0xFF`, each entry
//! `encoding+data | backlen`. A string that `lpStringToInt64` reads as an
//! integer is stored as the smallest integer encoding; everything else as a
//! string with a 6-, 12- or 32-bit length.

use crate::server::cmd::parse_i64;

/// `lpEncodeBacklen`: the entry's size, 7 bits per byte, readable from its
/// right end.
fn push_backlen(out: &mut Vec<u8>, l: usize) {
    let l = l as u64;
    if l <= 127 {
        out.push(l as u8);
    } else if l < 16383 {
        out.extend_from_slice(&[(l >> 7) as u8, (l & 127) as u8 | 128]);
    } else if l < 2_097_151 {
        out.extend_from_slice(&[(l >> 14) as u8, ((l >> 7) & 127) as u8 | 128, (l & 127) as u8 | 128]);
    } else if l < 268_435_455 {
        out.extend_from_slice(&[
            (l >> 21) as u8,
            ((l >> 14) & 127) as u8 | 128,
            ((l >> 7) & 127) as u8 | 128,
            (l & 127) as u8 | 128,
        ]);
    } else {
        out.extend_from_slice(&[
            (l >> 28) as u8,
            ((l >> 21) & 127) as u8 | 128,
            ((l >> 14) & 127) as u8 | 128,
            ((l >> 7) & 127) as u8 | 128,
            (l & 127) as u8 | 128,
        ]);
    }
}

/// `lpEncodeIntegerGetType` + `lpEncodeString`: one entry's encoding and
/// data, without its backlen.
fn encode_entry(e: &[u8]) -> Vec<u8> {
    // lpStringToInt64 accepts what string2ll does, up to 20 bytes.
    if let Some(v) = parse_i64(e) {
        return match v {
            0..=127 => vec![v as u8],
            -4096..=4095 => {
                let u = if v < 0 { (1 << 13) + v } else { v } as u16;
                vec![(u >> 8) as u8 | 0xC0, u as u8]
            }
            -32768..=32767 => [&[0xF1][..], &(v as i16).to_le_bytes()].concat(),
            -8_388_608..=8_388_607 => [&[0xF2][..], &(v as i32).to_le_bytes()[..3]].concat(),
            _ if i32::try_from(v).is_ok() => [&[0xF3][..], &(v as i32).to_le_bytes()].concat(),
            _ => [&[0xF4][..], &v.to_le_bytes()].concat(),
        };
    }
    let len = e.len();
    let mut out = if len < 64 {
        vec![0x80 | len as u8]
    } else if len < 4096 {
        vec![0xE0 | (len >> 8) as u8, len as u8]
    } else {
        [&[0xF0][..], &(len as u32).to_le_bytes()].concat()
    };
    out.extend_from_slice(e);
    out
}

/// A listpack holding `entries` in order.
pub(crate) fn encode<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = vec![0; 6];
    let mut count = 0usize;
    for e in entries {
        let enc = encode_entry(e);
        out.extend_from_slice(&enc);
        push_backlen(&mut out, enc.len());
        count += 1;
    }
    out.push(0xFF);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    // LP_HDR_NUMELE_UNKNOWN past 65535.
    let n = u16::try_from(count).unwrap_or(u16::MAX);
    out[4..6].copy_from_slice(&n.to_le_bytes());
    out
}

/// The entries of a listpack, integers spelled out as `lpGet` does; `None`
/// if the blob is malformed (lengths past its end, a wrong total or count,
/// a wrong backlen, no terminator).
pub(crate) fn decode(lp: &[u8]) -> Option<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(lp.get(..4)?.try_into().ok()?) as usize;
    let count = u16::from_le_bytes(lp.get(4..6)?.try_into().ok()?);
    if total != lp.len() {
        return None;
    }
    let mut out = Vec::new();
    let mut p = 6;
    while *lp.get(p)? != 0xFF {
        let (entry, len) = decode_entry(lp, p)?;
        // The backlen must be the one lpEncodeBacklen writes.
        let mut back = Vec::new();
        push_backlen(&mut back, len);
        if lp.get(p + len..p + len + back.len())? != back.as_slice() {
            return None;
        }
        p += len + back.len();
        out.push(entry);
    }
    if p + 1 != lp.len() || (count != u16::MAX && usize::from(count) != out.len()) {
        return None;
    }
    Some(out)
}

/// The entry at `p` and the size of its encoding and data (`lpGet`).
fn decode_entry(lp: &[u8], p: usize) -> Option<(Vec<u8>, usize)> {
    let take = |from: usize, n: usize| lp.get(from..from.checked_add(n)?);
    let int = |v: i64, len: usize| Some((v.to_string().into_bytes(), len));
    let b = *lp.get(p)?;
    match b {
        0x00..=0x7F => int(i64::from(b), 1),
        0x80..=0xBF => {
            let n = usize::from(b & 0x3F);
            Some((take(p + 1, n)?.to_vec(), 1 + n))
        }
        0xC0..=0xDF => {
            let v = i64::from((u16::from(b & 0x1F) << 8) | u16::from(*lp.get(p + 1)?));
            int(if v >= 1 << 12 { v - (1 << 13) } else { v }, 2)
        }
        0xE0..=0xEF => {
            let n = (usize::from(b & 0x0F) << 8) | usize::from(*lp.get(p + 1)?);
            Some((take(p + 2, n)?.to_vec(), 2 + n))
        }
        0xF0 => {
            let n = u32::from_le_bytes(take(p + 1, 4)?.try_into().ok()?) as usize;
            Some((take(p + 5, n)?.to_vec(), 5 + n))
        }
        0xF1 => int(i64::from(i16::from_le_bytes(take(p + 1, 2)?.try_into().ok()?)), 3),
        0xF2 => {
            let d = take(p + 1, 3)?;
            int(i64::from(i32::from_le_bytes([0, d[0], d[1], d[2]]) >> 8), 4)
        }
        0xF3 => int(i64::from(i32::from_le_bytes(take(p + 1, 4)?.try_into().ok()?)), 5),
        0xF4 => int(i64::from_le_bytes(take(p + 1, 8)?.try_into().ok()?), 9),
        _ => None,
    }
}

/// An intset of `members` (each a `string2ll` integer): `encoding u32 |
/// length u32 | values`, sorted, all of the smallest width that holds them.
pub(crate) fn encode_intset(members: &[i64]) -> Vec<u8> {
    let mut v = members.to_vec();
    v.sort_unstable();
    let width = if v.iter().all(|&x| i16::try_from(x).is_ok()) {
        2
    } else if v.iter().all(|&x| i32::try_from(x).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * v.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes()[..width]);
    }
    out
}

/// The members of an intset blob, or `None` if it is malformed.
pub(crate) fn decode_intset(blob: &[u8]) -> Option<Vec<i64>> {
    let width = u32::from_le_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    let len = u32::from_le_bytes(blob.get(4..8)?.try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || blob.len() != 8 + width.checked_mul(len)? {
        return None;
    }
    Some(
        blob[8..]
            .chunks_exact(width)
            .map(|c| match width {
                2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
                4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                _ => i64::from_le_bytes(c.try_into().unwrap_or_default()),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trips_every_encoding() {
        let big = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let items: Vec<&[u8]> = vec![
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"-32768",
            b"32767",
            b"8388607",
            b"-8388608",
            b"2147483647",
            b"-2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"",
            b"abc",
            b"01",
            &mid,
            &big,
        ];
        let lp = encode(items.iter().copied());
        let back = decode(&lp).expect("decodes");
        assert_eq!(back, items.iter().map(|i| i.to_vec()).collect::<Vec<_>>());
        // A listpack written by redis-server 7.0.15 (HSET h a 1: DUMP h's blob).
        assert_eq!(
            encode([&b"a"[..], b"1"]),
            b"\x0c\x00\x00\x00\x02\x00\x81a\x02\x01\x01\xff"
        );
        let mut bad = lp.clone();
        bad.pop();
        assert_eq!(decode(&bad), None);
    }

    #[test]
    fn intset_round_trips_at_each_width() {
        for set in [vec![1, 2, -3], vec![1, 70000], vec![1, i64::MAX]] {
            assert_eq!(
                decode_intset(&encode_intset(&set)).map(|mut v| {
                    v.sort();
                    v
                }),
                {
                    let mut s = set.clone();
                    s.sort();
                    Some(s)
                }
            );
        }
        assert_eq!(decode_intset(b"\x02\x00\x00\x00\x05\x00\x00\x00"), None);
    }
}

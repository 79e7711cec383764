//! `MEMORY USAGE`'s figure as redis-server 7.0.15 computes it on x86-64
//! with jemalloc: object.c's `objectComputeSize` over the encodings'
//! real layouts (sds headers, listpack entries, intset widths, quicklist
//! nodes of at most 8 kB, dict tables), each allocation rounded up to
//! jemalloc's size class (`zmalloc_size`), plus the key's sds and its
//! `dictEntry` (`memoryCommand`).
//!
//! Small encodings come out to the byte. Dict-encoded collections (a set
//! of strings, a big hash or sorted set) are sampled as redis-server
//! samples them (the first `samples` elements, times the count); their
//! elements' order, a dict's mid-rehash tables and a skiplist node's random
//! level differ there from run to run, and here a node is taken at level 1.
//! `maxmemory` keeps using the O(1) estimate of `memory::key_usage`.

use super::db::Value;
use super::zset::format_score;

/// `sizeof(robj)`.
const ROBJ: usize = 16;
/// `sizeof(dictEntry)`.
const DICT_ENTRY: usize = 24;
/// `sizeof(dict)` (7.0: type, two tables, two counts, rehashidx,
/// pauserehash, two exponents).
const DICT: usize = 56;
/// `sizeof(quicklist)` and `sizeof(quicklistNode)`.
const QUICKLIST: usize = 40;
const QUICKLIST_NODE: usize = 40;
/// `list-max-listpack-size -2`: 8 kB per node (`optimization_level[1]`),
/// with `SIZE_ESTIMATE_OVERHEAD` per element checked.
const NODE_LIMIT: usize = 8192;
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_LIMIT: usize = 44;

/// jemalloc's size class for an allocation of `n` bytes: 8, then multiples
/// of 16 up to 128, then four classes per doubling.
pub(crate) fn je(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let k = usize::BITS - 1 - (n - 1).leading_zeros();
    let spacing = 1usize << (k - 2);
    n.div_ceil(spacing) * spacing
}

/// sds.c's `sdsReqType` header size for a string of `len` bytes
/// (`SDS_TYPE_5` only for a non-empty string).
fn sds_header(len: usize) -> usize {
    match len {
        1..=31 => 1,
        0 | 32..=255 => 3,
        256..=65_535 => 5,
        // `u64` so wasm32's 32-bit `usize` compiles; there every length is below 2^32.
        _ if (len as u64) < 1 << 32 => 9,
        _ => 17,
    }
}

/// `sdsZmallocSize` of `sdsnewlen(len)`.
fn sds_alloc(len: usize) -> usize {
    je(sds_header(len) + len + 1)
}

/// listpack.c's `lpStringToInt64` then `lpEncodeGetType`: an entry's
/// encoded size, without its back-length.
fn lp_entry(v: &[u8]) -> usize {
    if v.len() <= 20 {
        if let Some(n) = super::cmd::parse_i64(v) {
            return match n {
                0..=127 => 1,
                -4096..=4095 => 2,
                -32_768..=32_767 => 3,
                -8_388_608..=8_388_607 => 4,
                _ if i32::try_from(n).is_ok() => 5,
                _ => 9,
            };
        }
    }
    match v.len() {
        0..=63 => 1 + v.len(),
        64..=4095 => 2 + v.len(),
        _ => 5 + v.len(),
    }
}

/// An entry with its back-length (`lpEncodeBacklen`).
fn lp_entry_total(v: &[u8]) -> usize {
    let l = lp_entry(v);
    let back = match l {
        0..=127 => 1,
        128..=16_382 => 2,
        16_383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    l + back
}

/// `lpBytes` of a listpack holding `entries`: header, entries, end byte.
fn lp_bytes<'a>(entries: impl IntoIterator<Item = &'a [u8]>) -> usize {
    6 + entries.into_iter().map(lp_entry_total).sum::<usize>() + 1
}

/// t_zset.c's `zzlInsertAt` stores a score as `d2string`'s text: an
/// integer within 2^52 as digits, anything else as `%.17g`.
fn score_text(d: f64) -> Vec<u8> {
    if d == 0.0 {
        return if d.is_sign_negative() {
            b"-0".to_vec()
        } else {
            b"0".to_vec()
        };
    }
    if d > -4_503_599_627_370_495.0 && d < 4_503_599_627_370_496.0 && d == (d as i64) as f64 {
        return (d as i64).to_string().into_bytes();
    }
    format_score(d).into_bytes()
}

/// `dictSlots` of a dict that grew to `n` entries one add at a time
/// (`_dictExpandIfNeeded`: 4, then doubling).
fn dict_slots(n: usize) -> usize {
    n.next_power_of_two().max(4)
}

/// The average of the first `samples` sizes, times `count` (the `(double)`
/// arithmetic of `objectComputeSize`, truncated as its `size_t` sum is).
fn sampled(sizes: impl Iterator<Item = usize>, samples: usize, count: usize) -> usize {
    let (mut sum, mut n) = (0usize, 0usize);
    for s in sizes.take(samples) {
        sum += s;
        n += 1;
    }
    if n == 0 {
        return 0;
    }
    (sum as f64 / n as f64 * count as f64) as usize
}

/// Quicklist nodes as `_quicklistNodeAllowInsert` fills them (pushing at
/// the tail): each node's element count and listpack bytes. DEBUG OBJECT,
/// MEMORY USAGE and the RDB/DUMP writer (one listpack per node) read it.
pub(crate) fn quicklist_layout<'a>(items: impl Iterator<Item = &'a Vec<u8>>) -> Vec<(usize, usize)> {
    let mut nodes: Vec<(usize, usize)> = Vec::new();
    for v in items {
        let add = lp_entry_total(v);
        match nodes.last_mut() {
            Some((count, sz)) if *sz + v.len() + SIZE_ESTIMATE_OVERHEAD <= NODE_LIMIT => {
                *count += 1;
                *sz += add;
            }
            _ => nodes.push((1, 7 + add)),
        }
    }
    nodes
}

/// [`quicklist_layout`]'s listpack bytes per node.
pub(crate) fn quicklist_nodes<'a>(items: impl Iterator<Item = &'a Vec<u8>>) -> Vec<usize> {
    quicklist_layout(items).into_iter().map(|(_, bytes)| bytes).collect()
}

/// `memoryCommand`'s `MEMORY USAGE key [SAMPLES n]` (`samples` 0 is all).
pub(crate) fn memory_usage(key: &[u8], value: &Value, samples: usize) -> usize {
    let samples = if samples == 0 { usize::MAX } else { samples };
    let kind = super::cmd::keys::encoding(value);
    let value = match (value, kind) {
        (Value::Str(_), "int") => ROBJ,
        (Value::Str(s), "embstr") if s.len() <= EMBSTR_LIMIT => je(ROBJ + 3 + s.len() + 1),
        (Value::Str(s), _) => ROBJ + sds_alloc(s.len()),
        (Value::List(l), _) => {
            let nodes = quicklist_nodes(l.into_iter());
            ROBJ + QUICKLIST + sampled(nodes.iter().map(|&b| QUICKLIST_NODE + je(b)), samples, nodes.len())
        }
        (Value::Set(s), "intset") => {
            let width = s
                .into_iter()
                .filter_map(|m| super::cmd::parse_i64(m))
                .map(|n| {
                    if i16::try_from(n).is_ok() {
                        2
                    } else if i32::try_from(n).is_ok() {
                        4
                    } else {
                        8
                    }
                })
                .max()
                .unwrap_or(2);
            ROBJ + je(8 + width * s.len())
        }
        (Value::Set(s), _) => {
            let n = s.len();
            ROBJ + DICT
                + 8 * dict_slots(n)
                + sampled(s.into_iter().map(|m| DICT_ENTRY + sds_alloc(m.len())), samples, n)
        }
        (Value::Hash(h), "listpack") => {
            ROBJ + je(lp_bytes(h.into_iter().flat_map(|(f, v)| [f.as_slice(), v.as_slice()])))
        }
        (Value::Hash(h), _) => {
            let n = h.into_iter().count();
            let each = h
                .into_iter()
                .map(|(f, v)| sds_alloc(f.len()) + sds_alloc(v.len()) + DICT_ENTRY);
            ROBJ + DICT + 8 * dict_slots(n) + sampled(each, samples, n)
        }
        (Value::ZSet(z), "listpack") => {
            let texts: Vec<(Vec<u8>, Vec<u8>)> = z.iter().map(|(m, s)| (m.to_vec(), score_text(s))).collect();
            ROBJ + je(lp_bytes(texts.iter().flat_map(|(m, s)| [m.as_slice(), s.as_slice()])))
        }
        (Value::ZSet(z), _) => {
            let n = z.len();
            // zset, zskiplist, and the header node of 32 levels.
            let fixed = ROBJ + 16 + 32 + DICT + 8 * dict_slots(n) + je(24 + 32 * 16);
            fixed
                + sampled(
                    z.iter().map(|(m, _)| sds_alloc(m.len()) + DICT_ENTRY + je(24 + 16)),
                    samples,
                    n,
                )
        }
    };
    value + sds_alloc(key.len()) + DICT_ENTRY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jemalloc_classes() {
        let got: Vec<usize> = [1, 8, 9, 23, 33, 120, 129, 161, 257, 536, 1025, 8193]
            .iter()
            .map(|&n| je(n))
            .collect();
        assert_eq!(got, [8, 8, 16, 32, 48, 128, 160, 192, 320, 640, 1280, 10240]);
    }

    #[test]
    fn listpack_entries() {
        assert_eq!(lp_bytes([&b"a"[..], b"b", b"c"]), 16);
        assert_eq!(lp_entry(b"127"), 1);
        assert_eq!(lp_entry(b"128"), 2);
        assert_eq!(lp_entry(b"-32768"), 3);
        assert_eq!(lp_entry(b"01"), 3);
        assert_eq!(score_text(1.0), b"1");
        assert_eq!(score_text(1.5), b"1.5");
    }
}

//! DUMP / RESTORE payloads: one value in redis-server 7.0.15's RDB format
//! (rdb.c `rdbSaveObjectType` + `rdbSaveObject`), then the RDB version (10,
//! two bytes little-endian) and a CRC-64 of everything before it (cluster.c
//! `createDumpPayload`). FUNCTION DUMP uses the same footer around
//! `RDB_OPCODE_FUNCTION2` records (functions.c `functionDumpCommand`).
//!
//! What is written follows 7.0.15's choices for each value as it is now:
//! integers as RDB integer strings, small hashes and sorted sets as
//! listpacks, lists as one quicklist node per 8 KB listpack, integer sets
//! as intsets, the rest as plain RDB collections. What is read is whatever
//! 7.0.15 writes for strings, lists, sets, sorted sets and hashes, LZF
//! compressed strings included, plus the older plain encodings, so a
//! payload DUMPed on either server RESTOREs on the other.

pub(crate) mod crc64;
mod listpack;
mod lzf;

use std::collections::BTreeSet;

use super::config::EncodingLimits;
use super::db::{Hash, List, Set, Value, ZSet};

/// `RDB_VERSION` of redis-server 7.0.
pub(crate) const RDB_VERSION: u16 = 10;

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
/// `RDB_OPCODE_FUNCTION2`: one function library's code.
pub(crate) const OPCODE_FUNCTION2: u8 = 245;

/// quicklist.h's container kinds in a `QUICKLIST_2` node.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// Append the version and checksum footer.
pub(crate) fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(0, &body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// `verifyDumpPayload`: the body before the footer, if the version is one
/// this server reads and the checksum matches.
pub(crate) fn verify(payload: &[u8]) -> Option<&[u8]> {
    let body_len = payload.len().checked_sub(10)?;
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    if version > RDB_VERSION {
        return None;
    }
    let crc = u64::from_le_bytes(payload[body_len + 2..].try_into().ok()?);
    (crc64::crc64(0, &payload[..body_len + 2]) == crc).then_some(&payload[..body_len])
}

/// `rdbSaveLen`.
pub(crate) fn push_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if let Ok(n) = u32::try_from(n) {
        out.push(0x80);
        out.extend_from_slice(&n.to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// `RDB_ENCVAL << 6 | RDB_ENC_LZF`: an LZF-compressed string follows.
const ENC_LZF: u8 = 0xC3;

/// `rdbSaveRawString`: an integer that round-trips (`rdbTryIntegerEncoding`,
/// up to 11 bytes) as `RDB_ENC_INT8/16/32`; with `compress`
/// (`rdbcompression yes`) a string over 20 bytes that LZF shrinks by at
/// least four bytes as `rdbSaveLzfStringObject` writes it (the encoding,
/// the compressed and the original length, the bytes); anything else as
/// length and bytes.
pub(crate) fn push_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11 {
        if let Some(v) = super::cmd::parse_i64(s) {
            if let Ok(v) = i8::try_from(v) {
                out.extend_from_slice(&[0xC0, v as u8]);
                return;
            }
            if let Ok(v) = i16::try_from(v) {
                out.push(0xC1);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
            if let Ok(v) = i32::try_from(v) {
                out.push(0xC2);
                out.extend_from_slice(&v.to_le_bytes());
                return;
            }
        }
    }
    if compress && s.len() > 20 {
        if let Some(packed) = lzf::compress(s, s.len() - 4) {
            out.push(ENC_LZF);
            push_len(out, packed.len() as u64);
            push_len(out, s.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    push_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A sorted-set score in a listpack, as `zzlInsertAt` stores it: an
/// integer when `double2ll` says it is one, else `%.17g`.
fn listpack_score(score: f64) -> Vec<u8> {
    if score.is_finite() && score.fract() == 0.0 && score.abs() < 9.2e18 && score != 0.0 {
        return (score as i64).to_string().into_bytes();
    }
    super::zset::format_score(score).into_bytes()
}

/// The payload body for one value: type byte and object (`rdbSaveObject`),
/// with the encoding OBJECT ENCODING reports for it; strings LZF-compressed
/// when `compress` (`rdbcompression`).
pub(crate) fn dump_value(value: &Value, compress: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let encoding = super::cmd::keys::encoding(value);
    match value {
        Value::Str(s) => {
            out.push(TYPE_STRING);
            push_string(&mut out, s, compress);
        }
        Value::List(l) => {
            // One listpack per quicklist node, split where
            // `_quicklistNodeAllowInsert` splits a list pushed at its tail.
            out.push(TYPE_LIST_QUICKLIST_2);
            let layout = super::objsize::quicklist_layout(l.into_iter());
            push_len(&mut out, layout.len() as u64);
            let mut items = l.into_iter();
            for (count, _) in layout {
                let node: Vec<&[u8]> = items.by_ref().take(count).map(Vec::as_slice).collect();
                push_len(&mut out, CONTAINER_PACKED);
                push_string(&mut out, &listpack::encode(node), compress);
            }
        }
        Value::Set(s) if encoding == "intset" => {
            out.push(TYPE_SET_INTSET);
            let members: Vec<i64> = s.iter().filter_map(|m| super::cmd::parse_i64(m)).collect();
            push_string(&mut out, &listpack::encode_intset(&members), compress);
        }
        Value::Set(s) => {
            out.push(TYPE_SET);
            push_len(&mut out, s.len() as u64);
            for m in s {
                push_string(&mut out, m, compress);
            }
        }
        Value::ZSet(z) if encoding == "listpack" => {
            out.push(TYPE_ZSET_LISTPACK);
            let scores: Vec<(Vec<u8>, Vec<u8>)> = z.iter().map(|(m, s)| (m.to_vec(), listpack_score(s))).collect();
            let lp = listpack::encode(scores.iter().flat_map(|(m, s)| [m.as_slice(), s.as_slice()]));
            push_string(&mut out, &lp, compress);
        }
        Value::ZSet(z) => {
            // rdbSaveObject writes a skiplist from its tail, so that loading
            // inserts each element at the head.
            out.push(TYPE_ZSET_2);
            push_len(&mut out, z.len() as u64);
            for (m, s) in z.iter().rev() {
                push_string(&mut out, m, compress);
                out.extend_from_slice(&s.to_le_bytes());
            }
        }
        Value::Hash(h) if encoding == "listpack" => {
            out.push(TYPE_HASH_LISTPACK);
            let lp = listpack::encode(h.iter().flat_map(|(f, v)| [f.as_slice(), v.as_slice()]));
            push_string(&mut out, &lp, compress);
        }
        Value::Hash(h) => {
            out.push(TYPE_HASH);
            push_len(&mut out, h.len() as u64);
            for (f, v) in h {
                push_string(&mut out, f, compress);
                push_string(&mut out, v, compress);
            }
        }
    }
    out
}

/// A reader over a payload body (`rio` over a buffer).
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    /// `rdbLoadLenByRef`: a length, or (`Err`) the special encoding of a
    /// string that follows.
    fn len_or_enc(&mut self) -> Option<Result<u64, u8>> {
        let b = self.byte()?;
        Some(match b >> 6 {
            0 => Ok(u64::from(b & 0x3F)),
            1 => Ok((u64::from(b & 0x3F) << 8) | u64::from(self.byte()?)),
            2 if b == 0x80 => Ok(u64::from(u32::from_be_bytes(self.take(4)?.try_into().ok()?))),
            2 if b == 0x81 => Ok(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            2 => return None,
            _ => Err(b & 0x3F),
        })
    }

    fn len(&mut self) -> Option<u64> {
        self.len_or_enc()?.ok()
    }

    /// A length that must fit what is left of the payload (each element
    /// takes at least a byte): a hostile count cannot make us allocate.
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.len()?).ok()?;
        (n <= self.buf.len() - self.pos).then_some(n)
    }

    /// `rdbGenericLoadStringObject`.
    pub(crate) fn string(&mut self) -> Option<Vec<u8>> {
        match self.len_or_enc()? {
            Ok(n) => Some(self.take(usize::try_from(n).ok()?)?.to_vec()),
            Err(0) => Some((self.byte()? as i8).to_string().into_bytes()),
            Err(1) => Some(
                i16::from_le_bytes(self.take(2)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Err(2) => Some(
                i32::from_le_bytes(self.take(4)?.try_into().ok()?)
                    .to_string()
                    .into_bytes(),
            ),
            Err(3) => {
                let clen = usize::try_from(self.len()?).ok()?;
                let len = usize::try_from(self.len()?).ok()?;
                // LZF expands at most ~ 264 times; refuse a claim past that.
                if len > clen.saturating_mul(300) + 64 {
                    return None;
                }
                lzf::decompress(self.take(clen)?, len)
            }
            Err(_) => None,
        }
    }

    /// `rdbLoadDoubleValue`: RDB_TYPE_ZSET's scores as text.
    fn text_double(&mut self) -> Option<f64> {
        match self.byte()? {
            253 => Some(f64::NAN),
            254 => Some(f64::INFINITY),
            255 => Some(f64::NEG_INFINITY),
            n => std::str::from_utf8(self.take(usize::from(n))?).ok()?.parse().ok(),
        }
    }

    fn binary_double(&mut self) -> Option<f64> {
        Some(f64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// `rdbLoadObjectType` + `rdbLoadObject` for the value types the simulator
/// has. `None` is RESTORE's "Bad data format" (an unknown type, a
/// malformed blob, an empty collection).
pub(crate) fn load_value(body: &[u8], lim: &EncodingLimits) -> Option<Value> {
    let mut r = Reader::new(body);
    let ty = r.byte()?;
    let value = match ty {
        TYPE_STRING => Value::Str(r.string()?),
        TYPE_LIST => {
            let n = r.count()?;
            Value::List((0..n).map(|_| r.string()).collect::<Option<List>>()?)
        }
        TYPE_LIST_QUICKLIST_2 => Value::List(load_quicklist(&mut r)?),
        TYPE_SET => {
            let n = r.count()?;
            Value::Set(Set::from_members(
                (0..n).map(|_| r.string()).collect::<Option<Vec<_>>>()?,
                lim,
            ))
        }
        TYPE_SET_INTSET => Value::Set(Set::from_members(
            listpack::decode_intset(&r.string()?)?
                .into_iter()
                .map(|v| v.to_string().into_bytes()),
            lim,
        )),
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            let mut pairs = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?;
                let s = if ty == TYPE_ZSET {
                    r.text_double()?
                } else {
                    r.binary_double()?
                };
                pairs.push((m, s));
            }
            Value::ZSet(zset_from(pairs, lim)?)
        }
        TYPE_ZSET_LISTPACK => {
            let pairs = listpack_pairs(&r.string()?)?;
            let scored = pairs
                .into_iter()
                .map(|(m, s)| Some((m, super::cmd::strtod_full(&s)?)))
                .collect::<Option<Vec<_>>>()?;
            Value::ZSet(zset_from(scored, lim)?)
        }
        TYPE_HASH => {
            let n = r.count()?;
            let pairs = (0..n)
                .map(|_| Some((r.string()?, r.string()?)))
                .collect::<Option<Vec<_>>>()?;
            Value::Hash(hash_from(pairs, lim)?)
        }
        TYPE_HASH_LISTPACK => Value::Hash(hash_from(listpack_pairs(&r.string()?)?, lim)?),
        _ => return None,
    };
    (!value.is_empty_collection()).then_some(value)
}

/// `RDB_TYPE_LIST_QUICKLIST_2`: nodes, each a plain element or a listpack.
fn load_quicklist(r: &mut Reader<'_>) -> Option<List> {
    let nodes = r.count()?;
    let mut list = List::default();
    for _ in 0..nodes {
        let container = r.len()?;
        let blob = r.string()?;
        match container {
            CONTAINER_PLAIN => list.push_back(blob),
            CONTAINER_PACKED => listpack::decode(&blob)?.into_iter().for_each(|v| list.push_back(v)),
            _ => return None,
        }
    }
    Some(list)
}

/// A listpack of alternating entries, as pairs (an odd count is corrupt).
fn listpack_pairs(blob: &[u8]) -> Option<Vec<(Vec<u8>, Vec<u8>)>> {
    let items = listpack::decode(blob)?;
    if items.len() % 2 != 0 {
        return None;
    }
    let mut it = items.into_iter();
    let mut pairs = Vec::new();
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        pairs.push((a, b));
    }
    Some(pairs)
}

/// Members and scores; a NaN score is corrupt. Encoded as the load finds
/// them (`lim`).
fn zset_from(pairs: Vec<(Vec<u8>, f64)>, lim: &EncodingLimits) -> Option<ZSet> {
    let mut z = ZSet::default();
    for (m, s) in pairs {
        if s.is_nan() {
            return None;
        }
        z.insert(&m, s, lim);
    }
    z.settle_encoding(lim);
    Some(z)
}

/// Fields and values; a duplicate field is corrupt (`dictAdd` fails).
fn hash_from(pairs: Vec<(Vec<u8>, Vec<u8>)>, lim: &EncodingLimits) -> Option<Hash> {
    let mut seen = BTreeSet::new();
    for (f, _) in &pairs {
        if !seen.insert(f.as_slice()) {
            return None;
        }
    }
    Some(Hash::from_pairs(pairs, lim))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::config::Config;

    /// DUMP payloads redis-server 7.0.15 wrote (`redis-cli --no-raw DUMP`).
    #[test]
    fn reads_and_writes_what_redis_server_7_0_15_dumps() {
        let lim = Config::default().encoding_limits();
        let hash = b"\x10\x0c\x0c\x00\x00\x00\x02\x00\x81a\x02\x01\x01\xff\n\x00\x84\xa6\x93\xe8\xaa\x17\xe4\xdb";
        let body = verify(hash).expect("footer");
        let v = load_value(body, &lim).expect("hash");
        assert_eq!(
            v,
            Value::Hash(Hash::from_pairs(vec![(b"a".to_vec(), b"1".to_vec())], &lim))
        );
        assert_eq!(seal(dump_value(&v, true)), hash.to_vec());
        let mut bad = hash.to_vec();
        bad[3] ^= 1;
        assert_eq!(verify(&bad), None);
    }

    #[test]
    fn every_type_round_trips() {
        let lim = Config::default().encoding_limits();
        let mut z = ZSet::default();
        z.insert(b"a", 1.5, &lim);
        z.insert(b"b", 2.0, &lim);
        z.insert(b"c", -0.25, &lim);
        let mut big = ZSet::default();
        for i in 0..200 {
            big.insert(format!("m{i}").as_bytes(), f64::from(i) / 3.0, &lim);
        }
        let values = [
            Value::Str(b"hello".to_vec()),
            Value::Str(b"-123456".to_vec()),
            Value::Str(vec![b'x'; 20000]),
            Value::List((0..3000).map(|i| format!("item-{i}").into_bytes()).collect()),
            Value::Set(Set::from_members([b"1".to_vec(), b"-70000".to_vec()], &lim)),
            Value::Set(Set::from_members([b"a".to_vec(), b"1".to_vec()], &lim)),
            Value::ZSet(z),
            Value::ZSet(big),
            Value::Hash(Hash::from_pairs(
                (0..300)
                    .map(|i| (format!("f{i}").into_bytes(), vec![b'v'; i]))
                    .collect(),
                &lim,
            )),
        ];
        for v in values {
            let payload = seal(dump_value(&v, true));
            assert_eq!(load_value(verify(&payload).expect("footer"), &lim), Some(v));
        }
    }

    #[test]
    fn malformed_bodies_are_refused_without_panicking() {
        for body in [
            &b""[..],
            b"\x00",
            b"\x00\x05ab",
            b"\x01\x81\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x02\x00",
            b"\x10\x03abc",
            b"\x12\x01\x02\x04\x00\x00\x00\x00",
            b"\x00\xc3\x05\x80\x00\x00\x00\x00\x00",
            b"\x63",
        ] {
            assert_eq!(load_value(body, &Config::default().encoding_limits()), None, "{body:?}");
        }
    }
}

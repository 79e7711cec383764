//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SCARD, SPOP.
//!
//! Member order: redis-server 7.0 keeps a small set of integers as an
//! intset, sorted numerically, and anything else in a hash table whose
//! order depends on a per-process random seed. The simulator replies in
//! numeric order for the former (as redis-server does) and in byte order
//! for the latter (one of the orders redis-server could give); clients
//! must not depend on it, and the differential tests do not.

use std::collections::BTreeSet;

use super::{parse_i64, wrongtype};
use crate::reply::Reply;
use crate::server::db::Value;
use crate::server::Ctx;

type Members = BTreeSet<Vec<u8>>;

fn read_set<'a>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a Members>, Reply> {
    let db = cx.db;
    match cx.e.lookup_read(db, key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Set(s)) => Ok(Some(s)),
        Some(_) => Err(wrongtype()),
    }
}

fn set_for_write(cx: &mut Ctx<'_>, key: &[u8]) -> Result<(Members, Option<u64>), Reply> {
    let db = cx.db;
    match cx.e.lookup_write(db, key) {
        None => Ok((Members::new(), None)),
        Some(e) => match &e.value {
            Value::Set(s) => Ok((s.clone(), e.expires_at)),
            _ => Err(wrongtype()),
        },
    }
}

/// `SADD key member [member ...]`: how many were new.
pub(crate) fn sadd(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (mut s, ttl) = match set_for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let added = argv[2..].iter().filter(|m| s.insert(m.to_vec())).count();
    if added > 0 {
        cx.e.store(cx.db, &argv[1], Value::Set(s), ttl);
        cx.e.propagate(|| argv.to_vec());
    }
    Reply::Integer(added as i64)
}

/// `SREM key member [member ...]`: how many were removed; an emptied set
/// is deleted.
pub(crate) fn srem(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (mut s, ttl) = match set_for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let removed = argv[2..].iter().filter(|m| s.remove(m.as_slice())).count();
    if removed > 0 {
        if s.is_empty() {
            cx.e.delete(cx.db, &argv[1]);
        } else {
            cx.e.store(cx.db, &argv[1], Value::Set(s), ttl);
        }
        cx.e.propagate(|| argv.to_vec());
    }
    Reply::Integer(removed as i64)
}

/// `SMEMBERS key`: a set (an array on RESP2).
pub(crate) fn smembers(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_set(cx, &argv[1]) {
        Ok(None) => Reply::Set(Vec::new()),
        Ok(Some(s)) => Reply::Set(ordered(s).into_iter().map(|m| Reply::Bulk(m.clone())).collect()),
        Err(e) => e,
    }
}

/// Members in the order SMEMBERS gives them (see the module notes).
fn ordered(s: &Members) -> Vec<&Vec<u8>> {
    let ints: Option<Vec<(i64, &Vec<u8>)>> = if s.len() <= 512 {
        s.iter().map(|m| parse_i64(m).map(|n| (n, m))).collect()
    } else {
        None
    };
    match ints {
        Some(mut v) => {
            v.sort();
            v.into_iter().map(|(_, m)| m).collect()
        }
        None => s.iter().collect(),
    }
}

/// `SISMEMBER key member`
pub(crate) fn sismember(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_set(cx, &argv[1]) {
        Ok(s) => Reply::Integer(s.is_some_and(|s| s.contains(&argv[2])) as i64),
        Err(e) => e,
    }
}

/// `SCARD key`
pub(crate) fn scard(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_set(cx, &argv[1]) {
        Ok(s) => Reply::Integer(s.map_or(0, |s| s.len() as i64)),
        Err(e) => e,
    }
}

/// `SPOP key [count]` (t_set.c `spopCommand` / `spopWithCountCommand`):
/// removes members chosen with the node's seeded generator. Without a
/// count: one member or nil, propagated as `SREM key member`. With one: a
/// set reply (an empty one for a missing key or a count of 0), the whole
/// set when the count covers it (then the key is deleted and the deletion
/// propagated as `DEL`, as redis-server does), otherwise the chosen members,
/// propagated as one `SREM`.
pub(crate) fn spop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if argv.len() > 3 {
        return super::syntax_error();
    }
    let count = match argv.get(2) {
        None => None,
        Some(c) => match parse_i64(c) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return Reply::error("ERR value is out of range, must be positive"),
        },
    };
    let (mut s, ttl) = match set_for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if s.is_empty() || count == Some(0) {
        return match count {
            None => Reply::Nil,
            Some(_) => Reply::Set(Vec::new()),
        };
    }
    let take = count.unwrap_or(1).min(s.len() as u64) as usize;
    let mut popped = Members::new();
    for _ in 0..take {
        let i = (cx.e.random() % s.len() as u64) as usize;
        let m = s.iter().nth(i).cloned().unwrap_or_default();
        s.remove(&m);
        popped.insert(m);
    }
    if s.is_empty() {
        cx.e.delete(cx.db, &argv[1]);
    } else {
        cx.e.store(cx.db, &argv[1], Value::Set(s.clone()), ttl);
    }
    if count.is_some() && s.is_empty() {
        cx.e.propagate(|| vec![b"DEL".to_vec(), argv[1].clone()]);
    } else {
        let mut srem = vec![b"SREM".to_vec(), argv[1].clone()];
        srem.extend(popped.iter().cloned());
        cx.e.propagate(|| srem);
    }
    match count {
        None => Reply::Bulk(popped.into_iter().next().unwrap_or_default()),
        Some(_) => Reply::Set(ordered(&popped).into_iter().map(|m| Reply::Bulk(m.clone())).collect()),
    }
}

//! Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SCARD, SPOP.
//!
//! Member order: redis-server 7.0 keeps a small set of integers as an
//! intset, sorted numerically, and anything else in a hash table whose
//! order depends on a per-process random seed. The simulator replies in
//! numeric order for the former (as redis-server does) and in byte order
//! for the latter (one of the orders redis-server could give); clients
//! must not depend on it, and the differential tests do not.

use super::{cardinality, parse_i64, read_as, reply_read, write_as};
use crate::reply::Reply;
use crate::server::db::{Set, Value};
use crate::server::Ctx;

/// `SADD key member [member ...]`: how many were new.
pub(crate) fn sadd(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if let Err(e) = write_as::<Set>(cx.e, cx.db, &argv[1]) {
        return e;
    }
    let lim = cx.e.config.encoding_limits();
    let added = match cx.e.value_mut_or_insert(cx.db, &argv[1], Value::Set(Set::default())) {
        Value::Set(s) => argv[2..].iter().filter(|m| s.insert(m, &lim)).count(),
        _ => 0,
    };
    if added > 0 {
        cx.changed_as_sent(argv);
    }
    Reply::Integer(added as i64)
}

/// `SREM key member [member ...]`: how many were removed; an emptied set
/// is deleted.
pub(crate) fn srem(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let s = match write_as::<Set>(cx.e, cx.db, &argv[1]) {
        Ok(Some(s)) => s,
        Ok(None) => return Reply::Integer(0),
        Err(e) => return e,
    };
    let removed = argv[2..].iter().filter(|m| s.remove(m)).count();
    if removed > 0 {
        cx.changed_as_sent(argv);
    }
    Reply::Integer(removed as i64)
}

/// `SMEMBERS key`: a set (an array on RESP2).
pub(crate) fn smembers(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<Set>(cx, &argv[1]) {
        Ok(None) => Reply::Set(Vec::new()),
        Ok(Some(s)) => Reply::Set(
            ordered(s.iter(), s.is_intset())
                .into_iter()
                .map(|m| Reply::Bulk(m.clone()))
                .collect(),
        ),
        Err(e) => e,
    }
}

/// Members in the order SMEMBERS gives them (see the module notes): an
/// intset's numeric order, else byte order.
pub(crate) fn ordered<'a>(members: impl Iterator<Item = &'a Vec<u8>>, intset: bool) -> Vec<&'a Vec<u8>> {
    if !intset {
        return members.collect();
    }
    let mut v: Vec<(i64, &Vec<u8>)> = members.map(|m| (parse_i64(m).unwrap_or_default(), m)).collect();
    v.sort();
    v.into_iter().map(|(_, m)| m).collect()
}

/// `SISMEMBER key member`
pub(crate) fn sismember(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    reply_read(cx, &argv[1], |s: Option<&Set>| {
        Reply::Integer(s.is_some_and(|s| s.contains(&argv[2])) as i64)
    })
}

/// `SCARD key`
pub(crate) fn scard(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    cardinality(cx, argv, |s: &Set| s.len())
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
    let s = match write_as::<Set>(cx.e, cx.db, &argv[1]) {
        Ok(Some(s)) => s,
        Ok(None) => {
            return if count.is_none() {
                Reply::Nil
            } else {
                Reply::Set(Vec::new())
            }
        }
        Err(e) => return e,
    };
    if count == Some(0) {
        return Reply::Set(Vec::new());
    }
    let (len, intset) = (s.len(), s.is_intset());
    let take = count.unwrap_or(1).min(len as u64) as usize;
    // The draws first (each an index into the set as it shrinks), then the
    // removals, on the set where it is.
    let draws: Vec<u64> = (0..take).map(|_| cx.e.random()).collect();
    let mut popped = std::collections::BTreeSet::new();
    if let Ok(Some(s)) = write_as::<Set>(cx.e, cx.db, &argv[1]) {
        for r in draws {
            let i = (r % s.len() as u64) as usize;
            if let Some(m) = s.iter().nth(i).cloned() {
                s.remove(&m);
                popped.insert(m);
            }
        }
    }
    cx.e.changed(cx.db, &argv[1]);
    let emptied = cx.e.db(cx.db).get(&argv[1]).is_none();
    if count.is_some() && emptied {
        cx.e.propagate(|| vec![b"DEL".to_vec(), argv[1].clone()]);
    } else {
        let mut srem = vec![b"SREM".to_vec(), argv[1].clone()];
        srem.extend(popped.iter().cloned());
        cx.e.propagate(|| srem);
    }
    match count {
        None => Reply::Bulk(popped.into_iter().next().unwrap_or_default()),
        Some(_) => Reply::Set(
            ordered(popped.iter(), intset)
                .into_iter()
                .map(|m| Reply::Bulk(m.clone()))
                .collect(),
        ),
    }
}

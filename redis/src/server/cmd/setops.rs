//! Set algebra and the other set commands Redis's own tests use (t_set.c):
//! SINTER, SUNION, SDIFF and their STORE forms (`sinterGenericCommand`,
//! `sunionDiffGenericCommand`), SINTERCARD, SMISMEMBER, SMOVE and
//! SRANDMEMBER. Replies list members in the order SMEMBERS does (see
//! `cmd::sets`).

use std::collections::BTreeSet;

use super::{parse_i64, syntax_error, wrongtype};
use crate::reply::Reply;
use crate::server::db::{Set, Value};
use crate::server::{Ctx, Engine};

/// Every key's members (`None`: no key), or WRONGTYPE for the first key
/// of another type: the sets are all looked up before anything is done.
fn lookup_sets(e: &mut Engine, db: usize, keys: &[Vec<u8>]) -> Result<Vec<Option<BTreeSet<Vec<u8>>>>, Reply> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        match e.lookup_read(db, k).map(|en| &en.value) {
            None => out.push(None),
            Some(Value::Set(s)) => out.push(Some(s.iter().cloned().collect())),
            Some(_) => return Err(wrongtype()),
        }
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The members of `op` over the sets (a missing key is the empty set).
fn combine(sets: Vec<Option<BTreeSet<Vec<u8>>>>, op: Op) -> BTreeSet<Vec<u8>> {
    let mut it = sets.into_iter().map(Option::unwrap_or_default);
    let first = it.next().unwrap_or_default();
    it.fold(first, |acc, s| match op {
        Op::Inter => acc.intersection(&s).cloned().collect(),
        Op::Union => acc.union(&s).cloned().collect(),
        Op::Diff => acc.difference(&s).cloned().collect(),
    })
}

/// The reply to a set-valued command: the result as a set in SMEMBERS order.
fn reply_members(e: &Engine, members: BTreeSet<Vec<u8>>) -> Reply {
    let set = Set::from_members(members, &e.config.encoding_limits());
    Reply::Set(
        super::sets::ordered(set.iter(), set.is_intset())
            .into_iter()
            .map(|m| Reply::Bulk(m.clone()))
            .collect(),
    )
}

/// The STORE forms: a non-empty result replaces `dst` (`setKey`), an empty
/// one deletes it; the reply is the result's size.
fn store(e: &mut Engine, db: usize, dst: &[u8], members: BTreeSet<Vec<u8>>, argv: &[Vec<u8>]) -> Reply {
    let n = members.len();
    if n > 0 {
        let set = Set::from_members(members, &e.config.encoding_limits());
        e.store(db, dst, Value::Set(set), None);
    } else {
        e.delete(db, dst);
    }
    e.propagate(|| argv.to_vec());
    Reply::Integer(n as i64)
}

fn generic(cx: &mut Ctx<'_>, keys: &[Vec<u8>], dst: Option<&[u8]>, op: Op, argv: &[Vec<u8>]) -> Reply {
    let sets = match lookup_sets(cx.e, cx.db, keys) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let result = combine(sets, op);
    match dst {
        Some(d) => store(cx.e, cx.db, d, result, argv),
        None => reply_members(cx.e, result),
    }
}

/// `SINTER key [key ...]`
pub(crate) fn sinter(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, &argv[1..], None, Op::Inter, argv)
}

/// `SINTERSTORE destination key [key ...]`
pub(crate) fn sinterstore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, &argv[2..], Some(&argv[1]), Op::Inter, argv)
}

/// `SUNION key [key ...]`
pub(crate) fn sunion(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, &argv[1..], None, Op::Union, argv)
}

/// `SUNIONSTORE destination key [key ...]`
pub(crate) fn sunionstore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, &argv[2..], Some(&argv[1]), Op::Union, argv)
}

/// `SDIFF key [key ...]`
pub(crate) fn sdiff(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, &argv[1..], None, Op::Diff, argv)
}

/// `SDIFFSTORE destination key [key ...]`
pub(crate) fn sdiffstore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, &argv[2..], Some(&argv[1]), Op::Diff, argv)
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]` (`sinterCardCommand`).
pub(crate) fn sintercard(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let numkeys = match parse_i64(&argv[1]) {
        Some(n) if n >= 1 => n as usize,
        _ => return Reply::error("ERR numkeys should be greater than 0"),
    };
    if numkeys > argv.len() - 2 {
        return Reply::error("ERR Number of keys can't be greater than number of args");
    }
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < argv.len() {
        if super::is(&argv[j], "LIMIT") && j + 1 < argv.len() {
            j += 1;
            match parse_i64(&argv[j]) {
                Some(n) if n >= 0 => limit = n as usize,
                _ => return Reply::error("ERR LIMIT can't be negative"),
            }
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let sets = match lookup_sets(cx.e, cx.db, &argv[2..2 + numkeys]) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let n = combine(sets, Op::Inter).len();
    let n = if limit > 0 { n.min(limit) } else { n };
    Reply::Integer(n as i64)
}

/// `SMISMEMBER key member [member ...]`: a missing key is the empty set.
pub(crate) fn smismember(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let set = match lookup_sets(cx.e, cx.db, &argv[1..2]) {
        Ok(mut s) => s.pop().flatten().unwrap_or_default(),
        Err(e) => return e,
    };
    Reply::Array(
        argv[2..]
            .iter()
            .map(|m| Reply::Integer(i64::from(set.contains(m))))
            .collect(),
    )
}

/// `SMOVE source destination member` (`smoveCommand`).
pub(crate) fn smove(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (db, src, dst, member) = (cx.db, &argv[1], &argv[2], &argv[3]);
    let types = [src, dst].map(|k| {
        cx.e.lookup_write(db, k).map(|en| match &en.value {
            Value::Set(s) => Ok(s.contains(member)),
            _ => Err(()),
        })
    });
    let has = match types {
        [None, _] => return Reply::Integer(0),
        [Some(Err(())), _] | [_, Some(Err(()))] => return wrongtype(),
        [Some(Ok(has)), _] => has,
    };
    if src == dst {
        return Reply::Integer(i64::from(has));
    }
    if !has {
        return Reply::Integer(0);
    }
    if let Some(Value::Set(s)) = cx.e.value_mut(db, src) {
        s.remove(member);
    }
    cx.e.changed(db, src);
    let lim = cx.e.config.encoding_limits();
    if let Value::Set(s) = cx.e.value_mut_or_insert(db, dst, Value::Set(Set::default())) {
        s.insert(member, &lim);
    }
    cx.e.changed(db, dst);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `SRANDMEMBER key [count]` (`srandmemberWithCountCommand`): one member,
/// or `count` distinct ones (all when the set is smaller), or with a
/// negative count that many draws with repetition.
pub(crate) fn srandmember(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if argv.len() > 3 {
        return syntax_error();
    }
    let count = match argv.get(2).map(|c| parse_i64(c)) {
        None => None,
        Some(Some(i64::MIN)) => {
            return Reply::error(
                "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
            )
        }
        Some(Some(n)) => Some(n),
        Some(None) => return super::not_integer(),
    };
    let members: Vec<Vec<u8>> = match lookup_sets(cx.e, cx.db, &argv[1..2]) {
        Ok(mut s) => match s.pop().flatten() {
            Some(s) => s.into_iter().collect(),
            None if count.is_some() => return Reply::Array(Vec::new()),
            None => return Reply::Nil,
        },
        Err(e) => return e,
    };
    let Some(count) = count else {
        let i = (cx.e.random() % members.len() as u64) as usize;
        return Reply::Bulk(members[i].clone());
    };
    if count < 0 {
        let n = count.unsigned_abs();
        return Reply::Array(
            (0..n)
                .map(|_| Reply::Bulk(members[(cx.e.random() % members.len() as u64) as usize].clone()))
                .collect(),
        );
    }
    let n = count as usize;
    if n >= members.len() {
        return Reply::Array(members.into_iter().map(Reply::Bulk).collect());
    }
    let mut pool = members;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let i = (cx.e.random() % pool.len() as u64) as usize;
        out.push(Reply::Bulk(pool.swap_remove(i)));
    }
    Reply::Array(out)
}

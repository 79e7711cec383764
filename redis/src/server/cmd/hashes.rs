//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HDEL, HEXISTS, HLEN,
//! HKEYS, HVALS, HSTRLEN, HGETALL, HINCRBY, HINCRBYFLOAT, HRANDFIELD.
//!
//! Lesson 29 builds a reentrant lock from a hash (owner → hold count), the
//! way Redisson does; these are the commands its Lua script calls.

use super::{cardinality, int_arg, parse_i64, peek_as, read_as, reply_read, wrongtype, OVERFLOW};
use crate::reply::Reply;
use crate::server::db::{Hash, Value};
use crate::server::Ctx;

/// Set fields in the hash at `key` (created if missing, after the caller
/// type-checked it), then report the change; how many fields were new.
fn set_fields<'p>(cx: &mut Ctx<'_>, key: &[u8], pairs: impl Iterator<Item = (&'p [u8], Vec<u8>)>) -> i64 {
    let lim = cx.e.config.encoding_limits();
    let mut created = 0;
    if let Value::Hash(h) = cx.e.value_mut_or_insert(cx.db, key, Value::Hash(Hash::default())) {
        for (f, v) in pairs {
            created += h.insert(f, v, &lim) as i64;
        }
    }
    cx.e.changed(cx.db, key);
    created
}

fn find<'a>(h: &'a Hash, field: &[u8]) -> Option<&'a Vec<u8>> {
    h.get(field)
}

/// `HSET key field value [field value ...]`: the number of new fields.
pub(crate) fn hset(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if !argv.len().is_multiple_of(2) {
        return Reply::error("ERR wrong number of arguments for 'hset' command");
    }
    if let Err(e) = peek_as::<Hash>(cx, &argv[1]) {
        return e;
    }
    let pairs = argv[2..].chunks(2).map(|p| (p[0].as_slice(), p[1].clone()));
    let created = set_fields(cx, &argv[1], pairs);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(created)
}

/// `HGET key field`
pub(crate) fn hget(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<Hash>(cx, &argv[1]) {
        Ok(h) => h
            .and_then(|h| find(h, &argv[2]))
            .map_or(Reply::Nil, |v| Reply::Bulk(v.clone())),
        Err(e) => e,
    }
}

/// `HDEL key field [field ...]`: an emptied hash disappears.
pub(crate) fn hdel(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let h = match cx.e.value_mut(cx.db, &argv[1]) {
        None => return Reply::Integer(0),
        Some(Value::Hash(h)) => h,
        Some(_) => return wrongtype(),
    };
    let removed = argv[2..].iter().filter(|f| h.remove(f)).count() as i64;
    if removed > 0 {
        cx.changed_as_sent(argv);
    }
    Reply::Integer(removed)
}

/// `HEXISTS key field`
pub(crate) fn hexists(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    reply_read(cx, &argv[1], |h: Option<&Hash>| {
        Reply::Integer(h.and_then(|h| find(h, &argv[2])).is_some() as i64)
    })
}

/// `HLEN key`
pub(crate) fn hlen(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    cardinality(cx, argv, |h: &Hash| h.len())
}

/// `HGETALL key`: a map (flat array on RESP2), in insertion order.
pub(crate) fn hgetall(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<Hash>(cx, &argv[1]) {
        Ok(h) => Reply::Map(
            h.map(|h| {
                h.iter()
                    .map(|(f, v)| (Reply::Bulk(f.clone()), Reply::Bulk(v.clone())))
                    .collect()
            })
            .unwrap_or_default(),
        ),
        Err(e) => e,
    }
}

/// `HINCRBY key field increment`
pub(crate) fn hincrby(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let by = match int_arg(&argv[3]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let old = match peek_as::<Hash>(cx, &argv[1]) {
        Err(e) => return e,
        Ok(h) => match h.and_then(|h| find(h, &argv[2])) {
            None => 0,
            Some(v) => match parse_i64(v) {
                Some(n) => n,
                None => return Reply::error("ERR hash value is not an integer"),
            },
        },
    };
    let Some(new) = old.checked_add(by) else {
        return Reply::error(OVERFLOW);
    };
    set_fields(
        cx,
        &argv[1],
        std::iter::once((argv[2].as_slice(), new.to_string().into_bytes())),
    );
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(new)
}

/// `HMSET key field value [field value ...]`: HSET that answers `OK`.
pub(crate) fn hmset(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if !argv.len().is_multiple_of(2) {
        return Reply::error("ERR wrong number of arguments for 'hmset' command");
    }
    match hset(cx, argv) {
        Reply::Integer(_) => Reply::ok(),
        other => other,
    }
}

/// `HSETNX key field value`: 1 if the field was new and is now set.
pub(crate) fn hsetnx(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match peek_as::<Hash>(cx, &argv[1]) {
        Err(e) => return e,
        Ok(h) if h.and_then(|h| find(h, &argv[2])).is_some() => return Reply::Integer(0),
        Ok(_) => {}
    }
    set_fields(cx, &argv[1], std::iter::once((argv[2].as_slice(), argv[3].clone())));
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `HMGET key field [field ...]`: one bulk or nil per field.
pub(crate) fn hmget(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<Hash>(cx, &argv[1]) {
        Ok(h) => Reply::Array(
            argv[2..]
                .iter()
                .map(|f| {
                    h.and_then(|h| find(h, f))
                        .map_or(Reply::Nil, |v| Reply::Bulk(v.clone()))
                })
                .collect(),
        ),
        Err(e) => e,
    }
}

/// `HKEYS key` / `HVALS key`, in the order HGETALL gives.
fn keys_or_values(cx: &mut Ctx<'_>, key: &[u8], values: bool) -> Reply {
    match read_as::<Hash>(cx, key) {
        Ok(h) => Reply::Array(
            h.map(|h| {
                h.iter()
                    .map(|(f, v)| Reply::Bulk(if values { v.clone() } else { f.clone() }))
                    .collect()
            })
            .unwrap_or_default(),
        ),
        Err(e) => e,
    }
}

/// `HKEYS key`
pub(crate) fn hkeys(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    keys_or_values(cx, &argv[1], false)
}

/// `HVALS key`
pub(crate) fn hvals(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    keys_or_values(cx, &argv[1], true)
}

/// `HSTRLEN key field`: the value's length, 0 when missing.
pub(crate) fn hstrlen(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<Hash>(cx, &argv[1]) {
        Ok(h) => Reply::Integer(h.and_then(|h| find(h, &argv[2])).map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

/// `HINCRBYFLOAT key field increment` (t_hash.c `hincrbyfloatCommand`):
/// the increment is checked first (`value is NaN or Infinity`), then the
/// key's type, then the stored value (`hash value is not a float`); the
/// result is formatted as INCRBYFLOAT formats it and propagated as `HSET`.
pub(crate) fn hincrbyfloat(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    use crate::server::longdouble::{LdError, LongDouble};
    const NAN_INF: &str = "ERR increment would produce NaN or Infinity";
    let incr = match LongDouble::parse(&argv[3]) {
        Ok(v) => v,
        Err(LdError::Invalid) => return Reply::error("ERR value is not a valid float"),
        Err(LdError::Infinite) => return Reply::error("ERR value is NaN or Infinity"),
    };
    let value = match peek_as::<Hash>(cx, &argv[1]) {
        Err(e) => return e,
        Ok(h) => match h.and_then(|h| find(h, &argv[2])).map(|v| LongDouble::parse(v)) {
            None => LongDouble::parse(b"0"),
            Some(v) => v,
        },
    };
    let sum = match value {
        Err(LdError::Invalid) => return Reply::error("ERR hash value is not a float"),
        Err(LdError::Infinite) => return Reply::error(NAN_INF),
        Ok(v) => match v.add(&incr) {
            Some(s) => s,
            None => return Reply::error(NAN_INF),
        },
    };
    let text = sum.to_human().into_bytes();
    set_fields(cx, &argv[1], std::iter::once((argv[2].as_slice(), text.clone())));
    cx.e.propagate(|| super::argv(&[b"HSET", &argv[1], &argv[2], &text]));
    Reply::Bulk(text)
}

/// `HRANDFIELD key [count [WITHVALUES]]` (t_hash.c `hrandfieldCommand`),
/// drawing with the node's seeded generator: without a count one field or
/// nil; a negative count that many draws with repetition; a positive one
/// distinct fields (all of them, in HGETALL order, when it covers the
/// hash). With WITHVALUES, field/value pairs (a flat array on RESP2).
pub(crate) fn hrandfield(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (len, count, withvalues) = match super::rand_start(cx, argv, "WITHVALUES", |h: &Hash| h.len()) {
        Ok(start) => start,
        Err(reply) => return reply,
    };
    // The draws first, then one look at the hash: nothing is copied.
    let chosen = super::rand_picks(cx.e, len, count);
    let Some(Value::Hash(h)) = cx.e.db(cx.db).get(&argv[1]).map(|e| &e.value) else {
        return Reply::Nil;
    };
    if count.is_none() {
        return Reply::Bulk(h[chosen[0]].0.clone());
    }
    let picked = chosen.into_iter().map(|i| &h[i]);
    if withvalues {
        Reply::Pairs(
            picked
                .into_iter()
                .map(|(f, v)| (Reply::Bulk(f.clone()), Reply::Bulk(v.clone())))
                .collect(),
        )
    } else {
        Reply::Array(picked.into_iter().map(|(f, _)| Reply::Bulk(f.clone())).collect())
    }
}

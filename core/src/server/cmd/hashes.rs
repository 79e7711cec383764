//! Hash commands: HSET, HMSET, HSETNX, HGET, HMGET, HDEL, HEXISTS, HLEN,
//! HKEYS, HVALS, HSTRLEN, HGETALL, HINCRBY, HINCRBYFLOAT, HRANDFIELD.
//!
//! Lesson 29 builds a reentrant lock from a hash (owner → hold count), the
//! way Redisson does; these are the commands its Lua script calls.

use super::{int_arg, parse_i64, wrongtype, OVERFLOW};
use crate::reply::Reply;
use crate::server::db::{Entry, Value};
use crate::server::Ctx;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A key's hash, `None` when the key is missing; WRONGTYPE for a string.
fn hash_of(entry: Option<&Entry>) -> Result<Option<&Fields>, Reply> {
    match entry.map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Hash(h)) => Ok(Some(h)),
        Some(_) => Err(wrongtype()),
    }
}

fn read<'a>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a Fields>, Reply> {
    let db = cx.db;
    hash_of(cx.e.lookup_read(db, key))
}

/// The hash to modify: the existing one, or a new empty one. WRONGTYPE if
/// the key holds a string. The key's TTL is kept.
fn for_write(cx: &mut Ctx<'_>, key: &[u8]) -> Result<(Fields, Option<u64>), Reply> {
    let db = cx.db;
    let entry = cx.e.lookup_write(db, key);
    let ttl = entry.and_then(|e| e.expires_at);
    Ok((hash_of(entry)?.cloned().unwrap_or_default(), ttl))
}

fn find<'a>(h: &'a Fields, field: &[u8]) -> Option<&'a Vec<u8>> {
    h.iter().find(|(f, _)| f == field).map(|(_, v)| v)
}

/// `HSET key field value [field value ...]`: the number of new fields.
pub(crate) fn hset(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if !argv.len().is_multiple_of(2) {
        return Reply::error("ERR wrong number of arguments for 'hset' command");
    }
    let (mut h, ttl) = match for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let mut created = 0;
    for pair in argv[2..].chunks(2) {
        match h.iter_mut().find(|(f, _)| *f == pair[0]) {
            Some((_, v)) => *v = pair[1].clone(),
            None => {
                h.push((pair[0].clone(), pair[1].clone()));
                created += 1;
            }
        }
    }
    cx.e.store(cx.db, &argv[1], Value::Hash(h), ttl);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(created)
}

/// `HGET key field`
pub(crate) fn hget(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read(cx, &argv[1]) {
        Ok(h) => h
            .and_then(|h| find(h, &argv[2]))
            .map_or(Reply::Nil, |v| Reply::Bulk(v.clone())),
        Err(e) => e,
    }
}

/// `HDEL key field [field ...]`: an emptied hash disappears.
pub(crate) fn hdel(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (mut h, ttl) = match for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let before = h.len();
    for field in &argv[2..] {
        h.retain(|(f, _)| f != field);
    }
    let removed = (before - h.len()) as i64;
    if removed > 0 {
        if h.is_empty() {
            cx.e.delete(cx.db, &argv[1]);
        } else {
            cx.e.store(cx.db, &argv[1], Value::Hash(h), ttl);
        }
        cx.e.propagate(|| argv.to_vec());
    }
    Reply::Integer(removed)
}

/// `HEXISTS key field`
pub(crate) fn hexists(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read(cx, &argv[1]) {
        Ok(h) => Reply::Integer(h.and_then(|h| find(h, &argv[2])).is_some() as i64),
        Err(e) => e,
    }
}

/// `HLEN key`
pub(crate) fn hlen(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read(cx, &argv[1]) {
        Ok(h) => Reply::Integer(h.map_or(0, |h| h.len() as i64)),
        Err(e) => e,
    }
}

/// `HGETALL key`: a map (flat array on RESP2), in insertion order.
pub(crate) fn hgetall(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read(cx, &argv[1]) {
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
    let (mut h, ttl) = match for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let old = match find(&h, &argv[2]) {
        None => 0,
        Some(v) => match parse_i64(v) {
            Some(n) => n,
            None => return Reply::error("ERR hash value is not an integer"),
        },
    };
    let Some(new) = old.checked_add(by) else {
        return Reply::error(OVERFLOW);
    };
    let text = new.to_string().into_bytes();
    match h.iter_mut().find(|(f, _)| *f == argv[2]) {
        Some((_, v)) => *v = text,
        None => h.push((argv[2].clone(), text)),
    }
    cx.e.store(cx.db, &argv[1], Value::Hash(h), ttl);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(new)
}

/// Set `field` to `value` in `h`, keeping the field's place; whether it is
/// new.
fn put(h: &mut Fields, field: &[u8], value: Vec<u8>) -> bool {
    match h.iter_mut().find(|(f, _)| f == field) {
        Some((_, v)) => {
            *v = value;
            false
        }
        None => {
            h.push((field.to_vec(), value));
            true
        }
    }
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
    let (mut h, ttl) = match for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    if find(&h, &argv[2]).is_some() {
        return Reply::Integer(0);
    }
    put(&mut h, &argv[2], argv[3].clone());
    cx.e.store(cx.db, &argv[1], Value::Hash(h), ttl);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `HMGET key field [field ...]`: one bulk or nil per field.
pub(crate) fn hmget(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read(cx, &argv[1]) {
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
    match read(cx, key) {
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
    match read(cx, &argv[1]) {
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
    let (mut h, ttl) = match for_write(cx, &argv[1]) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let value = match find(&h, &argv[2]).map(|v| LongDouble::parse(v)) {
        None => LongDouble::parse(b"0"),
        Some(v) => v,
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
    put(&mut h, &argv[2], text.clone());
    cx.e.store(cx.db, &argv[1], Value::Hash(h), ttl);
    cx.e.propagate(|| super::argv(&[b"HSET", &argv[1], &argv[2], &text]));
    Reply::Bulk(text)
}

/// `HRANDFIELD key [count [WITHVALUES]]` (t_hash.c `hrandfieldCommand`),
/// drawing with the node's seeded generator: without a count one field or
/// nil; a negative count that many draws with repetition; a positive one
/// distinct fields (all of them, in HGETALL order, when it covers the
/// hash). With WITHVALUES, field/value pairs (a flat array on RESP2).
pub(crate) fn hrandfield(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    const LONG_MAX: i64 = i64::MAX;
    let mut withvalues = false;
    let mut count = None;
    if argv.len() >= 3 {
        let l = match parse_i64(&argv[2]) {
            None => return super::not_integer(),
            Some(l) if l < -LONG_MAX => {
                return Reply::error(format!(
                    "ERR value is out of range, value must between {} and {LONG_MAX}",
                    -LONG_MAX
                ))
            }
            Some(l) => l,
        };
        if argv.len() > 4 || (argv.len() == 4 && !super::is(&argv[3], "WITHVALUES")) {
            return super::syntax_error();
        }
        if argv.len() == 4 {
            withvalues = true;
            if !(-LONG_MAX / 2..=LONG_MAX / 2).contains(&l) {
                return Reply::error("ERR value is out of range");
            }
        }
        count = Some(l);
    }
    let h = match read(cx, &argv[1]) {
        Ok(Some(h)) => h.clone(),
        Ok(None) => {
            return if count.is_some() {
                Reply::Array(Vec::new())
            } else {
                Reply::Nil
            }
        }
        Err(e) => return e,
    };
    let Some(l) = count else {
        let i = (cx.e.random() % h.len() as u64) as usize;
        return Reply::Bulk(h[i].0.clone());
    };
    let picked: Vec<&(Vec<u8>, Vec<u8>)> = if l < 0 {
        (0..l.unsigned_abs())
            .map(|_| &h[(cx.e.random() % h.len() as u64) as usize])
            .collect()
    } else if l as u64 >= h.len() as u64 {
        h.iter().collect()
    } else {
        let mut left: Vec<usize> = (0..h.len()).collect();
        let mut chosen = Vec::new();
        for _ in 0..l {
            let i = (cx.e.random() % left.len() as u64) as usize;
            chosen.push(left.swap_remove(i));
        }
        chosen.sort_unstable();
        chosen.into_iter().map(|i| &h[i]).collect()
    };
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

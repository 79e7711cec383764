//! Hash commands: HSET, HGET, HDEL, HEXISTS, HLEN, HGETALL, HINCRBY.
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

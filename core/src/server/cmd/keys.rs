//! Generic key commands: DEL, EXISTS, TYPE, the EXPIRE family, TTL, PTTL,
//! PERSIST, KEYS, SCAN, DBSIZE, FLUSHALL.
//!
//! The expiry commands are the heart of the renewal lessons: a lock is
//! renewed by moving its deadline (`PEXPIRE`), and a key's TTL as the server
//! reports it (`PTTL`) is the only truthful answer to "do I still hold it?".

use super::{int_arg, is, syntax_error};
use crate::reply::Reply;
use crate::server::glob::glob_match;
use crate::server::Ctx;

/// `DEL key [key ...]`: how many existed. A bare DEL does not care whose
/// lock it deletes (lesson 05).
pub(crate) fn del(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let mut n = 0;
    for key in &argv[1..] {
        if cx.e.delete(cx.db, key) {
            n += 1;
        }
    }
    if n > 0 {
        cx.e.propagate(|| argv.to_vec());
    }
    Reply::Integer(n)
}

/// `EXISTS key [key ...]`: repeated keys count repeatedly.
pub(crate) fn exists(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let n = argv[1..].iter().filter(|k| cx.e.lookup_read(cx.db, k).is_some()).count();
    Reply::Integer(n as i64)
}

/// `TYPE key`
pub(crate) fn type_(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let name = cx.e.lookup_read(cx.db, &argv[1]).map_or("none", |e| e.value.type_name());
    Reply::status(name)
}

/// `EXPIRE key seconds [NX | XX | GT | LT]`
pub(crate) fn expire(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now() as i64;
    expire_generic(cx, argv, now, true)
}

/// `PEXPIRE key milliseconds [NX | XX | GT | LT]`: the renewal primitive.
pub(crate) fn pexpire(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now() as i64;
    expire_generic(cx, argv, now, false)
}

/// `EXPIREAT key unix-seconds [NX | XX | GT | LT]`
pub(crate) fn expireat(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    expire_generic(cx, argv, 0, true)
}

/// `PEXPIREAT key unix-ms [NX | XX | GT | LT]`: what the others propagate as.
pub(crate) fn pexpireat(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    expire_generic(cx, argv, 0, false)
}

/// redis-server's `expireGenericCommand`, in its order: options first, then
/// the number, then overflow, then the key. A deadline already in the past
/// deletes the key (and is propagated as DEL).
fn expire_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], base: i64, seconds: bool) -> Reply {
    let name = String::from_utf8_lossy(&argv[0]).to_lowercase();
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &argv[3..] {
        if is(opt, "NX") {
            nx = true;
        } else if is(opt, "XX") {
            xx = true;
        } else if is(opt, "GT") {
            gt = true;
        } else if is(opt, "LT") {
            lt = true;
        } else {
            return Reply::error(format!("ERR Unsupported option {}", String::from_utf8_lossy(opt)));
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::error("ERR GT and LT options at the same time are not compatible");
    }
    let mut when = match int_arg(&argv[2]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return super::strings::invalid_expire(&name);
        }
        when *= 1000;
    }
    if when > i64::MAX - base {
        return super::strings::invalid_expire(&name);
    }
    when += base;

    let key = &argv[1];
    let Some(current) = cx.e.lookup_write(cx.db, key).map(|e| e.expires_at) else {
        return Reply::Integer(0);
    };
    let current = current.map(|c| c as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return Reply::Integer(0);
    }
    if when <= cx.e.now() as i64 {
        cx.e.delete(cx.db, key);
        cx.e.propagate(|| super::strings::argv_del(key));
    } else {
        cx.e.set_deadline(cx.db, key, Some(when as u64));
        cx.e.propagate(|| super::argv(&[b"PEXPIREAT", key, when.to_string().as_bytes()]));
    }
    Reply::Integer(1)
}

/// `TTL key`: seconds, rounded to nearest; -1 without TTL, -2 when missing.
pub(crate) fn ttl(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    ttl_generic(cx, &argv[1], false)
}

/// `PTTL key`: milliseconds; -1 without TTL, -2 when missing.
pub(crate) fn pttl(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    ttl_generic(cx, &argv[1], true)
}

fn ttl_generic(cx: &mut Ctx<'_>, key: &[u8], ms: bool) -> Reply {
    let now = cx.e.now();
    let Some(entry) = cx.e.lookup_read(cx.db, key) else {
        return Reply::Integer(-2);
    };
    match entry.expires_at {
        None => Reply::Integer(-1),
        Some(at) => {
            let left = at.saturating_sub(now) as i64;
            Reply::Integer(if ms { left } else { (left + 500) / 1000 })
        }
    }
}

/// `PERSIST key`: 1 if a TTL was removed.
pub(crate) fn persist(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let has_ttl = cx.e.lookup_write(cx.db, &argv[1]).is_some_and(|e| e.expires_at.is_some());
    if !has_ttl {
        return Reply::Integer(0);
    }
    cx.e.set_deadline(cx.db, &argv[1], None);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `KEYS pattern`, in key order (redis-server's order is its hash table's).
pub(crate) fn keys(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now();
    let pattern = &argv[1];
    let all = pattern.as_slice() == b"*";
    let found = cx
        .e
        .db(cx.db)
        .keys()
        .filter(|(_, e)| e.expires_at.is_none_or(|at| at >= now))
        .filter(|(k, _)| all || glob_match(pattern, k, false))
        .map(|(k, _)| Reply::Bulk(k.clone()))
        .collect();
    Reply::Array(found)
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`. The cursor is a
/// position in key order; COUNT keys are examined per call, as COUNT
/// buckets are in redis-server.
pub(crate) fn scan(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let cursor = match std::str::from_utf8(&argv[1]).ok().and_then(|s| s.parse::<u64>().ok()) {
        Some(c) if argv[1].iter().all(u8::is_ascii_digit) => c,
        _ => return Reply::error("ERR invalid cursor"),
    };
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < argv.len() {
        let Some(value) = argv.get(i + 1) else {
            return syntax_error();
        };
        if is(&argv[i], "COUNT") {
            count = match int_arg(value) {
                Ok(n) if n >= 1 => n,
                Ok(_) => return syntax_error(),
                Err(e) => return e,
            };
        } else if is(&argv[i], "MATCH") {
            pattern = Some(value);
        } else if is(&argv[i], "TYPE") {
            type_name = Some(value);
        } else {
            return syntax_error();
        }
        i += 2;
    }
    let now = cx.e.now();
    let db = cx.e.db(cx.db);
    let total = db.len() as u64;
    let take = count as u64;
    let found: Vec<Reply> = db
        .keys()
        .skip(cursor.min(total) as usize)
        .take(take as usize)
        .filter(|(_, e)| e.expires_at.is_none_or(|at| at >= now))
        .filter(|(k, _)| pattern.is_none_or(|p| glob_match(p, k, false)))
        .filter(|(_, e)| type_name.is_none_or(|t| t.eq_ignore_ascii_case(e.value.type_name().as_bytes())))
        .map(|(k, _)| Reply::Bulk(k.clone()))
        .collect();
    let next = cursor.saturating_add(take);
    let next = if next >= total { 0 } else { next };
    Reply::Array(vec![Reply::Bulk(next.to_string().into_bytes()), Reply::Array(found)])
}

/// `DBSIZE`
pub(crate) fn dbsize(cx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> Reply {
    Reply::Integer(cx.e.db(cx.db).len() as i64)
}

/// `FLUSHALL [ASYNC | SYNC]`
pub(crate) fn flushall(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if argv.len() > 2 || argv.get(1).is_some_and(|a| !is(a, "SYNC") && !is(a, "ASYNC")) {
        return syntax_error();
    }
    cx.e.flush(None);
    cx.e.propagate(|| super::argv(&[b"FLUSHALL"]));
    Reply::ok()
}

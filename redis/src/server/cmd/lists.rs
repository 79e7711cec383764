//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
//! LINDEX, LREM, LMOVE, RPOPLPUSH and the blocking BLPOP, BRPOP, BLMOVE,
//! BRPOPLPUSH (see `server::blocking` for how a client waits). LINSERT,
//! LSET, LTRIM, LPOS, LMPOP and BLMPOP are `cmd::listops`.
//!
//! python-redis-lock is built on them: a waiter sleeps in
//! `BLPOP lock-signal:<name> <timeout>`, and the release script pushes one
//! element there to wake exactly one waiter.

use super::{cardinality, int_arg, is, read_as, syntax_error, write_as};
use crate::reply::Reply;
use crate::server::blocking::{parse_timeout, BlockKind, BlockRequest};
use crate::server::db::{List, Value};
use crate::server::encoded;
use crate::server::{Ctx, Engine};

/// Is there a list at `key` (`Ok(false)`: no key), or WRONGTYPE?
fn has_list(e: &mut Engine, db: usize, key: &[u8]) -> Result<bool, Reply> {
    write_as::<List>(e, db, key).map(|l| l.is_some())
}

/// Push `v` onto the list at `key`, creating it; `Engine::changed` is the
/// caller's.
fn push_onto(e: &mut Engine, db: usize, key: &[u8], left: bool, v: Vec<u8>) -> usize {
    match e.value_mut_or_insert(db, key, Value::List(List::default())) {
        Value::List(l) => {
            l.push(left, v);
            l.len()
        }
        _ => 0,
    }
}

/// `pushGenericCommand`: the new length. The X variants push only onto an
/// existing list.
fn push(cx: &mut Ctx<'_>, argv: &[Vec<u8>], left: bool, only_existing: bool) -> Reply {
    let (db, key) = (cx.db, &argv[1]);
    match has_list(cx.e, db, key) {
        Ok(false) if only_existing => return Reply::Integer(0),
        Ok(_) => {}
        Err(e) => return e,
    }
    let mut len = 0;
    for v in &argv[2..] {
        len = push_onto(cx.e, db, key, left, v.clone());
    }
    cx.e.changed(db, key);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(len as i64)
}

/// `LPUSH key element [element ...]`
pub(crate) fn lpush(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    push(cx, argv, true, false)
}

/// `RPUSH key element [element ...]`
pub(crate) fn rpush(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    push(cx, argv, false, false)
}

/// `LPUSHX key element [element ...]`
pub(crate) fn lpushx(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    push(cx, argv, true, true)
}

/// `RPUSHX key element [element ...]`
pub(crate) fn rpushx(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    push(cx, argv, false, true)
}

/// `popGenericCommand`: `LPOP key [count]`. Without a count, a bulk (nil
/// when missing); with one, an array (nil array when missing).
fn pop(cx: &mut Ctx<'_>, argv: &[Vec<u8>], left: bool) -> Reply {
    let name = String::from_utf8_lossy(&argv[0]).to_lowercase();
    if argv.len() > 3 {
        return Reply::error(format!("ERR wrong number of arguments for '{name}' command"));
    }
    let count = match argv.get(2).map(|c| int_arg(c)) {
        None => None,
        Some(Ok(n)) if n >= 0 => Some(n as usize),
        Some(Ok(_)) => return Reply::error("ERR value is out of range, must be positive"),
        Some(Err(e)) => return e,
    };
    let list = match write_as::<List>(cx.e, cx.db, &argv[1]) {
        Ok(Some(l)) => l,
        Ok(None) => return if count.is_some() { Reply::NilArray } else { Reply::Nil },
        Err(e) => return e,
    };
    let reply = match count {
        None => list.pop(left).map_or(Reply::Nil, Reply::Bulk),
        Some(0) => return Reply::Array(Vec::new()),
        Some(count) => {
            let n = count.min(list.len());
            Reply::Array((0..n).filter_map(|_| list.pop(left)).map(Reply::Bulk).collect())
        }
    };
    cx.changed_as_sent(argv);
    reply
}

/// `LPOP key [count]`
pub(crate) fn lpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    pop(cx, argv, true)
}

/// `RPOP key [count]`
pub(crate) fn rpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    pop(cx, argv, false)
}

/// `LLEN key`
pub(crate) fn llen(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    cardinality(cx, argv, |l: &List| l.len())
}

/// `LRANGE key start stop`: `addListRangeReply`'s index rules.
pub(crate) fn lrange(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (start, end) = match (int_arg(&argv[2]), int_arg(&argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    // The elements go out as bytes, without a copy each, when the host
    // takes replies so (see `encoded`).
    let mut direct = cx.e.encoded.lend();
    let reply = match read_as::<List>(cx, &argv[1]) {
        Ok(Some(list)) => range_reply(list, start, end, direct.as_mut()),
        Ok(None) => Reply::Array(Vec::new()),
        Err(e) => e,
    };
    if let Some(bytes) = direct {
        cx.e.encoded.give_back(bytes);
    }
    reply
}

/// LRANGE's elements `start..=end`, as a reply or (given `direct`) written
/// into it, the reply then a placeholder.
fn range_reply(list: &List, start: i64, end: i64, direct: Option<&mut Vec<u8>>) -> Reply {
    let Some((start, end)) = index_range(start, end, list.len()) else {
        return Reply::Array(Vec::new());
    };
    match direct {
        Some(out) => {
            encoded::bulk_array(out, end - start + 1, list.range(start..=end).map(Vec::as_slice));
            Reply::Nil
        }
        None => Reply::Array(list.range(start..=end).map(|v| Reply::Bulk(v.clone())).collect()),
    }
}

/// `addListRangeReply`'s (and LTRIM's) index rules: negative indexes count
/// from the end, the start is clamped to 0 and the end to the last index;
/// `None` when the range is empty.
pub(super) fn index_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { start + len } else { start }.max(0);
    let end = if end < 0 { end + len } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// `LINDEX key index`
pub(crate) fn lindex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let index = match int_arg(&argv[2]) {
        Ok(i) => i,
        Err(e) => return e,
    };
    match read_as::<List>(cx, &argv[1]) {
        Ok(Some(l)) => {
            let i = if index < 0 { index + l.len() as i64 } else { index };
            usize::try_from(i)
                .ok()
                .and_then(|i| l.get(i))
                .map_or(Reply::Nil, |v| Reply::Bulk(v.clone()))
        }
        Ok(None) => Reply::Nil,
        Err(e) => e,
    }
}

/// `LREM key count element`: from the head for count > 0, from the tail
/// for count < 0, all for 0.
pub(crate) fn lrem(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let count = match int_arg(&argv[2]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    let list = match write_as::<List>(cx.e, cx.db, &argv[1]) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::Integer(0),
        Err(e) => return e,
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let removed = list.remove_equal(&argv[3], limit, count < 0);
    if removed > 0 {
        cx.changed_as_sent(argv);
    }
    Reply::Integer(removed as i64)
}

/// `getListPositionFromObjectOrReply`: LEFT or RIGHT.
fn position(arg: &[u8]) -> Result<bool, Reply> {
    if is(arg, "LEFT") {
        Ok(true)
    } else if is(arg, "RIGHT") {
        Ok(false)
    } else {
        Err(syntax_error())
    }
}

/// `lmoveGenericCommand`: pop from `src`, push onto `dst`, reply the
/// element; nil when `src` is missing. Both keys are type-checked first.
fn lmove_generic(e: &mut Engine, db: usize, src: &[u8], dst: &[u8], from_left: bool, to_left: bool) -> Reply {
    match has_list(e, db, src) {
        Ok(true) => {}
        Ok(false) => return Reply::Nil,
        Err(err) => return err,
    }
    if let Err(err) = has_list(e, db, dst) {
        return err;
    }
    let Some(v) = write_as::<List>(e, db, src)
        .ok()
        .flatten()
        .and_then(|l| l.pop(from_left))
    else {
        return Reply::Nil;
    };
    // Pushed before the source is checked for emptiness, as redis-server
    // does: rotating a one-element list keeps the key and its TTL.
    push_onto(e, db, dst, to_left, v.clone());
    e.changed(db, src);
    e.changed(db, dst);
    let side = |left: bool| if left { &b"LEFT"[..] } else { b"RIGHT" };
    e.propagate(|| super::argv(&[b"LMOVE", src, dst, side(from_left), side(to_left)]));
    Reply::Bulk(v)
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`
pub(crate) fn lmove(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (from, to) = match (position(&argv[3]), position(&argv[4])) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    lmove_generic(cx.e, cx.db, &argv[1], &argv[2], from, to)
}

/// `RPOPLPUSH source destination`
pub(crate) fn rpoplpush(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    lmove_generic(cx.e, cx.db, &argv[1], &argv[2], false, true)
}

/// The timeout argument as an absolute deadline (`None`: forever).
pub(crate) fn deadline(e: &Engine, arg: &[u8]) -> Result<(u64, Option<u64>), Reply> {
    let ms = parse_timeout(arg)?;
    if ms == 0 {
        return Ok((0, None));
    }
    if ms > i64::MAX as u64 - e.now() {
        return Err(Reply::error("ERR timeout is out of range"));
    }
    Ok((ms, Some(e.now() + ms)))
}

/// `blockingPopGenericCommand`: pop from the first non-empty list of
/// `keys`, or block on all of them.
fn bpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>], left: bool) -> Reply {
    let keys = &argv[1..argv.len() - 1];
    let (timeout_ms, deadline) = match deadline(cx.e, &argv[argv.len() - 1]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    for key in keys {
        match has_list(cx.e, cx.db, key) {
            Ok(true) => {
                return serve_blocked(cx.e, cx.db, key, &BlockKind::Pop { left }).unwrap_or(Reply::NilArray);
            }
            Ok(false) => {}
            Err(e) => return e,
        }
    }
    if !cx.e.may_block() {
        return Reply::NilArray;
    }
    cx.e.blocking.request = Some(BlockRequest {
        keys: keys.to_vec(),
        deadline,
        timeout_ms,
        kind: BlockKind::Pop { left },
    });
    Reply::NilArray
}

/// `BLPOP key [key ...] timeout`
pub(crate) fn blpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    bpop(cx, argv, true)
}

/// `BRPOP key [key ...] timeout`
pub(crate) fn brpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    bpop(cx, argv, false)
}

/// `blmoveGenericCommand`
fn bmove(cx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from_left: bool, to_left: bool, timeout: &[u8]) -> Reply {
    let (timeout_ms, deadline) = match deadline(cx.e, timeout) {
        Ok(d) => d,
        Err(e) => return e,
    };
    match has_list(cx.e, cx.db, src) {
        Err(e) => return e,
        Ok(true) => return lmove_generic(cx.e, cx.db, src, dst, from_left, to_left),
        Ok(false) => {}
    }
    let kind = BlockKind::Move {
        dst: dst.to_vec(),
        from_left,
        to_left,
    };
    if cx.e.may_block() {
        cx.e.blocking.request = Some(BlockRequest {
            keys: vec![src.to_vec()],
            deadline,
            timeout_ms,
            kind,
        });
    }
    Reply::Nil
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`
pub(crate) fn blmove(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (from, to) = match (position(&argv[3]), position(&argv[4])) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    bmove(cx, &argv[1], &argv[2], from, to, &argv[5])
}

/// `BRPOPLPUSH source destination timeout`
pub(crate) fn brpoplpush(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    bmove(cx, &argv[1], &argv[2], false, true, &argv[3])
}

/// `serveClientBlockedOnList`: pop one element of the list at `key` for a
/// blocked client; `None` if there is no list there (nothing to serve).
/// Propagated as the non-blocking command, as redis-server rewrites it.
pub(crate) fn serve_blocked(e: &mut Engine, db: usize, key: &[u8], kind: &BlockKind) -> Option<Reply> {
    match kind {
        BlockKind::Pop { left } => {
            let v = write_as::<List>(e, db, key).ok()??.pop(*left)?;
            e.changed(db, key);
            e.propagate(|| super::argv(&[if *left { b"LPOP" } else { b"RPOP" }, key]));
            Some(Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Bulk(v)]))
        }
        BlockKind::ZPop { max } => super::bzpop::serve_zpop(e, db, key, *max),
        BlockKind::MPop { left, count } => super::listops::serve_mpop(e, db, key, *left, *count),
        BlockKind::ZMPop { max, count } => super::bzpop::serve_zmpop(e, db, key, *max, *count),
        BlockKind::Move {
            dst,
            from_left,
            to_left,
        } => has_list(e, db, key)
            .ok()?
            .then(|| lmove_generic(e, db, key, dst, *from_left, *to_left)),
    }
}

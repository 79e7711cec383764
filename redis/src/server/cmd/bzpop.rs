//! `BZPOPMIN` / `BZPOPMAX` (t_zset.c `blockingGenericZpopCommand`): pop
//! the lowest / highest member of the first non-empty sorted set of the
//! keys, or wait for one on the blocking machinery BLPOP uses
//! (`server::blocking`; a ZADD signals the key ready as an LPUSH does);
//! and `ZMPOP` / `BZMPOP` (`zmpopGenericCommand`), which pop up to a count
//! from the first of numkeys sorted sets.

use super::wrongtype;
use crate::reply::Reply;
use crate::server::blocking::{BlockKind, BlockRequest};
use crate::server::db::Value;
use crate::server::zset::format_score;
use crate::server::{Ctx, Engine};

/// `BZPOPMIN key [key ...] timeout`
pub(crate) fn bzpopmin(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    bzpop(cx, argv, false)
}

/// `BZPOPMAX key [key ...] timeout`
pub(crate) fn bzpopmax(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    bzpop(cx, argv, true)
}

/// `blockingGenericZpopCommand`: the timeout is read first, then each key
/// in order (a key of another type answers WRONGTYPE, a missing one is
/// skipped); the first sorted set is popped, else the client blocks
/// (inside MULTI or a script it gets the null array at once).
fn bzpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>], max: bool) -> Reply {
    let keys = &argv[1..argv.len() - 1];
    let (timeout_ms, deadline) = match super::lists::deadline(cx.e, &argv[argv.len() - 1]) {
        Ok(d) => d,
        Err(e) => return e,
    };
    for key in keys {
        match cx.e.value_mut(cx.db, key) {
            None => continue,
            Some(Value::ZSet(_)) => return serve_zpop(cx.e, cx.db, key, max).unwrap_or(Reply::NilArray),
            Some(_) => return wrongtype(),
        }
    }
    if cx.e.may_block() {
        cx.e.blocking.request = Some(BlockRequest {
            keys: keys.to_vec(),
            deadline,
            timeout_ms,
            kind: BlockKind::ZPop { max },
        });
    }
    Reply::NilArray
}

/// `serveClientBlockedOnSortedSet` (and the non-blocking path): pop one
/// member, reply `[key, member, score]`, propagate as `ZPOPMIN key` /
/// `ZPOPMAX key` (`rewriteClientCommandVector`). `None` when there is no
/// sorted set at `key`.
pub(crate) fn serve_zpop(e: &mut Engine, db: usize, key: &[u8], max: bool) -> Option<Reply> {
    let Some(Value::ZSet(z)) = e.value_mut(db, key) else {
        return None;
    };
    let (member, score) = z.pop(max)?;
    e.changed(db, key);
    e.propagate(|| super::argv(&[if max { b"ZPOPMAX" } else { b"ZPOPMIN" }, key]));
    Some(Reply::Array(vec![
        Reply::Bulk(key.to_vec()),
        Reply::Bulk(member),
        Reply::Double(format_score(score)),
    ]))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]` (`zmpopCommand`):
/// `[key, [[member, score] ...]]` from the first sorted set, nil array
/// when there is none (`cmd::listops::mpop`, shared with LMPOP).
pub(crate) fn zmpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    super::listops::mpop(cx, argv, super::listops::Of::ZSets, false)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]` (`bzmpopCommand`)
pub(crate) fn bzmpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    super::listops::mpop(cx, argv, super::listops::Of::ZSets, true)
}

/// Pop up to `count` members of the sorted set at `key`: reply `[key,
/// [[member, score] ...]]` (nested in RESP2 too), propagate as `ZPOPMIN key
/// n` / `ZPOPMAX key n`. `None` when there is no sorted set at `key`.
pub(crate) fn serve_zmpop(e: &mut Engine, db: usize, key: &[u8], max: bool, count: usize) -> Option<Reply> {
    let Some(Value::ZSet(z)) = e.value_mut(db, key) else {
        return None;
    };
    let n = count.min(z.len());
    let popped: Vec<Reply> = (0..n)
        .filter_map(|_| z.pop(max))
        .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(format_score(s))]))
        .collect();
    e.changed(db, key);
    let n = n.to_string();
    e.propagate(|| super::argv(&[if max { b"ZPOPMAX" } else { b"ZPOPMIN" }, key, n.as_bytes()]));
    Some(Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Array(popped)]))
}

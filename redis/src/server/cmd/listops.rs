//! The list commands Redis's own tests use beyond a lock's needs (t_list.c):
//! LINSERT, LSET, LTRIM, LPOS, and LMPOP with its blocking form BLMPOP (on
//! the machinery BLPOP uses, `server::blocking`).

use super::{int_arg, is, parse_i64, read_as, syntax_error, write_as, wrongtype};
use crate::reply::Reply;
use crate::server::blocking::{BlockKind, BlockRequest};
use crate::server::db::{List, Value};
use crate::server::{Ctx, Engine};

/// `LINSERT key BEFORE|AFTER pivot element` (`linsertCommand`): the new
/// length, -1 when the pivot is not there, 0 when the key is missing.
pub(crate) fn linsert(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let after = if is(&argv[2], "AFTER") {
        true
    } else if is(&argv[2], "BEFORE") {
        false
    } else {
        return syntax_error();
    };
    let list = match write_as::<List>(cx.e, cx.db, &argv[1]) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::Integer(0),
        Err(e) => return e,
    };
    let Some(at) = list.iter().position(|v| *v == argv[3]) else {
        return Reply::Integer(-1);
    };
    list.insert(at + usize::from(after), argv[4].clone());
    let len = list.len();
    cx.changed_as_sent(argv);
    Reply::Integer(len as i64)
}

/// `LSET key index element` (`lsetCommand`): the key is looked up before
/// the index is parsed.
pub(crate) fn lset(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let list = match write_as::<List>(cx.e, cx.db, &argv[1]) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::error("ERR no such key"),
        Err(e) => return e,
    };
    let index = match int_arg(&argv[2]) {
        Ok(i) => i,
        Err(e) => return e,
    };
    let at = if index < 0 { index + list.len() as i64 } else { index };
    if !usize::try_from(at).is_ok_and(|at| list.set(at, argv[3].clone())) {
        return Reply::error("ERR index out of range");
    }
    cx.changed_as_sent(argv);
    Reply::ok()
}

/// `LTRIM key start stop` (`ltrimCommand`): LRANGE's index rules; a range
/// that is empty empties (and so deletes) the list.
pub(crate) fn ltrim(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (start, end) = match (int_arg(&argv[2]), int_arg(&argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let list = match write_as::<List>(cx.e, cx.db, &argv[1]) {
        Ok(Some(l)) => l,
        Ok(None) => return Reply::ok(),
        Err(e) => return e,
    };
    let llen = list.len();
    let (ltrim, rtrim) = match super::lists::index_range(start, end, llen) {
        None => (llen, 0),
        Some((start, end)) => (start, llen - end - 1),
    };
    list.trim(ltrim, rtrim);
    cx.changed_as_sent(argv);
    Reply::ok()
}

/// `getPositiveLongFromObjectOrReply` with a message: the message for a
/// negative number and for one that is not a number alike.
fn positive(arg: &[u8], msg: &str) -> Result<i64, Reply> {
    match parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Reply::error(format!("ERR {msg}"))),
    }
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`
/// (`lposCommand`): the options are parsed before the key is looked up;
/// without COUNT the reply is one index or nil, with it an array.
// long: transcribes lposCommand's option loop and search in their order
pub(crate) fn lpos(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (mut rank, mut count, mut maxlen) = (1i64, -1i64, 0i64);
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let opt = &argv[j];
        let parsed = if is(opt, "RANK") && more {
            int_arg(&argv[j + 1]).and_then(|r| {
                if r == 0 {
                    Err(Reply::error(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                    ))
                } else {
                    rank = r;
                    Ok(())
                }
            })
        } else if is(opt, "COUNT") && more {
            positive(&argv[j + 1], "COUNT can't be negative").map(|c| count = c)
        } else if is(opt, "MAXLEN") && more {
            positive(&argv[j + 1], "MAXLEN can't be negative").map(|m| maxlen = m)
        } else {
            Err(syntax_error())
        };
        if let Err(e) = parsed {
            return e;
        }
        j += 2;
    }
    // A negative rank searches from the tail.
    let from_tail = rank < 0;
    let rank = rank.unsigned_abs();
    let list = match read_as::<List>(cx, &argv[1]) {
        Ok(Some(l)) => l,
        Ok(None) if count != -1 => return Reply::Array(Vec::new()),
        Ok(None) => return Reply::Nil,
        Err(e) => return e,
    };
    let llen = list.len();
    let limit = if maxlen == 0 {
        llen
    } else {
        (maxlen as u64).min(llen as u64) as usize
    };
    let mut found = Vec::new();
    let mut matches = 0u64;
    for index in 0..limit {
        let at = if from_tail { llen - index - 1 } else { index };
        if list[at] != argv[2] {
            continue;
        }
        matches += 1;
        if matches >= rank {
            found.push(Reply::Integer(at as i64));
            if count == -1 || (count != 0 && matches - rank + 1 >= count as u64) {
                break;
            }
        }
    }
    if count != -1 {
        Reply::Array(found)
    } else {
        found.pop().unwrap_or(Reply::Nil)
    }
}

/// `lmpopGenericCommand` / `zmpopGenericCommand`'s arguments: numkeys at
/// `numkeys_at`, the keys, a side (`sides.0` or `sides.1`: LEFT|RIGHT,
/// MIN|MAX), then an optional COUNT. Returns the keys, whether the side is
/// `sides.0`, and the count.
pub(super) fn parse_mpop<'a>(
    argv: &'a [Vec<u8>],
    numkeys_at: usize,
    sides: (&str, &str),
) -> Result<(&'a [Vec<u8>], bool, usize), Reply> {
    let numkeys = match parse_i64(&argv[numkeys_at]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(Reply::error("ERR numkeys should be greater than 0")),
    };
    let where_at = (numkeys_at as u64 + 1).saturating_add(numkeys);
    if where_at >= argv.len() as u64 {
        return Err(syntax_error());
    }
    let where_at = where_at as usize;
    let first = match &argv[where_at] {
        w if is(w, sides.0) => true,
        w if is(w, sides.1) => false,
        _ => return Err(syntax_error()),
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < argv.len() {
        if count.is_none() && is(&argv[j], "COUNT") && j + 1 < argv.len() {
            match parse_i64(&argv[j + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err(Reply::error("ERR count should be greater than 0")),
            }
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok((&argv[numkeys_at + 1..where_at], first, count.unwrap_or(1)))
}

/// What a multi-key pop takes from: lists (LMPOP, BLMPOP) or sorted sets
/// (ZMPOP, BZMPOP).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Of {
    Lists,
    ZSets,
}

/// `lmpopGenericCommand` and `zmpopGenericCommand` (alike in 7.0), with
/// `mpopGenericCommand` / `genericZpopCommand` behind them: pop from the
/// first key that holds one (a missing key is skipped, another type is
/// WRONGTYPE), else the nil array. The blocking forms read their timeout
/// (`argv[1]`) after the other arguments, and wait where they may
/// (`blockingPopGenericCommand`, `blockingGenericZpopCommand`).
pub(super) fn mpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>], of: Of, block: bool) -> Reply {
    let sides = if of == Of::Lists {
        ("LEFT", "RIGHT")
    } else {
        ("MAX", "MIN")
    };
    let (keys, first, count) = match parse_mpop(argv, 1 + usize::from(block), sides) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let wait = match block.then(|| super::lists::deadline(cx.e, &argv[1])) {
        Some(Err(e)) => return e,
        Some(Ok(d)) => Some(d),
        None => None,
    };
    for key in keys {
        let served = match (of, cx.e.value_mut(cx.db, key)) {
            (_, None) => continue,
            (Of::Lists, Some(Value::List(_))) => serve_mpop(cx.e, cx.db, key, first, count),
            (Of::ZSets, Some(Value::ZSet(_))) => super::bzpop::serve_zmpop(cx.e, cx.db, key, first, count),
            _ => return wrongtype(),
        };
        return served.unwrap_or(Reply::NilArray);
    }
    if let (Some((timeout_ms, deadline)), true) = (wait, cx.e.may_block()) {
        let kind = match of {
            Of::Lists => BlockKind::MPop { left: first, count },
            Of::ZSets => BlockKind::ZMPop { max: first, count },
        };
        cx.e.blocking.request = Some(BlockRequest {
            keys: keys.to_vec(),
            deadline,
            timeout_ms,
            kind,
        });
    }
    Reply::NilArray
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: `[key,
/// [element ...]]` from the first list.
pub(crate) fn lmpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    mpop(cx, argv, Of::Lists, false)
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`
pub(crate) fn blmpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    mpop(cx, argv, Of::Lists, true)
}

/// `listPopRangeAndReplyWithKey`: pop up to `count` elements of the list at
/// `key`, reply `[key, [elements]]`, propagate as `LPOP key n` / `RPOP key
/// n`. `None` when there is no list there.
pub(crate) fn serve_mpop(e: &mut Engine, db: usize, key: &[u8], left: bool, count: usize) -> Option<Reply> {
    let list = write_as::<List>(e, db, key).ok()??;
    let n = count.min(list.len());
    let popped: Vec<Reply> = (0..n).filter_map(|_| list.pop(left)).map(Reply::Bulk).collect();
    e.changed(db, key);
    let n = n.to_string();
    e.propagate(|| super::argv(&[if left { b"LPOP" } else { b"RPOP" }, key, n.as_bytes()]));
    Some(Reply::Array(vec![Reply::Bulk(key.to_vec()), Reply::Array(popped)]))
}

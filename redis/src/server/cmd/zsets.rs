//! Sorted-set commands: ZADD (NX, XX, GT, LT, CH, INCR), ZINCRBY, ZREM,
//! ZCARD, ZSCORE, ZRANK, ZREVRANK, ZCOUNT, the ZRANGE family (by rank,
//! BYSCORE, BYLEX, REV, LIMIT, WITHSCORES; ZREVRANGE, ZRANGEBYSCORE,
//! ZREVRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGEBYLEX; ZRANGESTORE), ZLEXCOUNT,
//! ZREMRANGEBYSCORE, ZREMRANGEBYRANK, ZREMRANGEBYLEX, ZPOPMIN, ZPOPMAX,
//! ZMSCORE, ZRANDMEMBER. The algebra (ZUNION …) is `cmd::zsetops`, the
//! multi-key pops `cmd::bzpop`.
//!
//! redis-semaphore keeps a semaphore's holders as members scored by their
//! acquire time: `ZREMRANGEBYSCORE` drops the expired ones, `ZCARD` counts
//! the rest, `ZADD` joins, `ZREM` leaves. Scores are replied with
//! `addReplyDouble` (`%.17g`, a RESP3 double), transcribed in
//! `server::zset::format_score`.

use super::{cardinality, double_arg, int_arg, is, read_as, strtod_full, syntax_error, write_as, wrongtype};
use crate::reply::Reply;
use crate::server::db::{Value, ZSet};
use crate::server::zset::format_score;
use crate::server::Ctx;

fn double(d: f64) -> Reply {
    Reply::Double(format_score(d))
}

/// `zaddGenericCommand` and `zsetAdd`: options, then every score parsed
/// before anything changes, then the key.
// long: transcribes zaddGenericCommand in its order, which decides the error a bad line gets
fn zadd_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], mut incr: bool) -> Reply {
    let (mut nx, mut xx, mut gt, mut lt, mut ch) = (false, false, false, false, false);
    let mut at = 2;
    while at < argv.len() {
        let o = &argv[at];
        if is(o, "NX") {
            nx = true;
        } else if is(o, "XX") {
            xx = true;
        } else if is(o, "CH") {
            ch = true;
        } else if is(o, "INCR") {
            incr = true;
        } else if is(o, "GT") {
            gt = true;
        } else if is(o, "LT") {
            lt = true;
        } else {
            break;
        }
        at += 1;
    }
    let rest = &argv[at..];
    if rest.is_empty() || rest.len() % 2 == 1 {
        return syntax_error();
    }
    if nx && xx {
        return Reply::error("ERR XX and NX options at the same time are not compatible");
    }
    if ((gt || lt) && nx) || (gt && lt) {
        return Reply::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if incr && rest.len() > 2 {
        return Reply::error("ERR INCR option supports a single increment-element pair");
    }
    let mut pairs = Vec::with_capacity(rest.len() / 2);
    for p in rest.chunks(2) {
        match double_arg(&p[0]) {
            Ok(s) => pairs.push((s, &p[1])),
            Err(e) => return e,
        }
    }
    let key = &argv[1];
    match write_as::<ZSet>(cx.e, cx.db, key) {
        Ok(Some(_)) => {}
        Ok(None) if xx => return if incr { Reply::Nil } else { Reply::Integer(0) },
        Ok(None) => {}
        Err(e) => return e,
    }
    let lim = cx.e.config.encoding_limits();
    let z = match cx.e.value_mut_or_insert(cx.db, key, Value::ZSet(ZSet::default())) {
        Value::ZSet(z) => z,
        _ => return wrongtype(),
    };
    let (mut added, mut updated, mut processed) = (0, 0, 0);
    let mut last = 0.0;
    let mut error = None;
    for (mut score, member) in pairs {
        match z.score(member) {
            Some(cur) => {
                if nx {
                    continue;
                }
                if incr {
                    score += cur;
                    if score.is_nan() {
                        error = Some(Reply::error("ERR resulting score is not a number (NaN)"));
                        break;
                    }
                }
                if (lt && score >= cur) || (gt && score <= cur) {
                    continue;
                }
                if score != cur {
                    z.insert(member, score, &lim);
                    updated += 1;
                }
                processed += 1;
                last = score;
            }
            None if !xx => {
                z.insert(member, score, &lim);
                added += 1;
                processed += 1;
                last = score;
            }
            None => {}
        }
    }
    // Also when nothing changed: a set just made for this ZADD is then
    // empty, and goes.
    cx.e.changed_if(cx.db, key, added + updated > 0);
    if added + updated > 0 {
        cx.e.propagate(|| argv.to_vec());
    }
    if let Some(e) = error {
        return e;
    }
    if incr {
        if processed > 0 {
            double(last)
        } else {
            Reply::Nil
        }
    } else {
        Reply::Integer(if ch { added + updated } else { added })
    }
}

/// `ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]`
pub(crate) fn zadd(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zadd_generic(cx, argv, false)
}

/// `ZINCRBY key increment member`
pub(crate) fn zincrby(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zadd_generic(cx, argv, true)
}

/// `ZREM key member [member ...]`
pub(crate) fn zrem(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let z = match write_as::<ZSet>(cx.e, cx.db, &argv[1]) {
        Ok(Some(z)) => z,
        Ok(None) => return Reply::Integer(0),
        Err(e) => return e,
    };
    let removed = argv[2..].iter().filter(|m| z.remove(m).is_some()).count();
    if removed > 0 {
        cx.changed_as_sent(argv);
    }
    Reply::Integer(removed as i64)
}

/// `ZCARD key`
pub(crate) fn zcard(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    cardinality(cx, argv, ZSet::len)
}

/// `ZSCORE key member`
pub(crate) fn zscore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<ZSet>(cx, &argv[1]) {
        Ok(z) => z.and_then(|z| z.score(&argv[2])).map_or(Reply::Nil, double),
        Err(e) => e,
    }
}

fn rank(cx: &mut Ctx<'_>, argv: &[Vec<u8>], rev: bool) -> Reply {
    match read_as::<ZSet>(cx, &argv[1]) {
        Ok(Some(z)) => match z.rank(&argv[2]) {
            Some(r) if rev => Reply::Integer((z.len() - 1 - r) as i64),
            Some(r) => Reply::Integer(r as i64),
            None => Reply::Nil,
        },
        Ok(None) => Reply::Nil,
        Err(e) => e,
    }
}

/// `ZRANK key member`
pub(crate) fn zrank(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    rank(cx, argv, false)
}

/// `ZREVRANK key member`
pub(crate) fn zrevrank(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    rank(cx, argv, true)
}

/// A score interval (`zslParseRange`): `(` makes a bound exclusive.
#[derive(Clone, Copy, Debug)]
struct ScoreRange {
    min: f64,
    minex: bool,
    max: f64,
    maxex: bool,
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let bound = |b: &[u8]| match b.first() {
            Some(b'(') => strtod_full(&b[1..]).map(|v| (v, true)),
            _ => strtod_full(b).map(|v| (v, false)),
        };
        let ((min, minex), (max, maxex)) = (bound(min)?, bound(max)?);
        Some(ScoreRange { min, minex, max, maxex })
    }

    fn contains(&self, s: f64) -> bool {
        let above = if self.minex { s > self.min } else { s >= self.min };
        let below = if self.maxex { s < self.max } else { s <= self.max };
        above && below
    }
}

/// A lexicographic interval (`zslParseLexRange`): `[x` / `(x`, `-`, `+`.
#[derive(Clone, Debug)]
enum LexBound {
    NegInf,
    PosInf,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

impl LexBound {
    fn parse(b: &[u8]) -> Option<LexBound> {
        match b.first() {
            Some(b'+') if b.len() == 1 => Some(LexBound::PosInf),
            Some(b'-') if b.len() == 1 => Some(LexBound::NegInf),
            Some(b'(') => Some(LexBound::Excl(b[1..].to_vec())),
            Some(b'[') => Some(LexBound::Incl(b[1..].to_vec())),
            _ => None,
        }
    }

    fn above_min(&self, m: &[u8]) -> bool {
        match self {
            LexBound::NegInf => true,
            LexBound::PosInf => false,
            LexBound::Incl(v) => m >= v.as_slice(),
            LexBound::Excl(v) => m > v.as_slice(),
        }
    }

    fn below_max(&self, m: &[u8]) -> bool {
        match self {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(v) => m <= v.as_slice(),
            LexBound::Excl(v) => m < v.as_slice(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

/// `zrangeGenericCommand`: `fixed` is the range type a legacy command
/// implies (ZRANGEBYSCORE), `rev` its direction (ZREVRANGE…).
fn zrange_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], fixed: RangeType, rev: Option<bool>) -> Reply {
    zrange_at(cx, argv, 1, fixed, rev)
}

/// [`zrange_generic`] with the source key at `argv[at]` (`argc_start`):
/// 2 for ZRANGESTORE, whose `argv[1]` is the destination; it takes no
/// WITHSCORES, and stores the result instead of replying it.
// long: transcribes zrangeGenericCommand's option parsing in its order, which decides the error a bad line gets
fn zrange_at(cx: &mut Ctx<'_>, argv: &[Vec<u8>], at: usize, fixed: RangeType, rev: Option<bool>) -> Reply {
    let store = at == 2;
    let mut rangetype = fixed;
    let mut direction = rev;
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = at + 3;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = &argv[j];
        if !store && is(a, "WITHSCORES") {
            withscores = true;
        } else if is(a, "LIMIT") && left >= 2 {
            match (int_arg(&argv[j + 1]), int_arg(&argv[j + 2])) {
                (Ok(o), Ok(l)) => (offset, limit) = (o, l),
                (Err(e), _) | (_, Err(e)) => return e,
            }
            j += 2;
        } else if direction.is_none() && is(a, "REV") {
            direction = Some(true);
        } else if rangetype == RangeType::Auto && is(a, "BYLEX") {
            rangetype = RangeType::Lex;
        } else if rangetype == RangeType::Auto && is(a, "BYSCORE") {
            rangetype = RangeType::Score;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let rev = direction.unwrap_or(false);
    if rangetype == RangeType::Auto {
        rangetype = RangeType::Rank;
    }
    if limit != -1 && rangetype == RangeType::Rank {
        return Reply::error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if withscores && rangetype == RangeType::Lex {
        return Reply::error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let (mut minarg, mut maxarg) = (&argv[at + 1], &argv[at + 2]);
    if rev && rangetype != RangeType::Rank {
        std::mem::swap(&mut minarg, &mut maxarg);
    }
    enum Parsed {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexBound, LexBound),
    }
    let parsed = match rangetype {
        RangeType::Score => match ScoreRange::parse(minarg, maxarg) {
            Some(r) => Parsed::Score(r),
            None => return Reply::error("ERR min or max is not a float"),
        },
        RangeType::Lex => match (LexBound::parse(minarg), LexBound::parse(maxarg)) {
            (Some(a), Some(b)) => Parsed::Lex(a, b),
            _ => return Reply::error("ERR min or max not valid string range item"),
        },
        _ => match (int_arg(minarg), int_arg(maxarg)) {
            (Ok(a), Ok(b)) => Parsed::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
    };
    let z = match read_as::<ZSet>(cx, &argv[at]) {
        Ok(Some(z)) => z,
        Ok(None) if store => return store_range(cx, argv, Vec::new()),
        Ok(None) => return Reply::Array(Vec::new()),
        Err(e) => return e,
    };
    let picked: Vec<(&[u8], f64)> = match parsed {
        Parsed::Rank(start, end) => {
            let len = z.len() as i64;
            let mut start = if start < 0 { start + len } else { start };
            let end = if end < 0 { end + len } else { end };
            start = start.max(0);
            if start > end || start >= len {
                Vec::new()
            } else {
                let end = end.min(len - 1);
                let n = (end - start + 1) as usize;
                if rev {
                    z.iter().rev().skip(start as usize).take(n).collect()
                } else {
                    z.iter().skip(start as usize).take(n).collect()
                }
            }
        }
        Parsed::Score(r) => {
            let mut all: Vec<(&[u8], f64)> = if rev {
                z.iter().rev().filter(|(_, s)| r.contains(*s)).collect()
            } else {
                z.iter().filter(|(_, s)| r.contains(*s)).collect()
            };
            apply_limit(&mut all, offset, limit);
            all
        }
        Parsed::Lex(min, max) => {
            let inside = |m: &[u8]| min.above_min(m) && max.below_max(m);
            let mut all: Vec<(&[u8], f64)> = if rev {
                z.iter().rev().filter(|(m, _)| inside(m)).collect()
            } else {
                z.iter().filter(|(m, _)| inside(m)).collect()
            };
            apply_limit(&mut all, offset, limit);
            all
        }
    };
    if store {
        let picked = picked.into_iter().map(|(m, s)| (m.to_vec(), s)).collect();
        return store_range(cx, argv, picked);
    }
    if withscores {
        Reply::Pairs(
            picked
                .into_iter()
                .map(|(m, s)| (Reply::Bulk(m.to_vec()), double(s)))
                .collect(),
        )
    } else {
        Reply::Array(picked.into_iter().map(|(m, _)| Reply::Bulk(m.to_vec())).collect())
    }
}

/// `zrangeResultFinalizeStore`: a non-empty result replaces the
/// destination (`setKey`), an empty one deletes it; the reply is its size.
fn store_range(cx: &mut Ctx<'_>, argv: &[Vec<u8>], picked: Vec<(Vec<u8>, f64)>) -> Reply {
    let lim = cx.e.config.encoding_limits();
    let n = picked.len();
    if n > 0 {
        let mut z = ZSet::default();
        for (m, s) in &picked {
            z.insert(m, *s, &lim);
        }
        z.settle_encoding(&lim);
        cx.e.store(cx.db, &argv[1], Value::ZSet(z), None);
        cx.e.propagate(|| argv.to_vec());
    } else if cx.e.delete(cx.db, &argv[1]) {
        cx.e.propagate(|| argv.to_vec());
    }
    Reply::Integer(n as i64)
}

/// `ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]`
pub(crate) fn zrangestore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_at(cx, argv, 2, RangeType::Auto, None)
}

/// LIMIT as `genericZrangebyscoreCommand` applies it: a negative offset
/// skips everything (`while (offset--)` never reaches 0), a negative
/// count means all.
fn apply_limit<T>(v: &mut Vec<T>, offset: i64, limit: i64) {
    if offset < 0 {
        v.clear();
        return;
    }
    let off = (offset as usize).min(v.len());
    v.drain(..off);
    if limit >= 0 {
        v.truncate(limit as usize);
    }
}

/// `ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`
pub(crate) fn zrange(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_generic(cx, argv, RangeType::Auto, None)
}

/// `ZREVRANGE key start stop [WITHSCORES]`
pub(crate) fn zrevrange(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_generic(cx, argv, RangeType::Rank, Some(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`
pub(crate) fn zrangebyscore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_generic(cx, argv, RangeType::Score, Some(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`
pub(crate) fn zrevrangebyscore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_generic(cx, argv, RangeType::Score, Some(true))
}

/// `ZCOUNT key min max`
pub(crate) fn zcount(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let Some(r) = ScoreRange::parse(&argv[2], &argv[3]) else {
        return Reply::error("ERR min or max is not a float");
    };
    match read_as::<ZSet>(cx, &argv[1]) {
        Ok(z) => Reply::Integer(z.map_or(0, |z| z.iter().filter(|(_, s)| r.contains(*s)).count() as i64)),
        Err(e) => e,
    }
}

/// `ZREMRANGEBYSCORE key min max`: how many were removed.
pub(crate) fn zremrangebyscore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let Some(r) = ScoreRange::parse(&argv[2], &argv[3]) else {
        return Reply::error("ERR min or max is not a float");
    };
    remove_where(cx, argv, |z| {
        z.iter()
            .filter(|(_, s)| r.contains(*s))
            .map(|(m, _)| m.to_vec())
            .collect()
    })
}

/// `ZREMRANGEBYRANK key start stop`: rank indexes as ZRANGE's.
pub(crate) fn zremrangebyrank(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (start, end) = match (int_arg(&argv[2]), int_arg(&argv[3])) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    remove_where(cx, argv, |z| {
        let len = z.len() as i64;
        let start = if start < 0 { start + len } else { start }.max(0);
        let end = if end < 0 { end + len } else { end };
        if start > end || start >= len {
            return Vec::new();
        }
        let end = end.min(len - 1);
        z.iter()
            .skip(start as usize)
            .take((end - start + 1) as usize)
            .map(|(m, _)| m.to_vec())
            .collect()
    })
}

/// Remove the members `victims` picks; reply how many.
fn remove_where(cx: &mut Ctx<'_>, argv: &[Vec<u8>], victims: impl FnOnce(&ZSet) -> Vec<Vec<u8>>) -> Reply {
    let z = match write_as::<ZSet>(cx.e, cx.db, &argv[1]) {
        Ok(Some(z)) => z,
        Ok(None) => return Reply::Integer(0),
        Err(e) => return e,
    };
    let gone = victims(z);
    for m in &gone {
        z.remove(m);
    }
    if !gone.is_empty() {
        cx.changed_as_sent(argv);
    }
    Reply::Integer(gone.len() as i64)
}

/// `zpopMinMaxCommand` and `genericZpopCommand` (t_zset.c, 7.0) for one
/// key: more than one count is a syntax error; the count is parsed before
/// the key is looked up (`getPositiveLongFromObjectOrReply`, whose one text
/// covers a non-number too); a missing key or a count of 0 is an empty
/// array (after the type check). Without a count the reply is one flat
/// `member, score` pair; with one it is the pairs, nested in RESP3
/// (`use_nested_array`) and flat in RESP2. An emptied set is deleted. 7.0
/// propagates the command as it was typed (only ZMPOP and the blocking pops
/// are rewritten).
fn zpop(cx: &mut Ctx<'_>, argv: &[Vec<u8>], max: bool) -> Reply {
    if argv.len() > 3 {
        return syntax_error();
    }
    let count = match argv.get(2) {
        None => None,
        Some(c) => match super::parse_i64(c) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return Reply::error("ERR value is out of range, must be positive"),
        },
    };
    let z = match write_as::<ZSet>(cx.e, cx.db, &argv[1]) {
        Ok(Some(z)) => z,
        Ok(None) => return Reply::Array(Vec::new()),
        Err(e) => return e,
    };
    if count == Some(0) {
        return Reply::Array(Vec::new());
    }
    let take = count.unwrap_or(1).min(z.len() as u64) as usize;
    let mut popped = Vec::with_capacity(take);
    for _ in 0..take {
        match z.pop(max) {
            Some((member, score)) => popped.push((Reply::Bulk(member), double(score))),
            None => break,
        }
    }
    cx.changed_as_sent(argv);
    match count {
        Some(_) => Reply::Pairs(popped),
        None => Reply::Array(popped.into_iter().flat_map(|(m, s)| [m, s]).collect()),
    }
}

/// `ZPOPMIN key [count]`
pub(crate) fn zpopmin(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zpop(cx, argv, false)
}

/// `ZPOPMAX key [count]`
pub(crate) fn zpopmax(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zpop(cx, argv, true)
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]` (`zrangebylexCommand`:
/// `zrangeGenericCommand` with the lex range type fixed).
pub(crate) fn zrangebylex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_generic(cx, argv, RangeType::Lex, Some(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`
pub(crate) fn zrevrangebylex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    zrange_generic(cx, argv, RangeType::Lex, Some(true))
}

/// The lex range of `min`/`max`, or `zslParseLexRange`'s error.
fn lex_range(min: &[u8], max: &[u8]) -> Result<(LexBound, LexBound), Reply> {
    match (LexBound::parse(min), LexBound::parse(max)) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(Reply::error("ERR min or max not valid string range item")),
    }
}

/// `ZLEXCOUNT key min max` (`zlexcountCommand`): the range is parsed
/// before the key is looked up.
pub(crate) fn zlexcount(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (min, max) = match lex_range(&argv[2], &argv[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match read_as::<ZSet>(cx, &argv[1]) {
        Ok(z) => Reply::Integer(z.map_or(0, |z| {
            z.iter().filter(|(m, _)| min.above_min(m) && max.below_max(m)).count() as i64
        })),
        Err(e) => e,
    }
}

/// `ZREMRANGEBYLEX key min max` (`zremrangeGenericCommand` with
/// `ZRANGE_LEX`): how many were removed.
pub(crate) fn zremrangebylex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (min, max) = match lex_range(&argv[2], &argv[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    remove_where(cx, argv, |z| {
        z.iter()
            .filter(|(m, _)| min.above_min(m) && max.below_max(m))
            .map(|(m, _)| m.to_vec())
            .collect()
    })
}

/// `ZMSCORE key member [member ...]` (`zmscoreCommand`): a nil for each
/// member that is not there (all nils for a missing key).
pub(crate) fn zmscore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_as::<ZSet>(cx, &argv[1]) {
        Ok(z) => Reply::Array(
            argv[2..]
                .iter()
                .map(|m| z.and_then(|z| z.score(m)).map_or(Reply::Nil, double))
                .collect(),
        ),
        Err(e) => e,
    }
}

/// `ZRANDMEMBER key [count [WITHSCORES]]` (`zrandmemberCommand`,
/// `zrandmemberWithCountCommand`): HRANDFIELD's rules — one member, or
/// `count` distinct ones (all when the set is smaller), or with a negative
/// count that many draws with repetition; the draws come from the
/// engine's seeded generator.
pub(crate) fn zrandmember(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (len, count, withscores) = match super::rand_start(cx, argv, "WITHSCORES", ZSet::len) {
        Ok(start) => start,
        Err(reply) => return reply,
    };
    let mut chosen = super::rand_picks(cx.e, len, count);
    if count.is_some_and(|l| l >= 0 && l as u64 >= len as u64) {
        // The whole set, as `zuiInitIterator` walks it: from the tail.
        chosen.reverse();
    }
    let Some(Value::ZSet(z)) = cx.e.db(cx.db).get(&argv[1]).map(|e| &e.value) else {
        return Reply::Nil;
    };
    let members: Vec<(&[u8], f64)> = z.iter().collect();
    if count.is_none() {
        return Reply::Bulk(members[chosen[0]].0.to_vec());
    }
    let picked = chosen.into_iter().map(|i| members[i]);
    if withscores {
        Reply::Pairs(picked.map(|(m, s)| (Reply::Bulk(m.to_vec()), double(s))).collect())
    } else {
        Reply::Array(picked.map(|(m, _)| Reply::Bulk(m.to_vec())).collect())
    }
}

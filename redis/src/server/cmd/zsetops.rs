//! Sorted-set algebra (t_zset.c `zunionInterDiffGenericCommand`): ZUNION,
//! ZINTER, ZDIFF, their STORE forms, and ZINTERCARD.
//!
//! Every input may be a sorted set or a plain set (whose members score 1),
//! as `zuiInitIterator` reads both; a missing key is an empty input. The
//! result is a sorted set, so it is replied (or stored) in (score, member)
//! order whatever the inputs' order was.

use std::collections::HashMap;

use super::{is, parse_double, syntax_error, wrongtype};
use crate::reply::Reply;
use crate::server::db::{Value, ZSet};
use crate::server::zset::format_score;
use crate::server::Ctx;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// One input (`zsetopsrc`): its members with their scores in the input's
/// own order, and its weight.
struct Src {
    members: Vec<(Vec<u8>, f64)>,
    index: HashMap<Vec<u8>, f64>,
    weight: f64,
}

/// `zunionInterAggregate`: SUM turns the NaN of `inf + -inf` into 0.
fn aggregate(target: &mut f64, val: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => {
            if val < *target {
                *target = val;
            }
        }
        Aggregate::Max => {
            if val > *target {
                *target = val;
            }
        }
    }
}

/// What the command line asked for, parsed as `zunionInterDiffGenericCommand`
/// parses it (the keys are looked up between numkeys and the options, so a
/// WRONGTYPE comes before a bad option).
struct Request {
    srcs: Vec<Src>,
    how: Aggregate,
    withscores: bool,
    limit: u64,
}

/// The inputs' members: a sorted set's in its order, a set's with score 1.
fn read_sources(cx: &mut Ctx<'_>, keys: &[Vec<u8>]) -> Result<Vec<Src>, Reply> {
    let mut srcs = Vec::with_capacity(keys.len());
    for k in keys {
        let members: Vec<(Vec<u8>, f64)> = match cx.e.lookup_read(cx.db, k).map(|e| &e.value) {
            None => Vec::new(),
            Some(Value::ZSet(z)) => z.iter().map(|(m, s)| (m.to_vec(), s)).collect(),
            Some(Value::Set(s)) => s.iter().map(|m| (m.clone(), 1.0)).collect(),
            Some(_) => return Err(wrongtype()),
        };
        let index = members.iter().cloned().collect();
        srcs.push(Src {
            members,
            index,
            weight: 1.0,
        });
    }
    Ok(srcs)
}

/// `zunionInterDiffGenericCommand`'s argument handling: numkeys (at
/// `numkeys_at`), the keys, then WEIGHTS / AGGREGATE (not for ZDIFF nor
/// ZINTERCARD), WITHSCORES (only without a destination), LIMIT (only
/// ZINTERCARD).
// long: transcribes the option loop in its order, which decides the error a bad line gets
fn parse(
    cx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    numkeys_at: usize,
    op: Op,
    store: bool,
    card: bool,
) -> Result<Request, Reply> {
    let Some(setnum) = super::parse_i64(&argv[numkeys_at]) else {
        return Err(super::not_integer());
    };
    if setnum < 1 {
        return Err(Reply::error(format!(
            "ERR at least 1 input key is needed for '{}' command",
            String::from_utf8_lossy(&argv[0]).to_lowercase()
        )));
    }
    if setnum as u64 > (argv.len() - numkeys_at - 1) as u64 {
        return Err(syntax_error());
    }
    let setnum = setnum as usize;
    let mut j = numkeys_at + 1;
    let mut srcs = read_sources(cx, &argv[j..j + setnum])?;
    j += setnum;
    let (mut how, mut withscores, mut limit) = (Aggregate::Sum, false, 0u64);
    while j < argv.len() {
        let remaining = argv.len() - j;
        if op != Op::Diff && !card && remaining > setnum && is(&argv[j], "WEIGHTS") {
            j += 1;
            for src in &mut srcs {
                src.weight = parse_double(&argv[j]).ok_or_else(|| Reply::error("ERR weight value is not a float"))?;
                j += 1;
            }
        } else if op != Op::Diff && !card && remaining >= 2 && is(&argv[j], "AGGREGATE") {
            how = match &argv[j + 1] {
                a if is(a, "SUM") => Aggregate::Sum,
                a if is(a, "MIN") => Aggregate::Min,
                a if is(a, "MAX") => Aggregate::Max,
                _ => return Err(syntax_error()),
            };
            j += 2;
        } else if !store && !card && is(&argv[j], "WITHSCORES") {
            withscores = true;
            j += 1;
        } else if card && remaining >= 2 && is(&argv[j], "LIMIT") {
            limit = match super::parse_i64(&argv[j + 1]) {
                Some(n) if n >= 0 => n as u64,
                // `getPositiveLongFromObjectOrReply` with a message: also
                // for a limit that is not a number.
                _ => return Err(Reply::error("ERR LIMIT can't be negative")),
            };
            j += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok(Request {
        srcs,
        how,
        withscores,
        limit,
    })
}

/// The members of the result with their scores, in no particular order;
/// for ZINTERCARD (`limit` given) only counted, up to the limit.
fn compute(mut srcs: Vec<Src>, op: Op, how: Aggregate, card_limit: Option<u64>) -> (Vec<(Vec<u8>, f64)>, u64) {
    if op != Op::Diff {
        // `qsort` by cardinality, smallest first (glibc's is a merge sort:
        // stable, so equal sizes keep their order).
        srcs.sort_by_key(|s| s.members.len());
    }
    let mut out = Vec::new();
    let mut cardinality = 0u64;
    match op {
        Op::Inter => {
            let (first, rest) = srcs.split_first().expect("at least one input");
            for (m, s) in &first.members {
                let mut score = first.weight * s;
                if score.is_nan() {
                    score = 0.0;
                }
                let mut everywhere = true;
                for src in rest {
                    match src.index.get(m) {
                        Some(v) => aggregate(&mut score, v * src.weight, how),
                        None => {
                            everywhere = false;
                            break;
                        }
                    }
                }
                if !everywhere {
                    continue;
                }
                if let Some(limit) = card_limit {
                    cardinality += 1;
                    if limit != 0 && cardinality >= limit {
                        break;
                    }
                } else {
                    out.push((m.clone(), score));
                }
            }
        }
        Op::Union => {
            let mut acc: HashMap<Vec<u8>, usize> = HashMap::new();
            for src in &srcs {
                for (m, s) in &src.members {
                    let mut score = src.weight * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get(m) {
                        Some(&at) => aggregate(&mut out[at].1, score, how),
                        None => {
                            acc.insert(m.clone(), out.len());
                            out.push((m.clone(), score));
                        }
                    }
                }
            }
        }
        Op::Diff => {
            let (first, rest) = srcs.split_first().expect("at least one input");
            out = first
                .members
                .iter()
                .filter(|(m, _)| !rest.iter().any(|r| r.index.contains_key(m)))
                .cloned()
                .collect();
        }
    }
    (out, cardinality)
}

// long: one routine for the seven commands, as redis-server has
fn generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], dst: Option<&[u8]>, op: Op, card: bool) -> Reply {
    let numkeys_at = if dst.is_some() { 2 } else { 1 };
    let req = match parse(cx, argv, numkeys_at, op, dst.is_some(), card) {
        Ok(r) => r,
        Err(e) => return e,
    };
    if card {
        let (_, n) = compute(req.srcs, op, req.how, Some(req.limit));
        return Reply::Integer(n as i64);
    }
    let (members, _) = compute(req.srcs, op, req.how, None);
    let lim = cx.e.config.encoding_limits();
    let mut z = ZSet::default();
    for (m, s) in &members {
        z.insert(m, *s, &lim);
    }
    match dst {
        Some(dst) => {
            let n = z.len();
            if n > 0 {
                z.settle_encoding(&lim);
                cx.e.store(cx.db, dst, Value::ZSet(z), None);
                cx.e.propagate(|| argv.to_vec());
            } else if cx.e.delete(cx.db, dst) {
                cx.e.propagate(|| argv.to_vec());
            }
            Reply::Integer(n as i64)
        }
        None if req.withscores => Reply::Pairs(
            z.iter()
                .map(|(m, s)| (Reply::Bulk(m.to_vec()), Reply::Double(format_score(s))))
                .collect(),
        ),
        None => Reply::Array(z.iter().map(|(m, _)| Reply::Bulk(m.to_vec())).collect()),
    }
}

/// `ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]`
pub(crate) fn zunionstore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, Some(&argv[1]), Op::Union, false)
}

/// `ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX]`
pub(crate) fn zinterstore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, Some(&argv[1]), Op::Inter, false)
}

/// `ZDIFFSTORE destination numkeys key [key ...]`
pub(crate) fn zdiffstore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, Some(&argv[1]), Op::Diff, false)
}

/// `ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
pub(crate) fn zunion(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, None, Op::Union, false)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
pub(crate) fn zinter(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, None, Op::Inter, false)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`
pub(crate) fn zintercard(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, None, Op::Inter, true)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`
pub(crate) fn zdiff(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    generic(cx, argv, None, Op::Diff, false)
}

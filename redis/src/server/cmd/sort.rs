//! `SORT` and `SORT_RO` (sort.c `sortCommandGeneric`): the elements of a
//! list, set or sorted set, by themselves or by the keys a `BY` pattern
//! names, numerically or (`ALPHA`) by bytes, `LIMIT`ed, each replaced by
//! the `GET` patterns' values, returned or `STORE`d as a list.

use super::{is, strtod_full, syntax_error, wrongtype};
use crate::reply::Reply;
use crate::server::db::{List, Value};
use crate::server::{Ctx, Engine};

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE destination]`
pub(crate) fn sort(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    sort_generic(cx, argv, false)
}

/// `SORT_RO`: SORT without STORE.
pub(crate) fn sort_ro(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    sort_generic(cx, argv, true)
}

/// The options as `sortCommandGeneric` parses them.
#[derive(Default)]
struct Options<'a> {
    desc: bool,
    alpha: bool,
    limit: (i64, i64),
    by: Option<&'a [u8]>,
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// The option loop: a later ASC/DESC wins, LIMIT's two integers are read
/// with `getLongFromObjectOrReply`, a BY without `*` means "do not sort",
/// and BY/GET patterns are refused in cluster mode.
fn parse<'a>(e: &Engine, argv: &'a [Vec<u8>], readonly: bool) -> Result<Options<'a>, Reply> {
    let mut o = Options {
        limit: (0, -1),
        ..Options::default()
    };
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = &argv[j];
        if is(a, "asc") {
            o.desc = false;
        } else if is(a, "desc") {
            o.desc = true;
        } else if is(a, "alpha") {
            o.alpha = true;
        } else if is(a, "limit") && left >= 2 {
            let (Some(start), Some(count)) = (super::parse_i64(&argv[j + 1]), super::parse_i64(&argv[j + 2])) else {
                return Err(super::not_integer());
            };
            o.limit = (start, count);
            j += 2;
        } else if !readonly && is(a, "store") && left >= 1 {
            o.store = Some(&argv[j + 1]);
            j += 1;
        } else if is(a, "by") && left >= 1 {
            o.by = Some(&argv[j + 1]);
            o.dontsort = !argv[j + 1].contains(&b'*');
            if !o.dontsort && e.cluster.is_some() {
                return Err(Reply::error("ERR BY option of SORT denied in Cluster mode."));
            }
            j += 1;
        } else if is(a, "get") && left >= 1 {
            if e.cluster.is_some() {
                return Err(Reply::error("ERR GET option of SORT denied in Cluster mode."));
            }
            o.gets.push(&argv[j + 1]);
            j += 1;
        } else {
            return Err(syntax_error());
        }
        j += 1;
    }
    Ok(o)
}

/// `lookupKeyByPattern`: `#` is the element itself; otherwise the first
/// `*` is replaced by the element, and a `->field` after it reads that
/// field of a hash. A missing key, or one of the wrong type, is `None`.
fn lookup_by_pattern(e: &mut Engine, db: usize, pattern: &[u8], subst: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(subst.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    let field = pattern[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|i| star + 1 + i)
        .filter(|&f| f + 2 < pattern.len());
    let key_end = field.unwrap_or(pattern.len());
    let mut key = pattern[..star].to_vec();
    key.extend_from_slice(subst);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    match (&e.lookup_read(db, &key)?.value, field) {
        (Value::Hash(h), Some(f)) => h.get(&pattern[f + 2..]).cloned(),
        (Value::Str(s), None) => Some(s.clone()),
        _ => None,
    }
}

/// `strtod` as SORT reads a weight: the whole string (an empty one is 0,
/// leading blanks and C's hexadecimal integers are read), not NaN, not
/// out of range (`ERANGE`).
fn weight(b: &[u8]) -> Option<f64> {
    if b.is_empty() {
        return Some(0.0);
    }
    let trimmed = String::from_utf8_lossy(b);
    let t = trimmed.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        if !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            let v = hex.bytes().fold(0.0f64, |v, c| {
                v * 16.0 + f64::from((c as char).to_digit(16).unwrap_or(0))
            });
            return Some(if neg { -v } else { v });
        }
    }
    let v = strtod_full(b)?;
    let text = String::from_utf8_lossy(b).to_ascii_lowercase();
    let spelled_inf = text.trim().trim_start_matches(['+', '-']).starts_with("inf");
    let mantissa = text.split('e').next().unwrap_or_default();
    let erange =
        (v.is_infinite() && !spelled_inf) || (v == 0.0 && mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)));
    (!erange).then_some(v)
}

/// The elements to sort, in the value's own order: a list head first, a
/// set as SMEMBERS lists it, a sorted set by rank.
fn elements(e: &mut Engine, db: usize, key: &[u8]) -> Result<(Vec<Vec<u8>>, bool), Reply> {
    Ok(match e.lookup_read(db, key).map(|en| &en.value) {
        None => (Vec::new(), false),
        Some(Value::List(l)) => (l.into_iter().cloned().collect(), false),
        Some(Value::Set(s)) => (
            super::sets::ordered(s.iter(), s.is_intset())
                .into_iter()
                .cloned()
                .collect(),
            true,
        ),
        Some(Value::ZSet(z)) => (z.iter().map(|(m, _)| m.to_vec()).collect(), false),
        Some(_) => return Err(wrongtype()),
    })
}

// long: transcribes sortCommandGeneric's steps in its order (options, type, LIMIT clamp, weights, output)
fn sort_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], readonly: bool) -> Reply {
    let mut o = match parse(cx.e, argv, readonly) {
        Ok(o) => o,
        Err(e) => return e,
    };
    let (db, key) = (cx.db, &argv[1]);
    let (mut vector, is_set) = match elements(cx.e, db, key) {
        Ok(v) => v,
        Err(e) => return e,
    };
    // A set's order is the server's: sorted when it is stored or read
    // from a script, so replicas and replays agree.
    if o.dontsort && is_set && (o.store.is_some() || cx.e.script_depth > 0) {
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = vector.len() as i64;
    let mut start = o.limit.0.max(0).min(len);
    let count = o.limit.1.max(-1).min(len);
    let mut end = if count < 0 { len - 1 } else { start + count - 1 };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    let mut conversion_error = false;
    if o.dontsort {
        // The value's own order, DESC reversing it (a list or sorted set;
        // a set as it iterates).
        if o.desc && !is_set {
            vector.reverse();
        }
    } else {
        let mut keyed: Vec<(Vec<u8>, f64, Option<Vec<u8>>)> = Vec::with_capacity(vector.len());
        for el in vector {
            let by = match o.by {
                Some(p) => lookup_by_pattern(cx.e, db, p, &el),
                None => Some(el.clone()),
            };
            let (mut score, mut cmp) = (0.0, None);
            if let Some(by) = by {
                if o.alpha {
                    cmp = o.by.map(|_| by);
                } else {
                    match weight(&by) {
                        Some(w) => score = w,
                        None => conversion_error = true,
                    }
                }
            }
            keyed.push((el, score, cmp));
        }
        // sortCompare: numbers, ties by the elements' bytes; ALPHA by the
        // BY values (a missing one first) or by the elements.
        keyed.sort_by(|a, b| {
            let ord = if !o.alpha {
                a.1.partial_cmp(&b.1)
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.0.cmp(&b.0))
            } else if o.by.is_some() {
                a.2.cmp(&b.2)
            } else {
                a.0.cmp(&b.0)
            };
            if o.desc {
                ord.reverse()
            } else {
                ord
            }
        });
        vector = keyed.into_iter().map(|k| k.0).collect();
    }
    if conversion_error {
        return Reply::error("ERR One or more scores can't be converted into double");
    }
    let picked: &[Vec<u8>] = if end >= start {
        &vector[start as usize..=end as usize]
    } else {
        &[]
    };
    let mut out: Vec<Option<Vec<u8>>> = Vec::new();
    for el in picked {
        if o.gets.is_empty() {
            out.push(Some(el.clone()));
        }
        for p in &o.gets {
            out.push(lookup_by_pattern(cx.e, db, p, el));
        }
    }
    let Some(dst) = o.store else {
        return Reply::Array(out.into_iter().map(|v| v.map_or(Reply::Nil, Reply::Bulk)).collect());
    };
    let n = out.len() as i64;
    if n > 0 {
        let list: List = out.into_iter().map(Option::unwrap_or_default).collect();
        cx.e.store(db, dst, Value::List(list), None);
    } else {
        cx.e.delete(db, dst);
    }
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(n)
}

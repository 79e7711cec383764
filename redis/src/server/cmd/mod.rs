//! Command implementations, one module per family, each function taking the
//! whole argv (name included, arity already checked) and returning the
//! reply. The shared parsing rules live here, because redis-server applies
//! the same ones everywhere: `string2ll`'s idea of an integer, and the same
//! handful of error texts.

pub(crate) mod bzpop;
pub(crate) mod delex;
pub(crate) mod dump;
pub(crate) mod hashes;
pub(crate) mod keys;
pub(crate) mod listops;
pub(crate) mod lists;
pub(crate) mod pubsub;
pub(crate) mod scripting;
pub(crate) mod select;
pub(crate) mod server;
pub(crate) mod setops;
pub(crate) mod sets;
pub(crate) mod sort;
pub(crate) mod strings;
pub(crate) mod zsetops;
pub(crate) mod zsets;

use crate::reply::Reply;
use crate::server::db::{Collection, Value};
use crate::server::{Ctx, Engine};

pub(crate) const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
pub(crate) const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
pub(crate) const SYNTAX: &str = "ERR syntax error";
pub(crate) const OVERFLOW: &str = "ERR increment or decrement would overflow";

pub(crate) fn wrongtype() -> Reply {
    Reply::error(WRONGTYPE)
}

/// The value of a key looked up, as the collection `T`: `None` for a
/// missing key, WRONGTYPE for another type (`checkType`).
fn typed<T: Collection>(value: Option<&Value>) -> Result<Option<&T>, Reply> {
    value.map(|v| T::of(v).ok_or_else(wrongtype)).transpose()
}

/// `lookupKeyRead` then `checkType`: the key's `T` for a command that reads
/// it (keyspace hits and misses counted).
pub(crate) fn read_as<'a, T: Collection>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a T>, Reply> {
    let db = cx.db;
    typed(cx.e.lookup_read(db, key).map(|e| &e.value))
}

/// [`read_as`], then the reply made of what was found, or the WRONGTYPE
/// error.
pub(crate) fn reply_read<T: Collection>(
    cx: &mut Ctx<'_>,
    key: &[u8],
    reply: impl FnOnce(Option<&T>) -> Reply,
) -> Reply {
    read_as(cx, key).map_or_else(|e| e, reply)
}

/// HLEN, LLEN, SCARD and ZCARD: the collection's size, 0 for a missing key.
pub(crate) fn cardinality<T: Collection>(cx: &mut Ctx<'_>, argv: &[Vec<u8>], len: fn(&T) -> usize) -> Reply {
    reply_read(cx, &argv[1], |c| Reply::Integer(c.map_or(0, len) as i64))
}

/// `lookupKeyWrite` then `checkType`: the key's `T` as a write sees it (no
/// statistics), for the checks before a change.
pub(crate) fn peek_as<'a, T: Collection>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a T>, Reply> {
    let db = cx.db;
    typed(cx.e.lookup_write(db, key).map(|e| &e.value))
}

/// The key's `T` to change in place (`None` when missing), or WRONGTYPE. The
/// caller reports a change with `Engine::changed`, which also deletes an
/// emptied collection, as redis-server does.
pub(crate) fn write_as<'a, T: Collection>(
    e: &'a mut Engine,
    db: usize,
    key: &[u8],
) -> Result<Option<&'a mut T>, Reply> {
    e.value_mut(db, key)
        .map(|v| T::of_mut(v).ok_or_else(wrongtype))
        .transpose()
}

pub(crate) fn not_integer() -> Reply {
    Reply::error(NOT_INTEGER)
}

pub(crate) fn syntax_error() -> Reply {
    Reply::error(SYNTAX)
}

/// redis-server's `string2ll`: an optional `-`, then digits with no leading
/// zero (except `0` itself), nothing else — no `+`, no spaces, no `-0` — and
/// within `i64`.
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 20 {
        return None;
    }
    if b == b"0" {
        return Some(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        _ => (false, b),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parse an integer argument or produce the standard error reply.
pub(crate) fn int_arg(b: &[u8]) -> Result<i64, Reply> {
    parse_i64(b).ok_or_else(not_integer)
}

/// C's `strtod` over the whole argument (leading blanks allowed, as
/// `strtod` skips them): `None` if anything is left over or it is NaN.
/// No range check: `1e400` is infinity, as `zslParseRange` takes it.
pub(crate) fn strtod_full(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if s.is_empty() || s.contains('_') {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// `getDoubleFromObject`: the whole argument is a double, no leading
/// blank, not NaN, and not out of range (`ERANGE`: a finite-looking
/// number that overflows to infinity or underflows to zero).
pub(crate) fn parse_double(b: &[u8]) -> Option<f64> {
    if b.first().is_none_or(|c| c.is_ascii_whitespace() || *c == 0x0b) {
        return None;
    }
    let v = strtod_full(b)?;
    let text = String::from_utf8_lossy(b).to_ascii_lowercase();
    let spelled_inf = text.trim_start_matches(['+', '-']).starts_with("inf");
    if v.is_infinite() && !spelled_inf {
        return None;
    }
    let mantissa = text.split(['e']).next().unwrap_or_default();
    if v == 0.0 && mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
        return None;
    }
    Some(v)
}

/// [`parse_double`] or `ERR value is not a valid float`.
pub(crate) fn double_arg(b: &[u8]) -> Result<f64, Reply> {
    parse_double(b).ok_or_else(|| Reply::error("ERR value is not a valid float"))
}

/// ASCII case-insensitive comparison of an argument with an option name.
pub(crate) fn is(arg: &[u8], name: &str) -> bool {
    arg.eq_ignore_ascii_case(name.as_bytes())
}

/// Shorthand for building propagated argvs.
pub(crate) fn argv(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// HRANDFIELD's and ZRANDMEMBER's start: [`rand_args`], then the key's
/// collection `T`, its size with the count and the word. A missing key
/// ends the command: an empty array with a count, nil without.
pub(crate) fn rand_start<T: Collection>(
    cx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    word: &str,
    len: fn(&T) -> usize,
) -> Result<(usize, Option<i64>, bool), Reply> {
    let (count, with) = rand_args(argv, word)?;
    match read_as(cx, &argv[1])? {
        Some(c) => Ok((len(c), count, with)),
        None if count.is_some() => Err(Reply::Array(Vec::new())),
        None => Err(Reply::Nil),
    }
}

/// The arguments of `HRANDFIELD key [count [WITHVALUES]]` and `ZRANDMEMBER
/// key [count [WITHSCORES]]` (`hrandfieldCommand`, `zrandmemberCommand`,
/// alike in 7.0): the count, if any, and whether `word` follows it.
fn rand_args(argv: &[Vec<u8>], word: &str) -> Result<(Option<i64>, bool), Reply> {
    const LONG_MAX: i64 = i64::MAX;
    if argv.len() < 3 {
        return Ok((None, false));
    }
    let l = match parse_i64(&argv[2]) {
        None => return Err(not_integer()),
        Some(l) if l < -LONG_MAX => {
            return Err(Reply::error(format!(
                "ERR value is out of range, value must between {} and {LONG_MAX}",
                -LONG_MAX
            )))
        }
        Some(l) => l,
    };
    if argv.len() > 4 || (argv.len() == 4 && !is(&argv[3], word)) {
        return Err(syntax_error());
    }
    if argv.len() == 4 && !(-LONG_MAX / 2..=LONG_MAX / 2).contains(&l) {
        return Err(Reply::error("ERR value is out of range"));
    }
    Ok((Some(l), argv.len() == 4))
}

/// Which of `len` elements a random pick takes (`*RandomElement` and the
/// `…WithCountCommand` cases): one draw without a count, `|count|` draws
/// with repetition for a negative one, all for a count at least `len`,
/// else `count` distinct ones, in the collection's order. The draws come
/// from the engine's seeded generator.
pub(crate) fn rand_picks(e: &mut crate::server::Engine, len: usize, count: Option<i64>) -> Vec<usize> {
    let mut draw = |n: usize| (e.random() % n as u64) as usize;
    match count {
        None => vec![draw(len)],
        Some(l) if l < 0 => (0..l.unsigned_abs()).map(|_| draw(len)).collect(),
        Some(l) if l as u64 >= len as u64 => (0..len).collect(),
        Some(l) => {
            let mut left: Vec<usize> = (0..len).collect();
            let mut chosen: Vec<usize> = (0..l).map(|_| left.swap_remove(draw(left.len()))).collect();
            chosen.sort_unstable();
            chosen
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_i64;

    #[test]
    fn string2ll_rules() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b"9223372036854775808"[..],
            b"-0",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"1.0",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}

//! Redis 8.4's compare-and-delete family: `DELEX`, `DIGEST`, and the
//! conditions `SET` shares with them.
//!
//! Before 8.4 the only safe unlock was a Lua script that compares the value
//! with the caller's token and deletes only on a match (lesson 06). 8.4 made
//! that one command: `DELEX lock IFEQ token`. `IFDEQ`/`IFDNE` compare an
//! XXH3 digest instead of the value, for large values. These commands exist
//! only on profile 8.4; on 7.0 they are unknown, as on a real 7.0 server.

use super::strings::SetCondition;
use super::{is, syntax_error, wrongtype};
use crate::reply::Reply;
use crate::server::db::Value;
use crate::server::Ctx;

/// The digest `DIGEST` reports: XXH3-64 of the value, as 16 hex digits.
pub(crate) fn digest_of(value: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(value))
}

/// Does `current` (a key's value, `None` when missing) satisfy `cond`?
/// WRONGTYPE when the key holds something other than a string.
pub(crate) fn check_condition(current: Option<&Value>, cond: &SetCondition) -> Result<bool, Reply> {
    let value = match current {
        None => None,
        Some(Value::Str(v)) => Some(v.as_slice()),
        Some(_) => return Err(wrongtype()),
    };
    let digest_eq = |d: &[u8], v: &[u8]| digest_of(v).as_bytes().eq_ignore_ascii_case(d);
    Ok(match (cond, value) {
        (SetCondition::Always, _) => true,
        (SetCondition::Nx, v) => v.is_none(),
        (SetCondition::Xx, v) => v.is_some(),
        // IFEQ never matches a missing key, so SET … IFEQ never creates one.
        (SetCondition::IfEq(want), Some(v)) => v == want.as_slice(),
        (SetCondition::IfEq(_), None) => false,
        // IFNE: a missing key differs from any value, so SET … IFNE creates.
        (SetCondition::IfNe(want), Some(v)) => v != want.as_slice(),
        (SetCondition::IfNe(_), None) => true,
        (SetCondition::IfDeq(d), Some(v)) => digest_eq(d, v),
        (SetCondition::IfDeq(_), None) => false,
        (SetCondition::IfDne(d), Some(v)) => !digest_eq(d, v),
        (SetCondition::IfDne(_), None) => true,
    })
}

/// `DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest]`:
/// 1 if the key was deleted, 0 if it was missing or the condition failed.
/// Without a condition it is a plain `DEL` of one key.
pub(crate) fn delex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let cond = match argv.len() {
        2 => SetCondition::Always,
        4 => {
            let v = argv[3].clone();
            let opt = &argv[2];
            if is(opt, "IFEQ") {
                SetCondition::IfEq(v)
            } else if is(opt, "IFNE") {
                SetCondition::IfNe(v)
            } else if is(opt, "IFDEQ") {
                SetCondition::IfDeq(v)
            } else if is(opt, "IFDNE") {
                SetCondition::IfDne(v)
            } else {
                return syntax_error();
            }
        }
        _ => return syntax_error(),
    };
    let key = &argv[1];
    let db = cx.db;
    let Some(entry) = cx.e.lookup_write(db, key) else {
        return Reply::Integer(0);
    };
    if cond != SetCondition::Always {
        match check_condition(Some(&entry.value), &cond) {
            Ok(true) => {}
            Ok(false) => return Reply::Integer(0),
            Err(e) => return e,
        }
    }
    cx.e.delete(db, key);
    cx.e.propagate(|| super::strings::argv_del(key));
    Reply::Integer(1)
}

/// `DIGEST key`: the value's XXH3 digest as hex, nil for a missing key.
pub(crate) fn digest(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match super::strings::read_string(cx, &argv[1]) {
        Ok(Some(v)) => Reply::Bulk(digest_of(&v).into_bytes()),
        Ok(None) => Reply::Nil,
        Err(e) => e,
    }
}

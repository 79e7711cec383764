//! String commands: GET, SET and its options, SETNX, GETDEL, STRLEN and
//! the INCR family. `SET key token NX PX ttl` — the atomic lock acquire every
//! lesson starts from — lives here.

use super::{argv, int_arg, is, not_integer, parse_i64, syntax_error, wrongtype, OVERFLOW};
use crate::reply::Reply;
use crate::server::db::Value;
use crate::server::Ctx;

/// `GET key`
pub(crate) fn get(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_string(cx, &argv[1]) {
        Ok(Some(v)) => Reply::Bulk(v),
        Ok(None) => Reply::Nil,
        Err(e) => e,
    }
}

/// `getGenericCommand`'s lookup: the string value, `None` when missing, or
/// WRONGTYPE. Counts a keyspace hit or miss.
pub(crate) fn read_string(cx: &mut Ctx<'_>, key: &[u8]) -> Result<Option<Vec<u8>>, Reply> {
    match cx.e.lookup_read(cx.db, key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(v)) => Ok(Some(v.clone())),
        Some(_) => Err(wrongtype()),
    }
}

/// How SET decides whether to write, beyond NX/XX: Redis 8.4's
/// compare-and-set conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SetCondition {
    Always,
    /// NX: only if the key does not exist.
    Nx,
    /// XX: only if it exists.
    Xx,
    /// IFEQ v: only if the current value equals v (never creates the key).
    IfEq(Vec<u8>),
    /// IFNE v: only if the current value differs from v (creates the key).
    IfNe(Vec<u8>),
    /// IFDEQ digest: only if the current value's XXH3 digest matches.
    IfDeq(Vec<u8>),
    /// IFDNE digest: only if it does not match (creates the key).
    IfDne(Vec<u8>),
}

/// How SET treats the TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiry {
    /// No option: the key loses any TTL it had.
    Clear,
    KeepTtl,
    /// EX/PX: relative, in ms; EXAT/PXAT: absolute, in ms.
    Relative { ms: i64, seconds: bool },
    Absolute { ms: i64, seconds: bool },
}

/// `SET key value [NX | XX | IFEQ v | IFNE v | IFDEQ d | IFDNE d] [GET]
///  [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]`
///
/// The option parser is redis-server's `parseExtendedStringArgumentsOrReply`
/// transcribed, quirks included: the same expiry option twice is accepted
/// (the last wins), NX and XX together are a syntax error, and the expire
/// value is validated only after all options parsed.
pub(crate) fn set(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let profile = cx.e.profile();
    let mut cond = SetCondition::Always;
    let mut with_get = false;
    let mut expiry = Expiry::Clear;
    let mut expire_arg: Option<&[u8]> = None;
    let mut j = 3;
    while j < argv.len() {
        let opt = argv[j].as_slice();
        let next = argv.get(j + 1).map(Vec::as_slice);
        let has_expiry = !matches!(expiry, Expiry::Clear);
        let exp_kind = |unit_seconds: bool, absolute: bool| {
            if absolute {
                Expiry::Absolute { ms: 0, seconds: unit_seconds }
            } else {
                Expiry::Relative { ms: 0, seconds: unit_seconds }
            }
        };
        let same_expiry = |e: Expiry, seconds: bool, absolute: bool| match e {
            Expiry::Relative { seconds: s, .. } => !absolute && s == seconds,
            Expiry::Absolute { seconds: s, .. } => absolute && s == seconds,
            _ => false,
        };
        if is(opt, "NX") && matches!(cond, SetCondition::Always | SetCondition::Nx) {
            cond = SetCondition::Nx;
        } else if is(opt, "XX") && matches!(cond, SetCondition::Always | SetCondition::Xx) {
            cond = SetCondition::Xx;
        } else if is(opt, "GET") {
            with_get = true;
        } else if is(opt, "KEEPTTL") && matches!(expiry, Expiry::Clear | Expiry::KeepTtl) {
            expiry = Expiry::KeepTtl;
        } else if let (Some((seconds, absolute)), Some(value)) = (expiry_option(opt), next) {
            if has_expiry && !same_expiry(expiry, seconds, absolute) {
                return syntax_error();
            }
            expiry = exp_kind(seconds, absolute);
            expire_arg = Some(value);
            j += 1;
        } else if let (true, SetCondition::Always, Some(make), Some(value)) =
            (profile.has_8_4(), &cond, if_option(opt), next)
        {
            cond = make(value.to_vec());
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }

    // getExpireMillisecondsOrReply: parse, reject <= 0 and overflow.
    let now = cx.e.now() as i64;
    let deadline = match (expiry, expire_arg) {
        (Expiry::Relative { seconds, .. } | Expiry::Absolute { seconds, .. }, Some(raw)) => {
            let Some(mut ms) = parse_i64(raw) else { return not_integer() };
            if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
                return invalid_expire("set");
            }
            if seconds {
                ms *= 1000;
            }
            if matches!(expiry, Expiry::Relative { .. }) {
                ms = ms.wrapping_add(now);
            }
            if ms <= 0 {
                return invalid_expire("set");
            }
            Some(ms as u64)
        }
        _ => None,
    };

    let old = if with_get {
        match read_string(cx, &argv[1]) {
            Ok(v) => Some(v),
            Err(e) => return e,
        }
    } else {
        None
    };
    let get_reply = |old: Option<Option<Vec<u8>>>| match old {
        Some(Some(v)) => Reply::Bulk(v),
        _ => Reply::Nil,
    };

    let key = &argv[1];
    // Decide on a borrow of the current entry: cloning the old value just to
    // test NX would cost an allocation on the hottest path there is.
    let (proceed, keep) = {
        let current = cx.e.lookup_write(cx.db, key);
        let proceed = match &cond {
            SetCondition::Always => true,
            SetCondition::Nx => current.is_none(),
            SetCondition::Xx => current.is_some(),
            _ => match super::delex::check_condition(current.map(|c| &c.value), &cond) {
                Ok(ok) => ok,
                Err(e) => return e,
            },
        };
        let keep = match expiry {
            Expiry::KeepTtl => current.and_then(|c| c.expires_at),
            _ => None,
        };
        (proceed, keep)
    };
    if !proceed {
        return if with_get { get_reply(old) } else { Reply::Nil };
    }

    cx.e.store(cx.db, key, Value::Str(argv[2].clone()), deadline.or(keep));
    // Propagated as SET key value [PXAT ms | KEEPTTL], the way 7.0 does: a
    // replica must not restart a relative TTL from when it got the write.
    cx.e.propagate(|| {
        let mut prop = super::argv(&[b"SET", key, &argv[2]]);
        if let Some(at) = deadline {
            prop.push(b"PXAT".to_vec());
            prop.push(at.to_string().into_bytes());
        } else if expiry == Expiry::KeepTtl {
            prop.push(b"KEEPTTL".to_vec());
        }
        prop
    });
    if with_get {
        get_reply(old)
    } else {
        Reply::ok()
    }
}

fn expiry_option(opt: &[u8]) -> Option<(bool, bool)> {
    if is(opt, "EX") {
        Some((true, false))
    } else if is(opt, "PX") {
        Some((false, false))
    } else if is(opt, "EXAT") {
        Some((true, true))
    } else if is(opt, "PXAT") {
        Some((false, true))
    } else {
        None
    }
}

type CondCtor = fn(Vec<u8>) -> SetCondition;

fn if_option(opt: &[u8]) -> Option<CondCtor> {
    if is(opt, "IFEQ") {
        Some(SetCondition::IfEq)
    } else if is(opt, "IFNE") {
        Some(SetCondition::IfNe)
    } else if is(opt, "IFDEQ") {
        Some(SetCondition::IfDeq)
    } else if is(opt, "IFDNE") {
        Some(SetCondition::IfDne)
    } else {
        None
    }
}

pub(crate) fn invalid_expire(cmd: &str) -> Reply {
    Reply::error(format!("ERR invalid expire time in '{cmd}' command"))
}

/// `SETNX key value`: the historical acquire, 1 if set, 0 if not. Lesson 03
/// is about why it is not enough on its own.
pub(crate) fn setnx(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if cx.e.lookup_write(cx.db, &argv[1]).is_some() {
        return Reply::Integer(0);
    }
    cx.e.store(cx.db, &argv[1], Value::Str(argv[2].clone()), None);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `GETDEL key`: read and delete in one step. Atomic, but it deletes the
/// lock whoever owns it (lesson 10).
pub(crate) fn getdel(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_string(cx, &argv[1]) {
        Err(e) => e,
        Ok(None) => Reply::Nil,
        Ok(Some(v)) => {
            cx.e.delete(cx.db, &argv[1]);
            cx.e.propagate(|| argv_del(&argv[1]));
            Reply::Bulk(v)
        }
    }
}

pub(crate) fn argv_del(key: &[u8]) -> Vec<Vec<u8>> {
    argv(&[b"DEL", key])
}

/// `STRLEN key`
pub(crate) fn strlen(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match read_string(cx, &argv[1]) {
        Ok(v) => Reply::Integer(v.map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

/// `INCR key`
pub(crate) fn incr(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    incr_by(cx, argv, 1)
}

/// `DECR key`
pub(crate) fn decr(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    incr_by(cx, argv, -1)
}

/// `INCRBY key increment` — the increment is parsed before the key is looked
/// at, so a bad increment wins over WRONGTYPE, as in redis-server.
pub(crate) fn incrby(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match int_arg(&argv[2]) {
        Ok(n) => incr_by(cx, argv, n),
        Err(e) => e,
    }
}

/// `DECRBY key decrement`
pub(crate) fn decrby(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    match int_arg(&argv[2]) {
        Ok(i64::MIN) => Reply::error("ERR decrement would overflow"),
        Ok(n) => incr_by(cx, argv, -n),
        Err(e) => e,
    }
}

/// `incrDecrCommand`: the TTL survives (the value is overwritten in place).
/// This is the fencing-token source of lesson 22.
fn incr_by(cx: &mut Ctx<'_>, argv: &[Vec<u8>], by: i64) -> Reply {
    let key = &argv[1];
    let (old, ttl) = match cx.e.lookup_write(cx.db, key) {
        None => (0, None),
        Some(e) => match &e.value {
            Value::Str(v) => match parse_i64(v) {
                Some(n) => (n, e.expires_at),
                None => return not_integer(),
            },
            _ => return wrongtype(),
        },
    };
    let Some(new) = old.checked_add(by) else {
        return Reply::error(OVERFLOW);
    };
    cx.e.store(cx.db, key, Value::Str(new.to_string().into_bytes()), ttl);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(new)
}

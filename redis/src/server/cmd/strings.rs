//! String commands: GET, SET and its options, SETNX, SETEX, PSETEX, GETEX,
//! GETSET, GETDEL, MSET, MSETNX, MGET, APPEND, GETRANGE, SETRANGE, STRLEN and
//! the INCR family with INCRBYFLOAT. `SET key token NX PX ttl` — the atomic
//! lock acquire every lesson starts from — lives here.

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
    borrow_string(cx, key).map(|v| v.cloned())
}

/// [`read_string`] without the copy, for a command that reads only part
/// of the string (STRLEN, GETRANGE).
fn borrow_string<'a>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a Vec<u8>>, Reply> {
    match cx.e.lookup_read(cx.db, key).map(|e| &e.value) {
        None => Ok(None),
        Some(Value::Str(v)) => Ok(Some(v)),
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
    Relative {
        ms: i64,
        seconds: bool,
    },
    Absolute {
        ms: i64,
        seconds: bool,
    },
}

/// `SET key value [NX | XX | IFEQ v | IFNE v | IFDEQ d | IFDNE d] [GET]
///  [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]`
///
/// The option parser is redis-server's `parseExtendedStringArgumentsOrReply`
/// transcribed, quirks included: the same expiry option twice is accepted
/// (the last wins), NX and XX together are a syntax error, and the expire
/// value is validated only after all options parsed.
// long: transcribes setGenericCommand's option loop in its order, which decides the error a bad line gets
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
                Expiry::Absolute {
                    ms: 0,
                    seconds: unit_seconds,
                }
            } else {
                Expiry::Relative {
                    ms: 0,
                    seconds: unit_seconds,
                }
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

    let now = cx.e.now() as i64;
    let deadline = match (expiry, expire_arg) {
        (Expiry::Relative { seconds, .. } | Expiry::Absolute { seconds, .. }, Some(raw)) => {
            let relative = matches!(expiry, Expiry::Relative { .. });
            match expire_ms(raw, seconds, !relative, now, "set") {
                Ok(ms) => Some(ms as u64),
                Err(e) => return e,
            }
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
    match borrow_string(cx, &argv[1]) {
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

/// `setGenericCommand` for SETEX / PSETEX: the expire is validated the way
/// SET's is (`getExpireMillisecondsOrReply`), then the value stored with
/// its deadline; propagated as `SET key value PXAT ms`.
fn set_with_ttl(cx: &mut Ctx<'_>, argv: &[Vec<u8>], seconds: bool) -> Reply {
    let name = String::from_utf8_lossy(&argv[0]).to_lowercase();
    let Some(mut ms) = parse_i64(&argv[2]) else {
        return not_integer();
    };
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return invalid_expire(&name);
    }
    if seconds {
        ms *= 1000;
    }
    let at = ms.wrapping_add(cx.e.now() as i64);
    if at <= 0 {
        return invalid_expire(&name);
    }
    let key = &argv[1];
    cx.e.store(cx.db, key, Value::Str(argv[3].clone()), Some(at as u64));
    cx.e.propagate(|| super::argv(&[b"SET", key, &argv[3], b"PXAT", at.to_string().as_bytes()]));
    Reply::ok()
}

/// `SETEX key seconds value`
pub(crate) fn setex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    set_with_ttl(cx, argv, true)
}

/// `PSETEX key milliseconds value`
pub(crate) fn psetex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    set_with_ttl(cx, argv, false)
}

/// `GETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST]`: GET that also
/// sets or clears the TTL. `parseExtendedStringArgumentsOrReply` in its
/// COMMAND_GET mode: one option at most (the same one repeated is
/// accepted), anything else a syntax error; then the key; then the time.
pub(crate) fn getex(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let mut persist = false;
    let mut expiry: Option<((bool, bool), &[u8])> = None;
    let mut j = 2;
    while j < argv.len() {
        let opt = argv[j].as_slice();
        let next = argv.get(j + 1);
        if is(opt, "PERSIST") && expiry.is_none() {
            persist = true;
        } else if let (Some(kind), Some(v), false) = (expiry_option(opt), next, persist) {
            if expiry.is_some_and(|(k, _)| k != kind) {
                return syntax_error();
            }
            expiry = Some((kind, v));
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let key = &argv[1];
    let value = match read_string(cx, key) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Nil,
        Err(e) => return e,
    };
    let now = cx.e.now() as i64;
    if let Some(((seconds, absolute), raw)) = expiry {
        let ms = match expire_ms(raw, seconds, absolute, now, "getex") {
            Ok(ms) => ms,
            Err(e) => return e,
        };
        // checkAlreadyExpired: only an absolute time can be in the past.
        if absolute && ms <= now {
            cx.e.delete(cx.db, key);
            cx.e.propagate(|| argv_del(key));
        } else {
            cx.e.set_deadline(cx.db, key, Some(ms as u64));
            cx.e.propagate(|| super::argv(&[b"PEXPIREAT", key, ms.to_string().as_bytes()]));
        }
    } else if persist && cx.e.lookup_write(cx.db, key).is_some_and(|e| e.expires_at.is_some()) {
        cx.e.set_deadline(cx.db, key, None);
        cx.e.propagate(|| super::argv(&[b"PERSIST", key]));
    }
    Reply::Bulk(value)
}

/// `GETSET key value`: the old value (or nil); the new one replaces it
/// and any TTL (`setKey` without KEEPTTL).
pub(crate) fn getset(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let old = match read_string(cx, &argv[1]) {
        Ok(v) => v,
        Err(e) => return e,
    };
    cx.e.store(cx.db, &argv[1], Value::Str(argv[2].clone()), None);
    cx.e.propagate(|| super::argv(&[b"SET", &argv[1], &argv[2]]));
    old.map_or(Reply::Nil, Reply::Bulk)
}

/// `msetGenericCommand`: an even argv is an arity error; MSETNX writes
/// nothing if any key exists.
fn mset_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], nx: bool) -> Reply {
    if argv.len().is_multiple_of(2) {
        let name = String::from_utf8_lossy(&argv[0]).to_lowercase();
        return Reply::error(format!("ERR wrong number of arguments for '{name}' command"));
    }
    if nx && argv[1..].chunks(2).any(|p| cx.e.lookup_write(cx.db, &p[0]).is_some()) {
        return Reply::Integer(0);
    }
    for pair in argv[1..].chunks(2) {
        cx.e.store(cx.db, &pair[0], Value::Str(pair[1].clone()), None);
    }
    cx.e.propagate(|| argv.to_vec());
    if nx {
        Reply::Integer(1)
    } else {
        Reply::ok()
    }
}

/// `MSET key value [key value ...]`
pub(crate) fn mset(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    mset_generic(cx, argv, false)
}

/// `MSETNX key value [key value ...]`
pub(crate) fn msetnx(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    mset_generic(cx, argv, true)
}

/// `MGET key [key ...]`: nil for a missing key and for one of another type.
pub(crate) fn mget(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let db = cx.db;
    Reply::Array(
        argv[1..]
            .iter()
            .map(|k| match cx.e.lookup_read(db, k).map(|e| &e.value) {
                Some(Value::Str(v)) => Reply::Bulk(v.clone()),
                _ => Reply::Nil,
            })
            .collect(),
    )
}

/// `proto-max-bulk-len`: the largest string a client may build.
const PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;

fn check_string_length(size: u64, append: u64) -> Result<(), Reply> {
    if size.saturating_add(append) > PROTO_MAX_BULK_LEN {
        return Err(Reply::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// The key's string to change in place (`None` when missing), or
/// WRONGTYPE; the caller reports a change with `Engine::changed`.
fn string_mut<'a>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Result<Option<&'a mut Vec<u8>>, Reply> {
    match cx.e.value_mut(cx.db, key) {
        None => Ok(None),
        Some(Value::Str(v)) => Ok(Some(v)),
        Some(_) => Err(wrongtype()),
    }
}

/// The key's string to grow in place, created empty (no TTL) when missing.
/// The caller type-checked it with [`string_mut`].
fn string_mut_or_insert<'a>(cx: &'a mut Ctx<'_>, key: &[u8]) -> Option<&'a mut Vec<u8>> {
    match cx.e.value_mut_or_insert(cx.db, key, Value::Str(Vec::new())) {
        Value::Str(v) => Some(v),
        _ => None,
    }
}

/// `APPEND key value`: the new length.
pub(crate) fn append(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (len, existed) = match string_mut(cx, &argv[1]) {
        Ok(v) => (v.as_ref().map_or(0, |v| v.len()), v.is_some()),
        Err(e) => return e,
    };
    if let Err(e) = check_string_length(len as u64, argv[2].len() as u64) {
        return e;
    }
    let Some(v) = string_mut_or_insert(cx, &argv[1]) else {
        return wrongtype();
    };
    v.extend_from_slice(&argv[2]);
    let len = v.len() as i64;
    cx.e.changed(cx.db, &argv[1]);
    // appendCommand: a new key is the argument as SET would store it; an
    // existing one is appended to in place, which makes it raw.
    if existed {
        cx.e.set_raw(cx.db, &argv[1]);
    }
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(len)
}

/// `GETRANGE key start end`: redis-server's index arithmetic, including
/// "both negative and start > end gives an empty string".
pub(crate) fn getrange(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (mut start, mut end) = match (int_arg(&argv[2]), int_arg(&argv[3])) {
        (Ok(s), Ok(e)) => (s, e),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let s = match borrow_string(cx, &argv[1]) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Bulk(Vec::new()),
        Err(e) => return e,
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return Reply::Bulk(Vec::new());
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return Reply::Bulk(Vec::new());
    }
    Reply::Bulk(s[start as usize..=end as usize].to_vec())
}

/// `SETRANGE key offset value`: the new length; zero-padded.
pub(crate) fn setrange(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let offset = match int_arg(&argv[2]) {
        Ok(n) if n < 0 => return Reply::error("ERR offset is out of range"),
        Ok(n) => n as u64,
        Err(e) => return e,
    };
    let value = &argv[3];
    match string_mut(cx, &argv[1]) {
        Ok(None) if value.is_empty() => return Reply::Integer(0),
        Ok(Some(s)) if value.is_empty() => return Reply::Integer(s.len() as i64),
        Ok(_) => {}
        Err(e) => return e,
    }
    if let Err(e) = check_string_length(offset, value.len() as u64) {
        return e;
    }
    let Some(s) = string_mut_or_insert(cx, &argv[1]) else {
        return wrongtype();
    };
    let end = offset as usize + value.len();
    if s.len() < end {
        s.resize(end, 0);
    }
    s[offset as usize..end].copy_from_slice(value);
    let len = s.len() as i64;
    cx.e.changed(cx.db, &argv[1]);
    // setrangeCommand writes into a new raw sds, or unshares the old one.
    cx.e.set_raw(cx.db, &argv[1]);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(len)
}

/// `INCRBYFLOAT key increment`: computed in x87 long double and printed
/// with `%.17Lf` like redis-server (see `server::longdouble`); the TTL
/// survives; propagated as `SET key value KEEPTTL`.
pub(crate) fn incrbyfloat(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    use crate::server::longdouble::{LdError, LongDouble};
    const INVALID: &str = "ERR value is not a valid float";
    const NAN_INF: &str = "ERR increment would produce NaN or Infinity";
    let (value, ttl) = match cx.e.lookup_write(cx.db, &argv[1]) {
        None => (LongDouble::parse(b"0"), None),
        Some(e) => match &e.value {
            Value::Str(v) => (LongDouble::parse(v), e.expires_at),
            _ => return wrongtype(),
        },
    };
    let incr = LongDouble::parse(&argv[2]);
    let sum = match (value, incr) {
        (Err(LdError::Invalid), _) | (_, Err(LdError::Invalid)) => return Reply::error(INVALID),
        (Err(LdError::Infinite), _) | (_, Err(LdError::Infinite)) => return Reply::error(NAN_INF),
        (Ok(a), Ok(b)) => match a.add(&b) {
            Some(s) => s,
            None => return Reply::error(NAN_INF),
        },
    };
    let text = sum.to_human().into_bytes();
    cx.e.store(cx.db, &argv[1], Value::Str(text.clone()), ttl);
    cx.e.propagate(|| super::argv(&[b"SET", &argv[1], &text, b"KEEPTTL"]));
    Reply::Bulk(text)
}

/// `getExpireMillisecondsOrReply` (t_string.c): the expiry argument in
/// milliseconds since the epoch — not an integer, not positive, or
/// overflowing when made milliseconds (`seconds`) or absolute (from `now`)
/// is `command`'s "invalid expire time" error.
fn expire_ms(raw: &[u8], seconds: bool, absolute: bool, now: i64, command: &str) -> Result<i64, Reply> {
    let Some(mut ms) = parse_i64(raw) else {
        return Err(not_integer());
    };
    if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
        return Err(invalid_expire(command));
    }
    if seconds {
        ms *= 1000;
    }
    if !absolute {
        ms = ms.wrapping_add(now);
    }
    if ms <= 0 {
        return Err(invalid_expire(command));
    }
    Ok(ms)
}

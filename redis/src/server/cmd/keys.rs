//! Generic key commands: DEL, UNLINK, EXISTS, TOUCH, TYPE, the EXPIRE family,
//! TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, RENAME, RENAMENX, COPY,
//! RANDOMKEY, OBJECT, KEYS, SCAN, DBSIZE, FLUSHALL.
//!
//! The expiry commands are the heart of the renewal lessons: a lock is
//! renewed by moving its deadline (`PEXPIRE`), and a key's TTL as the server
//! reports it (`PTTL`) is the only truthful answer to "do I still hold it?".

use super::{int_arg, is, syntax_error};
use crate::reply::Reply;
use crate::server::db::Value;
use crate::server::glob::glob_match;
use crate::server::Ctx;

/// `DEL key [key ...]`: how many existed. A bare DEL does not care whose
/// lock it deletes (lesson 05).
pub(crate) fn del(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let mut n = 0;
    for key in &argv[1..] {
        if cx.e.delete(cx.db, key) {
            n += 1;
        }
    }
    if n > 0 {
        cx.e.propagate(|| argv.to_vec());
    }
    Reply::Integer(n)
}

/// `EXISTS key [key ...]`: repeated keys count repeatedly.
pub(crate) fn exists(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let n = argv[1..]
        .iter()
        .filter(|k| cx.e.lookup_read(cx.db, k).is_some())
        .count();
    Reply::Integer(n as i64)
}

/// `TYPE key`
pub(crate) fn type_(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let name =
        cx.e.lookup_read(cx.db, &argv[1])
            .map_or("none", |e| e.value.type_name());
    Reply::status(name)
}

/// `EXPIRE key seconds [NX | XX | GT | LT]`
pub(crate) fn expire(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now() as i64;
    expire_generic(cx, argv, now, true)
}

/// `PEXPIRE key milliseconds [NX | XX | GT | LT]`: the renewal primitive.
pub(crate) fn pexpire(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now() as i64;
    expire_generic(cx, argv, now, false)
}

/// `EXPIREAT key unix-seconds [NX | XX | GT | LT]`
pub(crate) fn expireat(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    expire_generic(cx, argv, 0, true)
}

/// `PEXPIREAT key unix-ms [NX | XX | GT | LT]`: what the others propagate as.
pub(crate) fn pexpireat(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    expire_generic(cx, argv, 0, false)
}

/// redis-server's `expireGenericCommand`, in its order: options first, then
/// the number, then overflow, then the key. A deadline already in the past
/// deletes the key (and is propagated as DEL).
fn expire_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], base: i64, seconds: bool) -> Reply {
    let name = String::from_utf8_lossy(&argv[0]).to_lowercase();
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in &argv[3..] {
        if is(opt, "NX") {
            nx = true;
        } else if is(opt, "XX") {
            xx = true;
        } else if is(opt, "GT") {
            gt = true;
        } else if is(opt, "LT") {
            lt = true;
        } else {
            return Reply::error(format!("ERR Unsupported option {}", String::from_utf8_lossy(opt)));
        }
    }
    if nx && (xx || gt || lt) {
        return Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if gt && lt {
        return Reply::error("ERR GT and LT options at the same time are not compatible");
    }
    let mut when = match int_arg(&argv[2]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return super::strings::invalid_expire(&name);
        }
        when *= 1000;
    }
    if when > i64::MAX - base {
        return super::strings::invalid_expire(&name);
    }
    when += base;

    let key = &argv[1];
    let Some(current) = cx.e.lookup_write(cx.db, key).map(|e| e.expires_at) else {
        return Reply::Integer(0);
    };
    let current = current.map(|c| c as i64);
    let refused = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refused {
        return Reply::Integer(0);
    }
    if when <= cx.e.now() as i64 {
        cx.e.delete(cx.db, key);
        cx.e.propagate(|| super::strings::argv_del(key));
    } else {
        cx.e.set_deadline(cx.db, key, Some(when as u64));
        cx.e.propagate(|| super::argv(&[b"PEXPIREAT", key, when.to_string().as_bytes()]));
    }
    Reply::Integer(1)
}

/// `TTL key`: seconds, rounded to nearest; -1 without TTL, -2 when missing.
pub(crate) fn ttl(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    ttl_generic(cx, &argv[1], false)
}

/// `PTTL key`: milliseconds; -1 without TTL, -2 when missing.
pub(crate) fn pttl(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    ttl_generic(cx, &argv[1], true)
}

fn ttl_generic(cx: &mut Ctx<'_>, key: &[u8], ms: bool) -> Reply {
    let now = cx.e.now();
    let Some(entry) = cx.e.lookup_read(cx.db, key) else {
        return Reply::Integer(-2);
    };
    match entry.expires_at {
        None => Reply::Integer(-1),
        Some(at) => {
            let left = at.saturating_sub(now) as i64;
            Reply::Integer(if ms { left } else { (left + 500) / 1000 })
        }
    }
}

/// `PERSIST key`: 1 if a TTL was removed.
pub(crate) fn persist(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let has_ttl =
        cx.e.lookup_write(cx.db, &argv[1])
            .is_some_and(|e| e.expires_at.is_some());
    if !has_ttl {
        return Reply::Integer(0);
    }
    cx.e.set_deadline(cx.db, &argv[1], None);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `KEYS pattern`, in key order (redis-server's order is its hash table's).
pub(crate) fn keys(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let now = cx.e.now();
    let pattern = &argv[1];
    let all = pattern.as_slice() == b"*";
    let found =
        cx.e.db(cx.db)
            .keys()
            .filter(|(_, e)| e.expires_at.is_none_or(|at| at >= now))
            .filter(|(k, _)| all || glob_match(pattern, k, false))
            .map(|(k, _)| Reply::Bulk(k.clone()))
            .collect();
    Reply::Array(found)
}

/// `parseScanCursorOrReply`: the cursor as `strtoul` reads it — an optional
/// sign, a negative one wrapping (`-1` is `ULONG_MAX`, past every key, so
/// the scan answers `0` and nothing), no digits at all reading as 0 when
/// nothing follows (`""`) — refused on a leading space, trailing bytes or
/// overflow (`ERANGE`).
fn scan_cursor(arg: &[u8]) -> Option<u64> {
    if arg.is_empty() {
        return Some(0);
    }
    if matches!(arg[0], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return None;
    }
    let (negative, digits) = match arg[0] {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = std::str::from_utf8(digits).ok()?.parse::<u64>().ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`. The cursor is a
/// position in key order; COUNT keys are examined per call, as COUNT
/// buckets are in redis-server.
pub(crate) fn scan(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let Some(cursor) = scan_cursor(&argv[1]) else {
        return Reply::error("ERR invalid cursor");
    };
    let mut count: i64 = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut i = 2;
    while i < argv.len() {
        let Some(value) = argv.get(i + 1) else {
            return syntax_error();
        };
        if is(&argv[i], "COUNT") {
            count = match int_arg(value) {
                Ok(n) if n >= 1 => n,
                Ok(_) => return syntax_error(),
                Err(e) => return e,
            };
        } else if is(&argv[i], "MATCH") {
            pattern = Some(value);
        } else if is(&argv[i], "TYPE") {
            type_name = Some(value);
        } else {
            return syntax_error();
        }
        i += 2;
    }
    let now = cx.e.now();
    let db = cx.e.db(cx.db);
    let total = db.len() as u64;
    let take = count as u64;
    let found: Vec<Reply> = db
        .keys()
        .skip(cursor.min(total) as usize)
        .take(take as usize)
        .filter(|(_, e)| e.expires_at.is_none_or(|at| at >= now))
        .filter(|(k, _)| pattern.is_none_or(|p| glob_match(p, k, false)))
        .filter(|(_, e)| type_name.is_none_or(|t| t.eq_ignore_ascii_case(e.value.type_name().as_bytes())))
        .map(|(k, _)| Reply::Bulk(k.clone()))
        .collect();
    let next = cursor.saturating_add(take);
    let next = if next >= total { 0 } else { next };
    Reply::Array(vec![Reply::Bulk(next.to_string().into_bytes()), Reply::Array(found)])
}

/// `DBSIZE`
pub(crate) fn dbsize(cx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> Reply {
    Reply::Integer(cx.e.db(cx.db).len() as i64)
}

/// `FLUSHALL [ASYNC | SYNC]`
pub(crate) fn flushall(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if argv.len() > 2 || argv.get(1).is_some_and(|a| !is(a, "SYNC") && !is(a, "ASYNC")) {
        return syntax_error();
    }
    cx.e.flush(None);
    cx.e.propagate(|| super::argv(&[b"FLUSHALL"]));
    Reply::ok()
}

/// `EXPIRETIME key`: the absolute Unix time in seconds; -1 / -2.
pub(crate) fn expiretime(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    expiretime_generic(cx, &argv[1], false)
}

/// `PEXPIRETIME key`: the absolute Unix time in milliseconds; -1 / -2.
pub(crate) fn pexpiretime(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    expiretime_generic(cx, &argv[1], true)
}

/// `ttlGenericCommand` with `output_abs`: seconds rounded to nearest.
fn expiretime_generic(cx: &mut Ctx<'_>, key: &[u8], ms: bool) -> Reply {
    let Some(entry) = cx.e.lookup_read(cx.db, key) else {
        return Reply::Integer(-2);
    };
    match entry.expires_at {
        None => Reply::Integer(-1),
        Some(at) => {
            let at = at as i64;
            Reply::Integer(if ms { at } else { (at + 500) / 1000 })
        }
    }
}

/// `UNLINK key [key ...]`: DEL (the memory is freed at once anyway).
pub(crate) fn unlink(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    del(cx, argv)
}

/// `TOUCH key [key ...]`: how many exist.
pub(crate) fn touch(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    exists(cx, argv)
}

/// `renameGenericCommand`: the value and its TTL move; RENAMENX does not
/// overwrite. The same name is a no-op on an existing key. The object
/// itself moves (`dbAdd(c->db, c->argv[2], o)` with its refcount raised):
/// nothing is copied, whatever its size.
fn rename_generic(cx: &mut Ctx<'_>, argv: &[Vec<u8>], nx: bool) -> Reply {
    let (src, dst) = (&argv[1], &argv[2]);
    if cx.e.lookup_write(cx.db, src).is_none() {
        return Reply::error("ERR no such key");
    }
    if src == dst {
        return if nx { Reply::Integer(0) } else { Reply::ok() };
    }
    if cx.e.lookup_write(cx.db, dst).is_some() {
        if nx {
            return Reply::Integer(0);
        }
        cx.e.delete(cx.db, dst);
    }
    let Some(entry) = cx.e.take(cx.db, src) else {
        return Reply::error("ERR no such key");
    };
    move_entry(cx, cx.db, dst, entry);
    cx.e.propagate(|| argv.to_vec());
    if nx {
        Reply::Integer(1)
    } else {
        Reply::ok()
    }
}

/// Store an entry taken from another key (RENAME, MOVE): its value, its
/// deadline and its encoding with it.
fn move_entry(cx: &mut Ctx<'_>, db: usize, key: &[u8], entry: crate::server::db::Entry) {
    let raw = entry.is_raw_string();
    cx.e.store(db, key, entry.value, entry.expires_at);
    if raw {
        cx.e.set_raw(db, key);
    }
}

/// A database argument (COPY's `DB`, MOVE's): `getIntFromObjectOrReply`
/// (a `long long`, then the `int` range with its own error), then
/// `selectDb`'s range.
fn db_index(arg: &[u8]) -> Result<usize, Reply> {
    let n = super::int_arg(arg)?;
    if i32::try_from(n).is_err() {
        return Err(Reply::error(
            "ERR value is out of range, value must between -2147483648 and 2147483647",
        ));
    }
    match usize::try_from(n) {
        Ok(d) if d < crate::server::DATABASES => Ok(d),
        _ => Err(Reply::error("ERR DB index is out of range")),
    }
}

/// `MOVE key db` (db.c `moveCommand`): the key, its TTL with it, goes to
/// database `db` of the same node; 0 when it is missing here or already
/// there. The object moves, as in RENAME.
pub(crate) fn move_(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if cx.e.in_cluster() {
        return Reply::error("ERR MOVE is not allowed in cluster mode");
    }
    let dst_db = match db_index(&argv[2]) {
        Ok(d) => d,
        Err(r) => return r,
    };
    if dst_db == cx.db {
        return Reply::error("ERR source and destination objects are the same");
    }
    let key = &argv[1];
    if cx.e.lookup_write(cx.db, key).is_none() || cx.e.lookup_write(dst_db, key).is_some() {
        return Reply::Integer(0);
    }
    let Some(entry) = cx.e.take(cx.db, key) else {
        return Reply::Integer(0);
    };
    move_entry(cx, dst_db, key, entry);
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `RENAME key newkey`
pub(crate) fn rename(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    rename_generic(cx, argv, false)
}

/// `RENAMENX key newkey`
pub(crate) fn renamenx(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    rename_generic(cx, argv, true)
}

/// `COPY source destination [DB db] [REPLACE]`: 1 if copied (value and
/// TTL), 0 if the source is missing or the destination exists.
pub(crate) fn copy(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let mut replace = false;
    let mut dst_db = cx.db;
    let mut j = 3;
    while j < argv.len() {
        if is(&argv[j], "REPLACE") {
            replace = true;
        } else if is(&argv[j], "DB") && j + 1 < argv.len() {
            match db_index(&argv[j + 1]) {
                Ok(d) => dst_db = d,
                Err(r) => return r,
            }
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let (src, dst) = (&argv[1], &argv[2]);
    if dst_db == cx.db && src == dst {
        return Reply::error("ERR source and destination objects are the same");
    }
    let Some(entry) = cx.e.lookup_read(cx.db, src).cloned() else {
        return Reply::Integer(0);
    };
    if cx.e.lookup_write(dst_db, dst).is_some() {
        if !replace {
            return Reply::Integer(0);
        }
        cx.e.delete(dst_db, dst);
    }
    let raw = entry.is_raw_string();
    cx.e.store(dst_db, dst, entry.value, entry.expires_at);
    // `dupStringObject` keeps a raw string raw (and an embstr embstr).
    if raw {
        cx.e.set_raw(dst_db, dst);
    }
    cx.e.propagate(|| argv.to_vec());
    Reply::Integer(1)
}

/// `RANDOMKEY` (db.c `dbRandomKey`): draw a key in `O(1)` from the
/// database's slots (`dictGetFairRandomKey`); one whose time is up is
/// expired on the spot (`expireIfNeeded`) and another drawn. On a replica,
/// which does not delete, a database of keys that all have a deadline is
/// given up on after 100 draws and the last key returned, as redis-server
/// does; a replica whose other keys are all expired is the same case.
pub(crate) fn randomkey(cx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> Reply {
    let mut tries = 100;
    loop {
        let n = cx.e.db(cx.db).slot_count(false);
        if n == 0 {
            return Reply::Nil;
        }
        let i = (cx.e.random() % n as u64) as usize;
        let key = cx.e.db(cx.db).slot_key(false, i).clone();
        if cx.e.lookup_write(cx.db, &key).is_some() {
            return Reply::Bulk(key);
        }
        // A master deleted it, so the draws end; a replica keeps it.
        if cx.e.role() != crate::server::Role::Master {
            tries -= 1;
            if tries == 0 {
                return Reply::Bulk(key);
            }
        }
    }
}

/// `OBJECT ENCODING|FREQ|REFCOUNT|HELP`. Encodings follow redis-server
/// 7.0's rules (small integer strings `int`, up to 44 bytes `embstr`;
/// lists always `quicklist`; small sets of integers `intset`; small hashes
/// and sorted sets `listpack`, converted for good when they outgrow it). A
/// string modified in place (APPEND to an existing key, SETRANGE) is
/// `raw` until a write stores a new value, as in redis-server. IDLETIME is
/// not offered: the node keeps no access times.
pub(crate) fn object(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let sub = String::from_utf8_lossy(&argv[1]).to_lowercase();
    if sub == "help" && argv.len() == 2 {
        return Reply::Array(
            [
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value",
                "    associated with a <key>.",
                "FREQ <key>",
                "    Return the access frequency index of the <key>. The returned integer is",
                "    proportional to the logarithm of the recent access frequency of the key.",
                "IDLETIME <key>",
                "    Return the idle time of the <key>, that is the approximated number of",
                "    seconds elapsed since the last access to the key.",
                "REFCOUNT <key>",
                "    Return the number of references of the value associated with the specified",
                "    <key>.",
                "HELP",
                "    Print this help.",
            ]
            .iter()
            .map(|l| Reply::status(*l))
            .collect(),
        );
    }
    if argv.len() != 3 || sub == "help" {
        return Reply::error(format!("ERR wrong number of arguments for 'object|{sub}' command"));
    }
    let Some(entry) = cx.e.lookup_write(cx.db, &argv[2]) else {
        return Reply::Nil;
    };
    match sub.as_str() {
        "encoding" if entry.is_raw_string() => Reply::Bulk(b"raw".to_vec()),
        "encoding" => Reply::Bulk(encoding(&entry.value).as_bytes().to_vec()),
        "refcount" => Reply::Integer(match &entry.value {
            // OBJ_SHARED_INTEGERS: 0..9999 are shared, refcount INT_MAX.
            Value::Str(v) if !entry.is_raw_string() && super::parse_i64(v).is_some_and(|n| (0..10000).contains(&n)) => i32::MAX as i64,
            _ => 1,
        }),
        _ => Reply::error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}

/// The encoding name `OBJECT ENCODING` reports (see [`object`]): a
/// string's from its contents, a collection's as it was written (see
/// `server::hash`, `set`, `zset`).
pub(crate) fn encoding(v: &Value) -> &'static str {
    match v {
        Value::Str(s) if s.len() <= 20 && super::parse_i64(s).is_some() => "int",
        Value::Str(s) if s.len() <= 44 => "embstr",
        Value::Str(_) => "raw",
        Value::Hash(h) if h.is_listpack() => "listpack",
        Value::Hash(_) => "hashtable",
        Value::List(_) => "quicklist",
        Value::Set(s) if s.is_intset() => "intset",
        Value::Set(_) => "hashtable",
        Value::ZSet(z) if z.is_listpack() => "listpack",
        Value::ZSet(_) => "skiplist",
    }
}

/// `MEMORY USAGE key [SAMPLES count]` (object.c `memoryCommand`): the
/// arguments are checked as redis-server checks them, a missing key is
/// nil, and the size is `objectComputeSize`'s over the encodings' real
/// layouts and jemalloc's size classes (see `server::objsize`: exact for
/// small encodings; dict-encoded values are sampled, as there).
pub(crate) fn memory(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    if is(&argv[1], "USAGE") && argv.len() < 3 {
        return Reply::error("ERR wrong number of arguments for 'memory|usage' command");
    }
    if !is(&argv[1], "USAGE") {
        return Reply::error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try MEMORY HELP.",
            String::from_utf8_lossy(&argv[1])
        ));
    }
    let mut j = 3;
    let mut samples = 5;
    while j < argv.len() {
        if is(&argv[j], "SAMPLES") && j + 1 < argv.len() {
            match super::parse_i64(&argv[j + 1]) {
                None => return super::not_integer(),
                Some(n) if n < 0 => return syntax_error(),
                Some(n) => samples = usize::try_from(n).unwrap_or(usize::MAX),
            }
            j += 2;
        } else {
            return syntax_error();
        }
    }
    if cx.e.lookup_write(cx.db, &argv[2]).is_none() {
        return Reply::Nil;
    }
    let e = &*cx.e;
    match e.dbs[cx.db].get(&argv[2]) {
        Some(entry) => Reply::Integer(crate::server::objsize::memory_usage(&argv[2], &entry.value, samples) as i64),
        None => Reply::Nil,
    }
}

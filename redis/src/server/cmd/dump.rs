//! `DUMP` and `RESTORE` (cluster.c `dumpCommand`, `restoreCommand`): a
//! value serialised in redis-server 7.0.15's payload format (see
//! `server::rdb`), so a payload moves between the simulator and a real
//! server in either direction.

use super::{is, not_integer, parse_i64, syntax_error};
use crate::reply::Reply;
use crate::server::{rdb, Ctx};

/// `DUMP key`: the payload, or nil for a missing key.
pub(crate) fn dump(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let compress = cx.e.config.rdb_compression();
    match cx.e.lookup_read(cx.db, &argv[1]) {
        None => Reply::Nil,
        Some(entry) => Reply::Bulk(rdb::seal(rdb::dump_value(&entry.value, compress))),
    }
}

/// `RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds]
/// [FREQ frequency]`, checked in `restoreCommand`'s order: options, an
/// existing key, the TTL, the footer, the body. IDLETIME and FREQ are
/// checked and then ignored: the simulator keeps no LRU or LFU data.
pub(crate) fn restore(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (false, false);
    let mut j = 4;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if is(&argv[j], "REPLACE") {
            replace = true;
        } else if is(&argv[j], "ABSTTL") {
            absttl = true;
        } else if is(&argv[j], "IDLETIME") && more && !freq {
            match parse_i64(&argv[j + 1]) {
                None => return not_integer(),
                Some(n) if n < 0 => return Reply::error("ERR Invalid IDLETIME value, must be >= 0"),
                Some(_) => idle = true,
            }
            j += 1;
        } else if is(&argv[j], "FREQ") && more && !idle {
            match parse_i64(&argv[j + 1]) {
                None => return not_integer(),
                Some(n) if !(0..=255).contains(&n) => {
                    return Reply::error("ERR Invalid FREQ value, must be >= 0 and <= 255")
                }
                Some(_) => freq = true,
            }
            j += 1;
        } else {
            return syntax_error();
        }
        j += 1;
    }
    let key = &argv[1];
    if !replace && cx.e.lookup_write(cx.db, key).is_some() {
        return Reply::error("BUSYKEY Target key name already exists.");
    }
    let ttl = match parse_i64(&argv[2]) {
        None => return not_integer(),
        Some(t) if t < 0 => return Reply::error("ERR Invalid TTL value, must be >= 0"),
        Some(t) => t,
    };
    let Some(body) = rdb::verify(&argv[3]) else {
        return Reply::error("ERR DUMP payload version or checksum are wrong");
    };
    let Some(value) = rdb::load_value(body, &cx.e.config.encoding_limits()) else {
        return Reply::error("ERR Bad data format");
    };
    let deleted = replace && cx.e.delete(cx.db, key);
    let now = cx.e.now() as i64;
    let when = if ttl != 0 && !absttl {
        ttl.saturating_add(now)
    } else {
        ttl
    };
    if when != 0 && when <= now {
        // checkAlreadyExpired: the key is gone at once (a replaced one is
        // propagated as deleted).
        if deleted {
            cx.e.propagate(|| vec![b"DEL".to_vec(), key.clone()]);
        }
        return Reply::ok();
    }
    let expires_at = (when != 0).then_some(when as u64);
    cx.e.store(cx.db, key, value, expires_at);
    cx.e.propagate(|| {
        let mut a = argv.to_vec();
        if when != 0 && !absttl {
            a[2] = when.to_string().into_bytes();
            a.push(b"ABSTTL".to_vec());
        }
        a
    });
    Reply::ok()
}

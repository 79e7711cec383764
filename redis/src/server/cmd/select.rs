//! `SELECT` as the node runs it: inside `MULTI … EXEC` (queued, then run
//! in order, so the commands queued after it use the new database) and from
//! a script. A connection's own `SELECT` outside a transaction is the
//! host's (sim-server answers it on the wire), with the same checks.

use super::parse_i64;
use crate::reply::Reply;
use crate::server::{Ctx, DATABASES};

/// db.c's `selectCommand`: `getIntFromObjectOrReply`'s two errors, the
/// cluster refusal, then `selectDb`'s range. The chosen database is left
/// in `cx.db`: the caller moves the connection (EXEC) or the rest of the
/// script (`scriptCall`; 7.0 leaves the caller's own database alone).
pub(crate) fn select(cx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> Reply {
    let Some(n) = parse_i64(&argv[1]) else {
        return super::not_integer();
    };
    if i32::try_from(n).is_err() {
        return Reply::error("ERR value is out of range, value must between -2147483648 and 2147483647");
    }
    if cx.e.cluster.is_some() && n != 0 {
        return Reply::error("ERR SELECT is not allowed in cluster mode");
    }
    match usize::try_from(n) {
        Ok(db) if db < DATABASES => {
            cx.db = db;
            Reply::ok()
        }
        _ => Reply::error("ERR DB index is out of range"),
    }
}

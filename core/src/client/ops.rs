//! The release and renewal commands the lessons compare, and why.
//!
//! Releasing a lock looks trivial — delete the key — and is where most
//! homegrown locks go wrong. The danger is always the same: by the time the
//! release reaches Redis, the lock may have expired and been acquired by
//! someone else. A release is safe only if "is this still my token?" and
//! "delete it" happen as *one* step on the server.
//!
//! | variant | atomic check? | what goes wrong |
//! |---|---|---|
//! | [`Release::Del`] | none | deletes whoever holds the lock now |
//! | [`Release::GetThenDel`] | on the client | the lock can change hands between the GET and the DEL |
//! | [`Release::Getdel`] | none (it only *returns* the old value) | deletes first, tells you afterwards |
//! | [`Release::Lua`] | yes, in a script | — (the official recipe) |
//! | [`Release::Delex`] | yes, `DELEX key IFEQ token` (Redis 8.4) | — |
//!
//! Renewal has the same shape: `PEXPIRE` alone extends whoever's lock is
//! there; a script or `SET … IFEQ` extends only your own.

use serde::{Deserialize, Serialize};

use super::{argv, Argv};
use crate::reply::Reply;

/// The compare-and-delete script from the Redis documentation, verbatim.
pub const RELEASE_LUA: &str =
    "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend";

/// Compare-and-extend: renew only a lock that is still ours.
pub const RENEW_LUA: &str = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"pexpire\",KEYS[1],ARGV[2])\nelse\n    return 0\nend";

/// How a program gives the lock back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Release {
    /// `DEL key`.
    #[serde(rename = "del")]
    Del,
    /// `GET key`, compare on the client, then `DEL key`.
    #[serde(rename = "get-del")]
    GetThenDel,
    /// `GETDEL key`.
    #[serde(rename = "getdel")]
    Getdel,
    /// `EVAL <compare-and-delete> 1 key token`.
    #[default]
    #[serde(rename = "lua")]
    Lua,
    /// `DELEX key IFEQ token` (Redis 8.4).
    #[serde(rename = "delex")]
    Delex,
    /// Never release; let the TTL do it.
    #[serde(rename = "none")]
    Keep,
}

impl Release {
    pub fn name(self) -> &'static str {
        match self {
            Release::Del => "del",
            Release::GetThenDel => "get-del",
            Release::Getdel => "getdel",
            Release::Lua => "lua",
            Release::Delex => "delex",
            Release::Keep => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Release> {
        [
            Release::Del,
            Release::GetThenDel,
            Release::Getdel,
            Release::Lua,
            Release::Delex,
            Release::Keep,
        ]
        .into_iter()
        .find(|r| r.name() == s)
    }

    /// The first (for `GetThenDel`, the only compare-free) command of the
    /// release; `None` for [`Release::Keep`].
    pub fn first_command(self, key: &str, token: &str) -> Option<Argv> {
        Some(match self {
            Release::Del => argv(&["DEL", key]),
            Release::GetThenDel => argv(&["GET", key]),
            Release::Getdel => argv(&["GETDEL", key]),
            Release::Lua => argv(&["EVAL", RELEASE_LUA, "1", key, token]),
            Release::Delex => argv(&["DELEX", key, "IFEQ", token]),
            Release::Keep => return None,
        })
    }
}

/// How a program extends its lease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Renew {
    /// `EVAL <compare-and-pexpire> 1 key token ttl` (Redisson's way).
    #[default]
    #[serde(rename = "lua")]
    Lua,
    /// `SET key token IFEQ token PX ttl` (Redis 8.4, no script needed).
    #[serde(rename = "set-ifeq")]
    SetIfeq,
    /// `PEXPIRE key ttl`: extends whoever holds the lock. Unsafe.
    #[serde(rename = "pexpire")]
    Pexpire,
}

impl Renew {
    pub fn command(self, key: &str, token: &str, ttl_ms: u64) -> Argv {
        let ttl = ttl_ms.to_string();
        match self {
            Renew::Lua => argv(&["EVAL", RENEW_LUA, "1", key, token, &ttl]),
            Renew::SetIfeq => argv(&["SET", key, token, "IFEQ", token, "PX", &ttl]),
            Renew::Pexpire => argv(&["PEXPIRE", key, &ttl]),
        }
    }

    /// Did the renewal take? (`1` from the script or PEXPIRE, `OK` from SET.)
    pub fn succeeded(reply: &Reply) -> bool {
        super::acquired(reply)
    }
}
